"""Pure builders on recorded API responses: the exporter's JSON as `replay()` builds it from the
shared Kafka 4.0 recordings, and real Prometheus answers recorded by record_prometheus.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import pytest
from dash import dcc

from tests.dashboard.recorded import cluster_json
from vigia.dashboard.cluster import Cluster, parse_cluster
from vigia.dashboard.data import (
    Fetched,
    Sample,
    Series,
    Unreachable,
    Window,
    parse_matrix,
    parse_vector,
)
from vigia.dashboard.pages import PAGE_BY_PATH, PAGES
from vigia.dashboard.views import (
    brokers,
    capacity,
    consumers,
    ingest,
    overview,
    replication,
    topics,
)
from vigia.dashboard.views.common import Filters, PageContext

RECORDED = Path(__file__).parent / "data" / "prometheus.json"


def cluster(scenario: str) -> Cluster:
    return parse_cluster(cluster_json(scenario))


@cache
def _recorded() -> dict[str, Any]:
    return dict(json.loads(RECORDED.read_text(encoding="utf-8")))


def recorded_context(
    path: str, scenario: str = "rebalanced", filters: Filters | None = None
) -> PageContext:
    """The page's context from recorded Prometheus answers; `rebalanced` is the state Prometheus
    ends in, so it is the topology an exporter would serve at the recorded window's end."""
    data = _recorded()
    w = data["window"]
    window = Window(w["start"], w["end"], w["step"])
    prefix = f"{path} "
    fetched = Fetched(
        cluster=cluster_json(scenario, collected_at=window.end - 5),
        alerts=[],
        instant={
            k.removeprefix(prefix): parse_vector(v["response"])
            for k, v in data["instant"].items()
            if k.startswith(prefix)
        },
        ranged={
            k.removeprefix(prefix): parse_matrix(v["response"])
            for k, v in data["ranged"].items()
            if k.startswith(prefix)
        },
    )
    return PageContext(
        fetched, window, window.end, filters or Filters(), parse_cluster(fetched.cluster)
    )  # type: ignore[arg-type]


