"""The Flask/Dash server: /healthz, the layout, and callback round trips through the test client."""

from __future__ import annotations

import json
from typing import Any

from dash import Dash

from tests.conftest import free_port
from tests.dashboard.recorded import cluster_json
from vigia.dashboard.app import create_app
from vigia.dashboard.clusters import ClusterTarget
from vigia.dashboard.config import DashboardConfig
from vigia.dashboard.data import Fetched, Plan, Unreachable, Window
from vigia.dashboard.views.capacity import CALCULATOR_FIELDS

MAIN = (
    "..page-body.children...banner.children...filter-brokers.options...filter-topics.options"
    "...filter-groups.options...status-line.children.."
)


class FakeSources:
    """Recorded exporter JSON, no Prometheus data, one alert; counts the plans it served."""

    def __init__(self, scenario: str = "healthy") -> None:
        self.scenario = scenario
        self.plans: list[Plan] = []

    def fetch(self, plan: Plan, window: Window) -> Fetched:
        self.plans.append(plan)
        return Fetched(
            cluster=self.cluster(),
            alerts=[{"labels": {"alertname": "KafkaBrokerDown", "severity": "critical"}}],
            instant={name: [] for name in plan.instant},
            ranged={name: [] for name in plan.ranged},
        )

    def cluster(self) -> dict[str, Any]:
        return cluster_json(self.scenario)

    def instant(self, promql: str) -> list[Any]:
        return []

    def scoped(self, target: ClusterTarget) -> FakeSources:
        self.target = target
        return self


def call(
    app: Dash, output: str, inputs: list[dict[str, Any]], state: list[Any] | None = None
) -> Any:
    client = app.server.test_client()
    outputs = [
        {"id": part.split(".")[0], "property": part.split(".")[1]}
        for part in output.strip(".").split("...")
    ]
    body = {
        "output": output,
        "outputs": outputs if output.startswith("..") else outputs[0],
        "inputs": inputs,
        "changedPropIds": [f"{i['id']}.{i['property']}" for i in inputs[:1]],
        "state": state or [],
    }
    response = client.post("/_dash-update-component", json=body)
    assert response.status_code == 200, response.data[:500]
    return json.loads(response.data)["response"]


def refresh_inputs(path: str, cluster: str | None = None) -> list[dict[str, Any]]:
    return [
        {"id": "url", "property": "pathname", "value": path},
        {"id": "tick", "property": "n_intervals", "value": 3},
        {"id": "range", "property": "value", "value": "1h"},
        {"id": "filters", "property": "data", "value": {"brokers": [], "topics": [], "groups": []}},
        {"id": "cluster", "property": "value", "value": cluster},
    ]


def test_healthz_and_index() -> None:
    app = create_app(DashboardConfig(), FakeSources())
    client = app.server.test_client()
    health = client.get("/healthz")
    assert (health.status_code, health.json) == (200, {"status": "ok"})
    index = client.get("/")
    assert index.status_code == 200 and b"<title>V" in index.data
    layout = client.get("/_dash-layout").json
    assert "tick" in json.dumps(layout)
    assert '"interval": 15000' in json.dumps(layout)


def test_refresh_round_trip_brokers_page() -> None:
    fake = FakeSources()
    app = create_app(DashboardConfig(refresh_interval=30), fake)
    response = call(app, MAIN, refresh_inputs("/brokers"))
    page = json.dumps(response["page-body"]["children"])
    assert '"brokers-table"' in page
    assert response["banner"]["children"] == []
    assert [o["value"] for o in response["filter-brokers"]["options"]] == ["1", "2", "3"]
    assert "measure" in response["filter-topics"]["options"]
    assert response["status-line"]["children"].startswith("1 alert firing · updated ")
    assert fake.plans[-1].cluster and fake.plans[-1].alerts and "cpu" in fake.plans[-1].ranged


def test_refresh_with_every_backend_down_shows_banners_not_errors() -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    config = DashboardConfig(
        prometheus_url=closed, exporter_url=closed, alertmanager_url=closed, backend_timeout=1
    )
    app = create_app(config)
    for path in ("/", "/brokers", "/topics", "/replication", "/consumers", "/ingest", "/capacity"):
        response = call(app, MAIN, refresh_inputs(path))
        banner = json.dumps(response["banner"]["children"])
        for backend in ("banner-prometheus", "banner-exporter", "banner-alertmanager"):
            assert backend in banner, (path, banner)
        assert "filter-brokers" not in response  # options keep their last value
        assert "could not be drawn" not in json.dumps(response["page-body"])


def test_unknown_page_and_broken_exporter_json() -> None:
    class Broken(FakeSources):
        def cluster(self) -> dict[str, Any]:
            return {"brokers": [{"no-id": 1}]}

    app = create_app(DashboardConfig(), Broken())
    response = call(app, MAIN, refresh_inputs("/nowhere"))
    assert "No page at /nowhere." in json.dumps(response["page-body"])
    response = call(app, MAIN, refresh_inputs("/brokers"))
    assert "unexpected JSON" in json.dumps(response["banner"])


def test_capacity_calculator_round_trip() -> None:
    app = create_app(DashboardConfig(), FakeSources("healthy"))
    extra = call(
        app,
        "page-extra.children",
        [
            {"id": "url", "property": "pathname", "value": "/capacity"},
            {"id": "cluster", "property": "value", "value": None},
        ],
        [{"id": "filters", "property": "data", "value": None}],
    )
    form = json.dumps(extra)
    assert '"sizing-topic"' in form and '"measure"' in form
    prefill = call(
        app,
        "..sizing-" + "...sizing-".join(f"{f}.value" for f, *_ in CALCULATOR_FIELDS) + "..",
        [{"id": "sizing-topic", "property": "value", "value": "measure"}],
        [{"id": "cluster", "property": "value", "value": None}],
    )
    values = [prefill[f"sizing-{f}"]["value"] for f, *_ in CALCULATOR_FIELDS]
    assert values[4] == 3  # replication factor of measure
    result = call(
        app,
        "sizing-result.children",
        [
            {"id": f"sizing-{f}", "property": "value", "value": v}
            for (f, *_), v in zip(CALCULATOR_FIELDS, values, strict=True)
        ],
    )
    text = json.dumps(result)
    # healthy is the first collection (no rates yet) and this fake has no Prometheus data:
    # 1,000 msg/s and 5,000 per consumer are the assumed defaults → 1 partition, RF 3 → 3 brokers
    assert '"children": "1", "id": "sizing-partitions"' in text
    assert '"children": "3", "id": "sizing-brokers"' in text


def test_unreachable_marker_text() -> None:
    assert str(Unreachable("Prometheus", "timed out")) == "unreachable: Prometheus (timed out)"
