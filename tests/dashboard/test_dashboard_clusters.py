"""More than one cluster: the setting, the choice kept in `?cluster=`, queries and alerts kept to
the chosen cluster, and each cluster's own exporter."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from dash import Dash

from tests.dashboard.test_dashboard_app import MAIN, FakeSources, call, refresh_inputs
from vigia.dashboard.app import create_app
from vigia.dashboard.clusters import (
    DEFAULT_CLUSTER,
    ClustersError,
    ClusterTarget,
    alerts_for,
    misnamed,
    parse_clusters,
    pick,
    requested,
    sync,
    with_choice,
)
from vigia.dashboard.config import ConfigError, DashboardConfig, load_config
from vigia.dashboard.pages import PAGES, window_for
from vigia.dashboard.promql_scope import with_cluster
from vigia.dashboard.sources import Sources
from vigia.dashboard.views import capacity
from vigia.dashboard.views.common import Filters

PROD = ClusterTarget("prod", "http://prod:9308")
DR = ClusterTarget("dr", "http://dr:9308")


def test_the_setting_names_clusters_in_order() -> None:
    assert parse_clusters(["prod=http://prod:9308/, dr = https://dr:9308"]) == (
        PROD,
        ClusterTarget("dr", "https://dr:9308"),
    )
    assert parse_clusters(["prod=http://prod:9308", "dr=http://dr:9308"]) == (PROD, DR)
    assert parse_clusters([""]) == ()


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ("prod", "is not NAME=URL"),
        ("=http://x", "is not NAME=URL"),
        ("prod=", "is not NAME=URL"),
        ("pr od=http://x", "letters, digits"),
        ("prod=ftp://x", r"is not an http\(s\) URL"),
        ("prod=http://a,prod=http://b", "named twice"),
    ],
)
def test_a_bad_setting_says_why(entry: str, error: str) -> None:
    with pytest.raises(ClustersError, match=error):
        parse_clusters([entry])


def test_flags_environment_and_the_one_cluster_case() -> None:
    one = load_config([], {})
    assert one.targets == (ClusterTarget(DEFAULT_CLUSTER, "http://127.0.0.1:9308", False),)
    env = {"VIGIA_DASHBOARD_CLUSTERS": "prod=http://prod:9308,dr=http://dr:9308"}
    assert load_config([], env).targets == (PROD, DR)
    flagged = load_config(["--cluster", "dr=http://dr:9308"], env)
    assert flagged.targets == (DR,)
    with pytest.raises(ConfigError, match="one or the other"):
        load_config(["--exporter-url", "http://x:9308"], env)
    with pytest.raises(ConfigError, match="is not NAME=URL"):
        load_config(["--cluster", "prod"], {})


def test_the_query_string_chooses_and_is_kept_right() -> None:
    both = (PROD, DR)
    assert requested("?cluster=dr&x=1") == "dr" and requested("") is None
    assert pick(both, "dr") == DR and pick(both, "nowhere") == PROD and pick(both, None) == PROD
    assert sync(both, "?cluster=dr") == (DR, None)
    assert sync(both, "") == (PROD, "?cluster=prod")
    assert sync(both, "?cluster=gone&x=1") == (PROD, "?x=1&cluster=prod")
    assert sync((PROD,), "") == (PROD, None)
    assert with_choice("?x=1&cluster=prod", "dr") == "?x=1&cluster=dr"


def test_alerts_of_the_cluster_and_of_none() -> None:
    alerts = [
        {"labels": {"alertname": "A", "cluster": "prod"}},
        {"labels": {"alertname": "B", "cluster": "dr"}},
        {"labels": {"alertname": "C"}},
    ]
    assert [a["labels"]["alertname"] for a in alerts_for(alerts, PROD)] == ["A", "C"]
    assert [a["labels"]["alertname"] for a in alerts_for(alerts, DR)] == ["B", "C"]
    unlabelled = ClusterTarget(DEFAULT_CLUSTER, "http://x", False)
    assert alerts_for(alerts, unlabelled) == alerts


@pytest.mark.parametrize(
    ("query", "scoped"),
    [
        ("up", 'up{cluster="p"}'),
        ('up{job="x"}', 'up{cluster="p",job="x"}'),
        ("up{}", 'up{cluster="p"}'),
        ('{__name__=~"kafka_.*"}', '{cluster="p",__name__=~"kafka_.*"}'),
        (
            "sum by (topic) (rate(x_total[5m])) / ignoring (a) group_left y",
            'sum by (topic) (rate(x_total{cluster="p"}[5m])) / ignoring (a) group_left '
            'y{cluster="p"}',
        ),
        (
            "sum(x) without (broker) > bool 1 and on(job) z offset 5m",
            'sum(x{cluster="p"}) without (broker) > bool 1 and on(job) z{cluster="p"} offset 5m',
        ),
        (
            'label_replace(a{b="sum(c)"}, "d", "$1", "e", "(.*)") or vector(0)',
            'label_replace(a{cluster="p",b="sum(c)"}, "d", "$1", "e", "(.*)") or vector(0)',
        ),
        ("max_over_time(x[1h:5m]) - time()", 'max_over_time(x{cluster="p"}[1h:5m]) - time()'),
        ("topk(8, job:x:rate5m) * Inf", 'topk(8, job:x:rate5m{cluster="p"}) * Inf'),
    ],
)
def test_every_selector_keeps_to_the_cluster(query: str, scoped: str) -> None:
    assert with_cluster(query, "p") == scoped


def _page_queries() -> set[str]:
    window = window_for("1h", 1_700_000_000)
    queries: set[str] = set(capacity.live_queries("measure").values())
    for filters in (Filters(), Filters(brokers=("1",), topics=("measure",), groups=("g",))):
        for page in PAGES:
            plan = page.plan(filters, window)
            queries |= {*plan.instant.values(), *plan.ranged.values()}
    return queries


def test_every_query_the_pages_send_stays_valid_promql_when_scoped(tmp_path: Path) -> None:
    """promtool parses each page's query, scoped, as a recording rule's expression."""
    queries = sorted(_page_queries())
    assert len(queries) > 50
    rules = [
        {"record": f"scoped:query{i}", "expr": with_cluster(q, "prod")}
        for i, q in enumerate(queries)
    ]
    for rule, query in zip(rules, queries, strict=True):
        assert rule["expr"].count('cluster="prod"') >= 1 or "(" in query, query
    path = tmp_path / "scoped.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "scoped", "rules": rules}]}))
    done = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_sources_ask_the_chosen_clusters_exporter_and_keep_to_its_series() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.url.host}{request.url.path} {request.url.params.get('query', '')}")
        if request.url.path == "/api/v2/alerts":
            return httpx.Response(
                200, json=[{"labels": {"cluster": "prod"}}, {"labels": {"cluster": "dr"}}]
            )
        if request.url.path == "/api/v1/cluster":
            return httpx.Response(200, json={"brokers": [], "cluster": {"cluster_id": "x"}})
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
        )

    config = DashboardConfig(clusters=(PROD, DR))
    client = httpx.Client(transport=httpx.MockTransport(handler), timeout=1)
    dr = Sources(config, client=client).scoped(DR)
    assert dr.cluster() == {"brokers": [], "cluster": {"cluster_id": "x"}}
    assert dr.alerts() == [{"labels": {"cluster": "dr"}}]
    assert dr.instant("sum(kafka_brokers)") == []
    assert seen[0] == "dr/api/v1/cluster " and seen[2].endswith('sum(kafka_brokers{cluster="dr"})')
    one = Sources(DashboardConfig(), client=client)
    assert one.instant("sum(kafka_brokers)") == [] and seen[-1].endswith("sum(kafka_brokers)")


def test_the_app_refreshes_the_chosen_cluster_and_keeps_it_in_the_url() -> None:
    fake = FakeSources()
    app = create_app(DashboardConfig(clusters=(PROD, DR)), fake)
    layout = json.dumps(app.server.test_client().get("/_dash-layout").json)
    assert '"id": "cluster"' in layout and '"options": ["prod", "dr"]' in layout
    call(app, MAIN, refresh_inputs("/topics", "dr"))
    assert fake.target == DR
    assert choose(app, "?cluster=dr", "prod", "url.search") == {"cluster": {"value": "dr"}}
    assert choose(app, "?cluster=prod", "dr", "cluster.value") == {"url": {"search": "?cluster=dr"}}
    assert choose(app, "", "prod", "url.search") == {"url": {"search": "?cluster=prod"}}


def choose(app: Dash, search: str, chosen: str, changed: str) -> Any:
    body = {
        "output": "..url.search...cluster.value..",
        "outputs": [
            {"id": "url", "property": "search"},
            {"id": "cluster", "property": "value"},
        ],
        "inputs": [
            {"id": "url", "property": "search", "value": search},
            {"id": "cluster", "property": "value", "value": chosen},
        ],
        "changedPropIds": [changed],
        "state": [],
    }
    response = app.server.test_client().post("/_dash-update-component", json=body)
    if response.status_code == 204:  # nothing to update
        return {}
    assert response.status_code == 200, response.data[:500]
    return json.loads(response.data)["response"]


def test_an_exporter_that_watches_another_cluster_is_named_in_a_banner() -> None:
    assert misnamed(PROD, "prod") is None and misnamed(PROD, None) is None
    assert misnamed(ClusterTarget(DEFAULT_CLUSTER, "http://x", False), "dr") is None
    assert "watches cluster 'dr', not 'prod'" in (misnamed(PROD, "dr") or "")

    class Named(FakeSources):
        def cluster(self) -> dict[str, Any]:
            document = super().cluster()
            document["cluster"] = {**document["cluster"], "name": "dr"}
            return document

    app = create_app(DashboardConfig(clusters=(PROD, DR)), Named())
    wrong = json.dumps(call(app, MAIN, refresh_inputs("/", "prod"))["banner"])
    assert "banner-cluster" in wrong and "watches cluster 'dr', not 'prod'" in wrong
    right = json.dumps(call(app, MAIN, refresh_inputs("/", "dr"))["banner"])
    assert "banner-cluster" not in right