def figures(tree: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (graph id, figure) in a component tree."""
    if isinstance(tree, list | tuple):
        for item in tree:
            yield from figures(item)
        return
    if isinstance(tree, dcc.Graph):
        yield tree.id, tree.figure
    children = getattr(tree, "children", None)
    if children is not None and not isinstance(children, str):
        yield from figures(children)


def figure(tree: Any, graph_id: str) -> dict[str, Any]:
    return dict(figures(tree))[graph_id]


def traces_by_name(fig: dict[str, Any]) -> dict[str, list[float | None]]:
    return {t["name"]: t["y"] for t in fig["data"]}


def texts(tree: Any) -> Iterator[str]:
    if isinstance(tree, str):
        yield tree
    elif isinstance(tree, list | tuple):
        for item in tree:
            yield from texts(item)
    elif hasattr(tree, "children"):
        yield from texts(tree.children)


def find(tree: Any, component_id: Any) -> Any:
    if getattr(tree, "id", None) == component_id:
        return tree
    children = tree if isinstance(tree, list | tuple) else getattr(tree, "children", None)
    if children is None or isinstance(children, str):
        return None
    for child in children if isinstance(children, list | tuple) else [children]:
        found = find(child, component_id)
        if found is not None:
            return found
    return None


def grid_rows(tree: Any, name: str) -> list[dict[str, Any]]:
    grid = find(tree, {"type": "grid", "name": name})
    assert grid is not None, f"no grid {name}"
    return list(grid.rowData)


def table_rows(tree: Any, table_id: str) -> list[list[str]]:
    table = find(tree, table_id)
    assert table is not None, f"no {table_id}"
    body = table.children[1]
    return [[cell.children for cell in row.children] for row in body.children]


# ------------------------------------------------------------------ brokers


def test_leaders_and_followers_per_broker_across_the_scenarios() -> None:
    def counts(scenario: str) -> list[tuple[int, bool, int, int]]:
        return [
            (r.id, r.up, r.leaders, r.followers) for r in brokers.broker_rows(cluster(scenario))
        ]

    assert counts("healthy") == [(1, True, 23, 44), (2, True, 22, 45), (3, True, 23, 44)]
    assert counts("broker-down") == [(1, False, 0, 0), (2, True, 35, 32), (3, True, 33, 34)]
    assert counts("broker-back-imbalanced") == [
        (1, True, 0, 67),
        (2, True, 35, 32),
        (3, True, 33, 34),
    ]
    assert counts("rebalanced") == counts("healthy")


def test_preferred_leaders_and_skew() -> None:
    imbalanced = brokers.broker_rows(cluster("broker-back-imbalanced"))
    assert [(r.preferred, r.not_on_preferred) for r in imbalanced] == [(23, 23), (22, 0), (23, 0)]
    assert [round(r.leader_skew, 2) for r in imbalanced] == [-22.67, 12.33, 10.33]
    balance = brokers.leader_balance(imbalanced)
    assert balance.max_deviation == pytest.approx(68 / 3)
    assert balance.skew_ratio == pytest.approx(35 / (68 / 3) - 1)
    healthy = brokers.leader_balance(brokers.broker_rows(cluster("healthy")))
    assert healthy.max_deviation == pytest.approx(2 / 3)


def test_brokers_page_table_disk_and_jmx_charts() -> None:
    page = brokers.build(recorded_context("/brokers", "healthy"))
    rows = table_rows(page, "brokers-table")
    assert [r[3] for r in rows] == ["23", "22", "23"]
    assert rows[1][0] == "2 ★"  # the KRaft quorum leader
    dirs = table_rows(page, "log-dirs-table")
    assert [r[2] for r in dirs] == ["32.6 MB", "32.6 MB", "32.6 MB"]
    cpu = traces_by_name(figure(page, "fig-brokers-cpu"))
    assert sorted(cpu) == ["broker 1", "broker 2", "broker 3"]
    assert all(v is None or 0 <= v < 2 for values in cpu.values() for v in values)
    leaders = traces_by_name(figure(page, "fig-brokers-leaders-history"))
    # broker 1 led nothing while it was down and right after it came back
    assert 0 in leaders["broker 1"] and 23 in leaders["broker 1"]
    assert max(v for v in leaders["broker 2"] if v is not None) == 35
    memory = figure(page, "fig-brokers-memory")
    assert len(memory["data"]) == 6  # RSS and heap for each broker


def test_down_broker_is_listed_as_down_without_log_dirs() -> None:
    rows = brokers.log_dir_rows(cluster("broker-down"), Filters())
    assert rows[0].broker == 1 and rows[0].error == "broker down"  # not asked: it is gone
    assert [r.kafka_bytes for r in rows[1:]] == [46304974, 46305348]


def _lacking(scenario: str, *capabilities: str) -> Cluster:
    raw = cluster_json(scenario)
    raw["capabilities"] = {**raw["capabilities"], **dict.fromkeys(capabilities, False)}
    for b in raw["brokers"]:
        if "describe_log_dirs" in capabilities:
            b["log_dirs"] = None
    return parse_cluster(raw)


def test_a_cluster_without_some_apis_says_not_available_where_their_data_would_be() -> None:
    lacking = _lacking(
        "healthy", "describe_log_dirs", "describe_configs", "list_groups", "describe_groups"
    )
    rows = brokers.log_dir_rows(lacking, Filters())
    assert [r.error for r in rows] == ["not available on this cluster (DescribeLogDirs)"] * 3
    volumes = brokers.volume_figure(rows)
    assert "not available on this cluster" in json.dumps(volumes)
    (line,) = brokers.disk_section(lacking, Filters())
    assert line.children.startswith("not available on this cluster (DescribeLogDirs): each log")
    assert "not available on this cluster" in json.dumps(topics.treemap_figure((), True))
    unknown = tuple(replace(t, min_insync_replicas=None) for t in lacking.topics)
    lacking = replace(lacking, topics=unknown)  # without DescribeConfigs, no topic's is known
    light = next(x for x in overview.cluster_lights(lacking) if x.key == "under_min_isr")
    assert (light.status, light.value) == ("grey", "n/a")
    assert light.detail.startswith("not available on this cluster (DescribeConfigs")
    # The exporter's --assumed-topic-config gives every topic its min.insync.replicas.
    assumed = replace(
        lacking, topics=tuple(replace(t, min_insync_replicas=1) for t in lacking.topics)
    )
    light = next(x for x in overview.cluster_lights(assumed) if x.key == "under_min_isr")
    assert (light.status, light.value) == ("green", "0")
    # No quorum to ask and no controller in the metadata (the mock): unknown, not missing.
    nameless = replace(_lacking("healthy", "describe_quorum"), controller_id=None)
    light = next(x for x in overview.cluster_lights(nameless) if x.key == "controller")
    assert (light.status, light.value) == ("grey", "n/a")
    assert light.detail == "not available on this cluster (DescribeQuorum)"
    able = replace(nameless, capabilities={**nameless.capabilities, "describe_quorum": True})
    light = next(x for x in overview.cluster_lights(able) if x.key == "controller")
    assert (light.status, light.value) == ("red", "none")
    groups_page = " ".join(texts(consumers._tables(replace(lacking, groups=()), Filters())))
    assert "Consumer groups: not available on this cluster (ListGroups)" in groups_page
    assert "State and members: not available on this cluster (DescribeGroups)" in groups_page
    # Members unknown (no DescribeGroups, the demo's mock): "?", not 0 members.
    raw = cluster_json("healthy")
    for group in raw["groups"]:
        group["members"] = None
    rows = " ".join(texts(consumers._tables(parse_cluster(raw), Filters())))
    assert " ? " in f" {rows} " and parse_cluster(raw).groups[0].member_count is None
    # A cluster that answers everything shows none of it.
    healthy = cluster("healthy")
    assert all(r.error is None for r in brokers.log_dir_rows(healthy, Filters()))
    assert "not available" not in " ".join(texts(consumers._tables(healthy, Filters())))


# ------------------------------------------------------------------ overview


def light_values(c: Cluster) -> dict[str, tuple[str, str]]:
    return {light.key: (light.status, light.value) for light in overview.cluster_lights(c)}


def test_overview_lights_healthy_and_broker_down() -> None:
    assert light_values(cluster("healthy")) == {
        "brokers": ("green", "3 / 3"),
        "controller": ("green", "broker 2"),
        "offline": ("green", "0"),
        "under_min_isr": ("green", "0"),
        "urp": ("green", "0"),
        "preferred": ("green", "0"),
    }
    down = light_values(cluster("broker-down"))
    assert down["brokers"] == ("red", "2 / 3")
    assert down["urp"] == ("amber", "67")
    assert down["under_min_isr"] == ("red", "2")
    assert down["offline"] == ("green", "0")
    assert light_values(cluster("broker-back-imbalanced"))["preferred"] == ("amber", "23")
    details = {light.key: light.detail for light in overview.cluster_lights(cluster("broker-down"))}
    assert details["under_min_isr"] == "events-1, events-2"


def test_exporter_and_alert_lights() -> None:
    down = cluster("broker-down")
    light = overview.exporter_light(down, 0.0, now=down.collected_at + 10)  # type: ignore[operator]
    assert (light.status, light.value) == ("green", "up")  # a broker down is no exporter failure
    stale = overview.exporter_light(
        cluster("healthy"), 1.0, now=cluster("healthy").collected_at + 600
    )  # type: ignore[operator]
    assert (stale.status, stale.value) == ("amber", "stale")
    gone = overview.exporter_light(Unreachable("exporter", "connection refused"), 1.0, 0)
    assert (gone.status, gone.value) == ("red", "unreachable")
    alerts = [{"labels": {"severity": "critical"}}, {"labels": {"severity": "warning"}}]
    assert overview.alerts_light(alerts).status == "red"
    assert overview.alerts_light(alerts[1:]).status == "amber"
    assert overview.alerts_light([]).status == "green"
    assert overview.alerts_light(Unreachable("Alertmanager", "timed out")).status == "grey"


def test_ingest_lights_thresholds_and_no_data() -> None:
    fresh, backlog = overview.ingest_lights(60, 20, 10, 1500)
    assert (fresh.status, fresh.value, backlog.status, backlog.value) == (
        "green",
        "60 s",
        "green",
        "10 s",
    )
    assert backlog.detail == "1,500 messages behind"
    stale, slow = overview.ingest_lights(3 * 3600, None, 600, None)
    assert (stale.status, slow.status) == ("red", "amber")
    none, lag_only = overview.ingest_lights(None, None, None, 104555)
    assert (none.status, none.value) == ("grey", "no data")
    assert (lag_only.status, lag_only.value) == ("grey", "104,555 msgs")
    assert lag_only.detail == "messages behind; no lag in seconds for this cluster"


def test_overview_page_backlog_from_the_ingest_group() -> None:
    page = overview.build(recorded_context("/"))
    lag = traces_by_name(figure(page, "fig-overview-ingest-lag"))["vigia-ingest"]
    # vigia-ingest lag over the recordings: 104,555 → 295,914 messages
    assert min(v for v in lag if v is not None) == 104555
    assert max(v for v in lag if v is not None) == 295914


# ------------------------------------------------------------------ topics


def test_leader_matrix_topic_by_broker() -> None:
    names, _, z = topics.leader_matrix(cluster("healthy").topics, [1, 2, 3])
    matrix = dict(zip(names, z, strict=True))
    assert matrix["measure"] == [2, 2, 2]
    assert matrix["__consumer_offsets"] == [17, 16, 17]
    names, _, z = topics.leader_matrix(cluster("broker-down").topics, [1, 2, 3])
    matrix = dict(zip(names, z, strict=True))
    assert matrix["measure"] == [0, 3, 3]
    assert [sum(col) for col in zip(*z, strict=True)] == [0, 35, 33]


def test_partition_table_rows_flags_and_order() -> None:
    c = cluster("broker-down")
    rows = topics.partition_rows(c.partitions, {"__consumer_offsets"})
    assert len(rows) == 68
    by_name = {(r["topic"], r["partition"]): r for r in rows}
    assert by_name[("events", 1)]["flags"] == "under min ISR, URP"
    assert by_name[("measure", 0)]["leader"] == 2 and by_name[("measure", 0)]["isr"] == "2,3"
    # the exporter saw broker 1 leave the ISR between healthy-later and broker-down
    assert by_name[("measure", 0)]["out_of_sync"] == "1: 16 s"
    assert rows[0]["flags"]  # problems first
    healthy = topics.partition_rows(cluster("healthy").partitions, {"__consumer_offsets"})
    assert healthy[0]["topic"] == "events" and healthy[-1]["topic"] == "__consumer_offsets"
    measure0 = next(r for r in healthy if r["topic"] == "measure" and r["partition"] == 0)
    assert (measure0["earliest_offset"], measure0["latest_offset"]) == (0, 37487)


def test_treemap_sizes_add_up_to_the_topic_sizes() -> None:
    c = cluster("healthy")
    fig = topics.treemap_figure(c.partitions)
    trace = fig["data"][0]
    totals = dict(zip(trace["ids"], trace["values"], strict=True))
    measure = next(t for t in c.topics if t.name == "measure")
    assert totals["measure"] == measure.leader_size_bytes == 31000660


def test_topics_page_rates_from_prometheus() -> None:
    page = topics.build(recorded_context("/topics"))
    rates = traces_by_name(figure(page, "fig-topics-rate"))
    assert "events" not in rates  # idle topics are left out
    measure = [v for v in rates["measure"] if v is not None]
    assert 1900 < max(measure) < 2100  # ~2,000 msgs/s from the background producer
    per_broker = traces_by_name(figure(page, "fig-topics-broker-rate"))
    assert {"broker 1 · measure", "broker 2 · measure", "broker 3 · measure"} <= set(per_broker)
    assert "Partitions (68)" in texts(page)


def test_filters_narrow_the_topic_page() -> None:
    ctx = recorded_context("/topics", "healthy", Filters(topics=("measure",), brokers=("1",)))
    page = topics.build(ctx)
    assert "Partitions (6)" in texts(page)
    rows = grid_rows(page, "partitions-table")
    assert [(r["topic"], r["partition"]) for r in rows] == [("measure", p) for p in range(6)]
    matrix = figure(page, "fig-topics-leader-matrix")["data"][0]
    assert matrix["y"] == ["measure"] and matrix["x"] == ["broker 1"]


# ------------------------------------------------------------------ replication


def test_out_of_sync_replicas_when_a_broker_is_down() -> None:
    c = cluster("broker-down")
    replicas = replication.out_of_sync_replicas(c.partitions, c.down_broker_ids)
    assert len(replicas) == 67
    assert replication.out_of_sync_by_broker(replicas) == {1: 67}
    assert all(r.broker_down for r in replicas)
    assert replication.out_of_sync_replicas(cluster("healthy").partitions, ()) == []


def test_replication_page_history_from_prometheus() -> None:
    page = replication.build(recorded_context("/replication"))
    urp = traces_by_name(figure(page, "fig-replication-urp-history"))
    assert max(v for v in urp["under-replicated"] if v is not None) == 67
    assert max(v for v in urp["under min ISR"] if v is not None) == 2
    history = traces_by_name(figure(page, "fig-replication-oos-history"))
    assert max(v for v in history["broker 1"] if v is not None) == 67
    remote = figure(page, "fig-replication-remote-time")
    assert len(remote["data"]) == 3
    longest = traces_by_name(figure(page, "fig-replication-oos-time"))
    assert 16 < max(v for v in longest["broker 1"] if v is not None) < 17
    assert max(v for v in longest["broker 2"] if v is not None) == 0
    probe = figure(page, "fig-replication-probe")
    assert probe["data"] == []
    assert "vigia_probe_replication_latency_seconds" in probe["layout"]["annotations"][0]["text"]
    assert table_rows(page, "out-of-sync-per-broker") == [["Out-of-sync replicas", "0", "0", "0"]]


# ------------------------------------------------------------------ consumers


def test_group_rows_show_each_groups_protocol_then_its_assignor() -> None:
    groups = cluster("healthy").groups
    protocols = {r[0]: r[2] for r in consumers.group_rows(groups, Filters())}
    assert protocols == {
        "billing": "classic · range",
        "events-reader": "classic",  # an empty classic group has no assignor
        "verify-group": "classic",
        "verify-group-848": "consumer · uniform",  # KIP-848's, assigned by the broker
        "vigia-ingest": "classic",
    }
    undescribed = replace(groups[0], type=None, protocol=None)  # DescribeGroups failed
    assert consumers.group_rows([undescribed], Filters())[0][2] == "?"


def test_group_rows_lag_per_scenario() -> None:
    def lags(scenario: str) -> dict[str, str]:
        return {r[0]: r[6] for r in consumers.group_rows(cluster(scenario).groups, Filters())}

    assert lags("healthy") == {
        "billing": "1,055",
        "events-reader": "0",
        "verify-group": "2,000",
        "verify-group-848": "0",
        "vigia-ingest": "104,555",
    }
    assert lags("rebalanced")["billing"] == "1,725"
    rebalanced = {r[0]: r for r in consumers.group_rows(cluster("rebalanced").groups, Filters())}
    assert (rebalanced["billing"][4], rebalanced["billing"][7]) == ("OK", "0.9 s")
    assert rebalanced["vigia-ingest"][7] == "2 min"  # 148 s behind: it stopped consuming
    assert lags("rebalanced")["vigia-ingest"] == "295,914"
    assert consumers.charted_groups(cluster("healthy").groups, Filters(), [], n=2) == [
        "vigia-ingest",
        "verify-group",
    ]
    lag = [
        Series({"consumergroup": "a", "topic": "x"}, (1.0, 2.0), (5.0, None)),
        Series({"consumergroup": "b", "topic": "x"}, (1.0, 2.0), (1.0, 9.0)),
    ]
    assert consumers.charted_groups(cluster("healthy").groups, Filters(), lag) == ["b", "a"]
    assert consumers.charted_groups((), Filters(groups=("z", "y")), lag) == ["y", "z"]


def test_partition_status_rows() -> None:
    rows = consumers.partition_status_rows(cluster("healthy").groups, Filters(groups=("billing",)))
    assert [r["lag"] for r in rows] == [173, 160, 187, 184, 161, 190]
    assert sum(r["lag"] for r in rows) == 1055
    # Burrow-style status: OK while the 10-observation window fills (5 collections by rebalanced)
    later = consumers.partition_status_rows(
        cluster("rebalanced").groups, Filters(groups=("billing",))
    )
    assert {(r["status"], r["window"]) for r in later} == {("OK", "50% observed")}


def test_consumers_page_produced_vs_consumed() -> None:
    page = consumers.build(recorded_context("/consumers"))
    flow = traces_by_name(figure(page, "fig-consumers-flow"))
    assert set(flow) == {
        "produced · measure",
        "consumed · billing · measure",
        "consumed · vigia-ingest · measure",
    }
    assert max(v for v in flow["consumed · vigia-ingest · measure"] if v is not None) == 0
    assert max(v for v in flow["consumed · billing · measure"] if v is not None) > 1900
    lag_seconds = figure(page, "fig-consumers-lag-seconds")
    assert lag_seconds["layout"]["yaxis"]["title"]["text"] == "minutes"  # 148 s at the end
    minutes = [v for v in traces_by_name(lag_seconds)["vigia-ingest · measure"] if v is not None]
    assert minutes == sorted(minutes) and 140 / 60 < minutes[-1] < 150 / 60  # stopped: it grows
    lag = traces_by_name(figure(page, "fig-consumers-lag"))
    billing = [v for v in lag["billing · measure"] if v is not None]
    assert billing[-1] == 1725  # the last recording, rebalanced


# ------------------------------------------------------------------ capacity and ingest


def test_disk_outlook_days_until_full() -> None:
    c = cluster("rebalanced")
    growth = [
        Sample({"broker": "1", "log_dir": "/var/lib/kafka/data-1"}, 1_000_000.0),
        Sample({"broker": "2", "log_dir": "/var/lib/kafka/data-2"}, -5.0),
    ]
    outlook = {o.broker: o for o in capacity.disk_outlook(c, growth)}
    usable = c.brokers[0].log_dirs[0].usable_bytes
    assert outlook[1].days_until_full == pytest.approx(usable / 1_000_000 / 86400)  # type: ignore[operator]
    assert outlook[2].days_until_full is None and outlook[2].growth_bytes_per_second == -5.0
    assert outlook[3].growth_bytes_per_second is None
    assert outlook[1].used_bytes == 60056015


def test_capacity_page_growth_from_prometheus() -> None:
    ctx = recorded_context("/capacity")
    rows = table_rows(capacity.build(ctx), "disk-outlook-table")
    assert [r[0] for r in rows] == ["1", "2", "3"]
    growth = {s.labels["broker"]: s.value for s in ctx.instant("growth")}  # type: ignore[union-attr]
    assert all(v is not None and v > 0 for v in growth.values())  # the recordings only grow


def test_capacity_panels_of_a_cluster_without_the_apis_say_which_api_they_need() -> None:
    """The demo's mock cluster: no DescribeLogDirs, DescribeConfigs or JMX agent."""
    ctx = recorded_context("/capacity")
    lacking = _lacking("rebalanced", "describe_log_dirs", "describe_configs")
    # Without DescribeConfigs no topic has a retention the outage budget could read.
    unlimited = tuple(replace(t, outage_budget_seconds=None) for t in lacking.topics)
    lacking = replace(lacking, topics=unlimited)
    raw = {**ctx.fetched.cluster, "capabilities": lacking.capabilities}  # type: ignore[dict-item]
    empty = {"disk_used": [], "bytes_in": [], "bytes_out": []}
    ctx = replace(
        ctx,
        cluster=lacking,
        fetched=replace(ctx.fetched, cluster=raw, ranged={**ctx.fetched.ranged, **empty}),
    )
    page = " ".join(texts(capacity.build(ctx)))
    assert "not available on this cluster (DescribeLogDirs): each broker's Kafka data" in page
    assert "not available on this cluster (DescribeConfigs): each topic's retention.ms" in page
    assert find(capacity.build(ctx), "disk-outlook-table") is None  # not a table of "–"
    figures = json.dumps(
        [find(capacity.build(ctx), f"fig-capacity-{f}").figure for f in ("disk-used", "bytes")]
    )
    assert "no data<br>not available on this cluster (DescribeLogDirs)" in figures
    assert "no data<br>needs the brokers' JMX agent (vigia-stack --jmx-target)" in figures


def test_sizing_prefill_from_the_live_topology() -> None:
    c = cluster("healthy-later")
    pre = capacity.prefill(c, "measure")
    measure = next(t for t in c.topics if t.name == "measure")
    assert pre.inputs.target_messages_per_second == measure.messages_in_per_second
    assert 1900 < pre.inputs.target_messages_per_second < 2100
    retained = sum(p.messages or 0 for p in measure.partitions)
    assert pre.inputs.bytes_per_message == measure.leader_size_bytes / retained  # type: ignore[operator]
    assert pre.inputs.replication_factor == 3
    assert pre.inputs.consumer_groups == 2  # billing and vigia-ingest commit on measure
    assert pre.inputs.disk_bytes_per_broker == 270553174016
    assert (pre.inputs.retention_hours, pre.sources["retention_hours"]) == (
        168.0,
        "live: topic retention.ms",
    )
    # A consumer stopped now would lose nothing for the 7 days of measure's retention.
    assert pre.inputs.outage_budget_hours == 168.0
    assert pre.sources["outage_budget_hours"].startswith("live")
    # the first collection has no rates: Prometheus fills them in
    first = capacity.prefill(
        cluster("healthy"), "measure", {"topic_rate": 1981.0, "per_member": None}
    )
    assert first.inputs.target_messages_per_second == 1981.0
    assert first.sources["per_consumer_messages_per_second"].startswith("assumed")
    assert capacity.default_topic(c, Filters()) == "measure"


def test_daily_completeness_and_invalid_rows() -> None:
    days = ingest.daily_completeness(
        [
            Sample({"measure_date": "2026-11-20"}, 384000.0),
            Sample({"measure_date": "2026-11-21"}, 100.0),
        ],
        [
            Sample(
                {"__name__": "vigia_ingest_day_completeness_ratio", "measure_date": "2026-11-20"},
                0.998,
            )
        ],
    )
    assert [(d.date, d.measures, d.ratio) for d in days] == [
        ("2026-11-20", 384000.0, 0.998),
        ("2026-11-21", 100.0, None),
    ]
    fig = ingest.completeness_figure(days, "")
    assert fig["data"][0]["text"] == ["384,000 (99.8%)", "100"]
    rows = ingest.invalid_summary(
        [Sample({"reason": "bad_json"}, 30.0), Sample({"reason": "bad_meter"}, 70.0)], 900.0, 1000.0
    )
    assert rows == [
        ["bad_meter", "70", "7.00%"],
        ["bad_json", "30", "3.00%"],
        ["(valid rows written)", "900", "90.00%"],
    ]


def test_ingest_page_from_the_jobs_recorded_batches() -> None:
    page = ingest.build(recorded_context("/ingest"))

    def span(graph_id: str) -> dict[str, set[float]]:
        return {
            name: {round(v, 3) for v in values if v is not None}
            for name, values in traces_by_name(figure(page, graph_id)).items()
        }

    # the two recorded micro-batches: 12,000 rows in 47.7 s, then 11,272 rows in 11.6 s
    assert span("fig-ingest-rows") == {"vigia-ingest rows": {12000, 11272}}
    rates = span("fig-ingest-rates")
    assert rates == {"vigia-ingest input": {0.0, 235.7}, "vigia-ingest processed": {251.7, 969.6}}
    durations = span("fig-ingest-batch-duration")
    assert durations["vigia-ingest last batch"] == {47.654, 11.625}
    assert durations["default trigger interval 30 s (not exported)"] == {30.0}
    assert table_rows(page, "ingest-summary")[0][:2] == ["vigia-ingest: running", "11,272"]
    assert table_rows(page, "invalid-table")[0] == ["malformed_json", "34", "0.15%"]
    assert table_rows(page, "invalid-table")[-1] == ["(valid rows written)", "23,040", "99.00%"]
    backlog = traces_by_name(figure(page, "fig-ingest-backlog"))
    assert max(v for v in backlog["vigia-ingest lag · measure"] if v is not None) == 295914
    assert max(v for v in backlog["job's offsets behind · measure"] if v is not None) == 3010
    completeness = figure(page, "fig-ingest-completeness")
    assert completeness["data"] == []
    assert "vigia_ingest_day_measures" in completeness["layout"]["annotations"][0]["text"]


def test_ingest_page_without_ingest_metrics_says_no_data() -> None:
    ctx = recorded_context("/ingest")
    empty = PageContext(
        Fetched(
            cluster=None,
            alerts=[],
            instant={k: [] for k in ctx.fetched.instant},
            ranged={k: [] for k in ctx.fetched.ranged},
        ),
        ctx.window,
        ctx.now,
    )
    rates = figure(ingest.build(empty), "fig-ingest-rates")
    assert rates["data"] == []
    assert "vigia_ingest_input_rows_per_second" in rates["layout"]["annotations"][0]["text"]


# ------------------------------------------------------------------ every page


@pytest.mark.parametrize("path", [p.path for p in PAGES])
def test_every_page_builds_valid_plotly_figures(path: str) -> None:
    page = PAGE_BY_PATH[path].build(recorded_context(path))
    found = list(figures(page))
    assert found, f"{path} has no figures"
    for graph_id, fig in found:
        go.Figure(fig)  # raises on any invalid property
        assert fig["layout"]["title"]["text"], graph_id


@pytest.mark.parametrize("path", [p.path for p in PAGES])
def test_every_page_survives_all_backends_down(path: str) -> None:
    fetched = Fetched(
        cluster=Unreachable("exporter", "connection refused"),
        alerts=Unreachable("Alertmanager", "connection refused"),
        instant={},
        ranged={},
    )
    window = Window(0, 3600, 15)
    page = PAGE_BY_PATH[path].build(PageContext(fetched, window, 3600))
    text = " ".join(texts(page))
    for _, fig in figures(page):
        go.Figure(fig)
    assert "Traceback" not in text


# ------------------------------------------------------------------ catch-up and retention


def _by_topic(**values: float) -> list[Sample]:
    return [Sample({"topic": topic, "limit": "time"}, v) for topic, v in values.items()]


def test_catch_up_rows_give_the_verdict_lost_before_at_risk_before_ok() -> None:
    rows = ingest.catch_up_rows(
        {
            "backlog": _by_topic(measure=90_000, draining=1_200, held=500),
            "drain": _by_topic(measure=-40.0, draining=10.0, held=0.0),
            "catchup_seconds": _by_topic(draining=120.0),
            "catchup_state": _by_topic(measure=3, draining=1, held=2),
            "margin": _by_topic(measure=0.0, draining=30.0, held=86_400.0),
            "at_risk": _by_topic(measure=1, draining=1, held=0),
            "lost": _by_topic(measure=700, draining=0, held=0),
        }
    )
    assert rows == [
        ["draining", "1,200", "10.0/s", "2 min", "30 s (time)", "draining", "AT RISK"],
        ["held", "500", "0.0/s", "never", "24.0 h (time)", "holding", "ok"],
        ["measure", "90,000", "-40.0/s", "never", "0.0 s (time)", "growing", "LOST 700"],
    ]
    # Nothing from the exporter (or Prometheus unreachable): no rows, not zeros.
    assert ingest.catch_up_rows({"backlog": Unreachable("prometheus", "down")}) == []


def test_spark_rows_per_query_with_dashes_for_what_the_job_does_not_serve() -> None:
    def by_query(**values: float) -> list[Sample]:
        return [Sample({"query": query}, v) for query, v in values.items()]

    rows = ingest.spark_rows(
        {
            "executors": by_query(measure=2, backfill=0),
            "cores": by_query(measure=2, backfill=0),
            "failed_tasks": by_query(measure=3, backfill=0),
            "executors_lost": by_query(measure=1, backfill=0),
            # an older job serves no retries; Prometheus unreachable is not a zero
            "kafka_retries": Unreachable("prometheus", "down"),
        }
    )
    assert rows == [
        ["backfill", "0", "0", "0", "0", "–"],
        ["measure", "2", "2", "3", "1", "–"],
    ]
    assert ingest.spark_rows({key: [] for key in ingest.SPARK_QUERIES}) == []


def test_ingest_page_flags_a_query_without_executors_or_with_executors_lost() -> None:
    ctx = recorded_context("/ingest")
    spark = {
        "executors": [Sample({"query": "measure"}, 0.0)],
        "failed_tasks": [Sample({"query": "measure"}, 0.0)],
    }
    page = ingest.build(
        PageContext(
            replace(ctx.fetched, instant={**ctx.fetched.instant, **spark}),
            ctx.window,
            ctx.now,
        )
    )
    assert table_rows(page, "spark-table") == [["measure", "0", "–", "0", "–", "–"]]


def test_ingest_page_shows_the_catch_up_of_the_recorded_stopped_job() -> None:
    page = ingest.build(recorded_context("/ingest"))
    # vigia-ingest stopped consuming in the recordings while 2,000 msg/s arrived: growing, with
    # measure's 7 days of retention (less its lag) ahead, so not at risk.
    assert table_rows(page, "catch-up-table") == [
        ["measure", "295,914", "-1,996/s", "never", "7.0 d (time)", "growing", "ok"]
    ]
    margin = traces_by_name(figure(page, "fig-ingest-catch-up"))["retention margin · measure"]
    assert 167.9 < min(v for v in margin if v is not None) < 168.0  # hours


def test_consumers_table_shows_each_groups_retention_margin_and_flags_a_risk() -> None:
    margins = {r[0]: r[9] for r in consumers.group_rows(cluster("rebalanced").groups, Filters())}
    assert (margins["vigia-ingest"], margins["events-reader"]) == ("7.0 d", "24.0 h")
    (ingest_group,) = [g for g in cluster("rebalanced").groups if g.group_id == "vigia-ingest"]
    (topic,) = ingest_group.topics
    risky = replace(
        ingest_group,
        topics=(replace(topic, retention_margin_seconds=1_800.0, retention_at_risk=True),),
    )
    assert consumers.group_rows([risky], Filters())[0][9] == "30 min · at risk"


def test_capacity_page_lists_each_topics_outage_budget_shortest_first() -> None:
    rows = capacity.outage_budget_rows(cluster("healthy-later"), Filters())
    assert [r[0] for r in rows] == ["events", "measure-quarantine", "verify-6x3", "measure"]
    assert rows[-1][:2] == ["measure", "7.0 d (time)"]
    assert capacity.outage_budget_rows(cluster("healthy-later"), Filters(topics=("measure",))) == [
        rows[-1]
    ]
