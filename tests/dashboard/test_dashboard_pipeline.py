"""The pipeline page's hops, on the recorded Kafka Connect + Debezium states: the exporter's
Connect families (its real collector on the recorded REST answers, beside a flow verdict), the
worker's recorded JMX scrape and the exporter's JSON `connect` and `source.flow` sections, as
Prometheus and the exporter return them."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import plotly.graph_objects as go
import pytest

from tests.connect.recorded import FIXTURES, STATES
from tests.connect.test_connect_model import DENIED, REFUSED, recorded_reports
from tests.exporter.exposition import samples
from vigia.dashboard.data import Fetched, Sample, Series, Unreachable, Window
from vigia.dashboard.pages import PAGE_BY_PATH
from vigia.dashboard.views import pipeline
from vigia.dashboard.views.common import PageContext
from vigia.exporter.connect.collector import connect_json, render_connect
from vigia.exporter.connect.stall import Pipeline
from vigia.exporter.model.pipeline_flow import IDLE, MOVING, STALLED, Flow

NOW = 1795484000.0
REPORTS = dict(zip(STATES, recorded_reports(), strict=True))


def _jmx(state: str, name: str) -> list[Sample]:
    text = (FIXTURES / state / "worker-metrics.prom").read_text(encoding="utf-8")
    return [
        Sample({"server": dict(labels)["server"]}, value)
        for (metric, labels), value in samples(text).items()
        if metric == name and dict(labels).get("context") == "streaming"
    ]


def pipeline_flow(verdict: str) -> Pipeline:
    """The source watch's verdict: rows waiting since 45 s ago when stalled."""
    pending = NOW - 45 if verdict == STALLED else None
    return Pipeline("hes-measure", Flow(verdict, NOW, 118_310, NOW - 20, NOW - 60, pending))


def context(state: str, verdict: str = MOVING) -> PageContext:
    """What the page's queries return for a recorded state (a healthy rest of the pipeline),
    beside the exporter's flow verdict."""
    flow = pipeline_flow(verdict)
    exporter = samples(render_connect([REPORTS[state]], flow))
    tasks = [
        Sample(
            {
                "connector": dict(lab)["connector"],
                "task": dict(lab)["task"],
                "state": dict(lab)["state"],
            },
            1.0,
        )
        for (name, lab), v in exporter.items()
        if name == "kafka_connect_task_state" and v == 1
    ]
    stalled = [
        Sample({"connector": dict(lab)["connector"], "cause": dict(lab)["cause"]}, 1.0)
        for (name, lab), v in exporter.items()
        if name == "kafka_connect_connector_stalled" and v == 1
    ]
    db_up = state in ("healthy", "task-failed-db-back", "recovered")
    one = lambda v: [Sample({}, v)]  # noqa: E731
    instant = {
        "hes_up": one(1.0 if db_up else 0.0),
        "hes_age": one(20.0),
        "hes_days": [Sample({"measure_date": "2026-11-24"}, 119310.0)],
        "workers": [Sample({"connect": "connect"}, 1.0)],
        "tasks": tasks,
        "stalled": stalled,
        "connected": _jmx(state, "debezium_mysql_connected"),
        "since_event": [
            Sample(s.labels, (s.value or 0) / 1000)
            for s in _jmx(state, "debezium_mysql_milli_seconds_since_last_event")
        ],
        "kafka_rate": one(500.0),
        "kafka_offline": one(0.0),
        "ingest_active": one(1.0),
        "ingest_backlog": one(30.0),
        "store_age": one(60.0),
    }
    assert flow.flow is not None
    source = {
        "interval_seconds": 15.0,
        "flow": {
            "connector": "hes-measure",
            "stall_after_seconds": 30.0,
            "state": flow.flow.state,
            "pending_since": flow.flow.pending_since,
        },
    }
    connect = json.loads(json.dumps(connect_json([REPORTS[state]], flow)))
    cluster = {"connect": connect, "source": source}
    fetched = Fetched(cluster=cluster, alerts=[], instant=instant, ranged={})  # type: ignore[arg-type]
    return PageContext(fetched, Window(NOW - 3600, NOW, 15), NOW)


def lights(ctx: PageContext) -> dict[str, tuple[str, str]]:
    return {h.key: (h.status, h.headline) for h in pipeline.hops(ctx)}


@pytest.mark.parametrize(
    ("state", "connect"),
    [
        # hes-broken's task is FAILED in every recorded state (password rotated): always red.
        ("healthy", ("red", "1 task FAILED")),
        ("db-down-70s", ("red", "1 task FAILED")),
        ("task-failed", ("red", "2 tasks FAILED")),
        ("task-failed-db-back", ("red", "2 tasks FAILED")),
        ("recovered", ("red", "1 task FAILED")),
    ],
)
def test_connect_hop_per_recorded_state(state: str, connect: tuple[str, str]) -> None:
    got = lights(context(state))
    assert got["connect"] == connect
    assert got["hes"][0] == (
        "green" if state in ("healthy", "task-failed-db-back", "recovered") else "red"
    )
    facts = dict(next(h for h in pipeline.hops(context(state)) if h.key == "connect").facts)
    if state.startswith("task-failed"):
        # every Debezium series is gone while the task is failed
        assert facts["binlog connected"] == "no series (task failed?)"
    elif state == "db-down-70s":
        assert facts["binlog connected"] == "cdc no" and facts["since last event"] == "95 s"
    else:
        assert facts["binlog connected"] == "cdc yes"


def test_a_disconnected_binlog_is_red_even_while_rest_says_running() -> None:
    ctx = context("db-down-20s")
    only_measure = [
        s for s in ctx.fetched.instant["tasks"] if s.labels["connector"] == "hes-measure"
    ]  # type: ignore[union-attr]
    ctx.fetched.instant["tasks"] = only_measure
    assert lights(ctx)["connect"] == ("red", "not connected: cdc")


def test_failed_tasks_table_has_the_first_trace_line() -> None:
    rows = pipeline.failed_tasks(context("task-failed").fetched.cluster)  # type: ignore[arg-type]
    assert rows == [
        ["connect", "hes-broken/0", "FAILED", DENIED],
        ["connect", "hes-measure/0", "FAILED", REFUSED],
    ]
    assert pipeline.failed_tasks(
        {"connect": [{"connect": "c", "up": False, "error": "timed out"}]}
    ) == [["c", "–", "NOT ANSWERING", "timed out"]]


def test_no_data_is_grey_and_the_page_still_builds() -> None:
    fetched = Fetched(cluster=Unreachable("exporter", "down"), alerts=None, instant={}, ranged={})
    ctx = PageContext(fetched, Window(0, 3600, 15), 3600)
    assert {k: v[0] for k, v in lights(ctx).items()} == dict.fromkeys(
        ("hes", "connect", "kafka", "spark", "parquet"), "grey"
    )
    page = PAGE_BY_PATH["/pipeline"].build(ctx)
    assert page


def test_hops_the_deployment_does_not_have_say_so() -> None:
    """The demo: no --hes-dsn, no --connect-url, so no HES or Connect series either."""
    fetched = Fetched(cluster={"source": None, "connect": []}, alerts=[], instant={}, ranged={})
    ctx = PageContext(fetched, Window(0, 3600, 15), 3600)
    got = lights(ctx)
    assert got["hes"] == got["connect"] == ("grey", pipeline.NOT_DEPLOYED)
    assert got["kafka"] == ("grey", "no data")  # watched, and silent: that is "no data"
    assert pipeline.NOT_DEPLOYED in json.dumps(pipeline.build(ctx)[2].to_plotly_json(), default=str)
    # Watched ones without data yet (the exporter names them) are "no data", as before.
    watched = {"source": {"hes": {}}, "connect": [{"connect": "connect", "up": True}]}
    ctx = PageContext(replace(fetched, cluster=watched), Window(0, 3600, 15), 3600)
    assert lights(ctx)["hes"] == ("grey", "no data")
    assert lights(ctx)["connect"] == ("grey", "no data")


def test_in_the_demo_the_missing_hops_say_what_the_demo_lacks() -> None:
    fetched = Fetched(cluster={"source": None, "connect": []}, alerts=[], instant={}, ranged={})
    facts = {
        hop.key: dict(hop.facts)
        for hop in pipeline.hops(PageContext(fetched, Window(0, 3600, 15), 3600, demo=True))
    }
    assert facts["hes"]["the demo needs"] == "sudo apt-get install -y mariadb-server"
    assert facts["connect"]["in the demo"] == "none (mock Kafka)"
    elsewhere = pipeline.hops(PageContext(fetched, Window(0, 3600, 15), 3600))
    assert [dict(hop.facts) for hop in elsewhere[:2]] == [
        {"watched with": "vigia-exporter --hes-dsn"},
        {"watched with": "vigia-exporter --connect-url"},
    ]


def test_a_connector_that_says_running_and_moves_nothing_is_red_with_its_cause() -> None:
    """Issue 23: REST RUNNING (recorded healthy), the flow stalled: the hop names the connector
    and the cause, and the table says since when rows wait."""
    ctx = context("healthy", STALLED)
    assert lights(ctx)["connect"] == ("red", "moves nothing: hes-measure (silent)")
    facts = dict(next(h for h in pipeline.hops(ctx) if h.key == "connect").facts)
    assert facts["data moving"] == "stalled"
    assert pipeline.stall_rows(ctx.fetched.cluster, NOW) == [
        ["connect", "hes-broken", "STALLED", "failed", "–"],
        ["connect", "hes-measure", "STALLED", "silent", "45 s"],
    ]


@pytest.mark.parametrize("verdict", [MOVING, IDLE])
def test_moving_or_nothing_to_move_is_no_stall(verdict: str) -> None:
    ctx = context("recovered", verdict)
    assert lights(ctx)["connect"] == ("red", "1 task FAILED")  # hes-broken, as recorded
    assert pipeline.stall_rows(ctx.fetched.cluster, NOW)[1] == [
        "connect", "hes-measure", verdict, "–", "–"
    ]  # fmt: skip
    assert "every 15 s" in pipeline.stall_note(ctx.fetched.cluster)
    assert "REST alone" in pipeline.stall_note({"source": None, "connect": []})


def _component(tree: Any, id: str) -> Any:
    """The Dash component with this id anywhere in the page's tree, else None."""
    if getattr(tree, "id", None) == id:
        return tree
    children = tree if isinstance(tree, list) else getattr(tree, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found = _component(child, id)
            if found is not None:
                return found
    return None


def _hop_lag_figure(ranged: dict[str, Any]) -> dict[str, Any]:
    ctx = context("recovered")
    ctx = replace(ctx, fetched=replace(ctx.fetched, ranged=ranged))
    figure: dict[str, Any] = _component(pipeline.build(ctx), "fig-pipeline-hop-lag").figure
    go.Figure(figure)  # plotly accepts it as a figure
    return figure


def test_hop_lag_figure_draws_one_line_per_hop_in_a_readable_unit() -> None:
    times = (NOW - 30, NOW - 15, NOW)
    figure = _hop_lag_figure(
        {
            "hop_lag": [
                Series({"hop": "kafka_to_store"}, times, (60.0, 90.0, None)),
                Series({"hop": "hes_to_kafka"}, times, (30.0, 300.0, 180.0)),
            ]
        }
    )
    lines = {t["name"]: (t["x"], t["y"]) for t in figure["data"]}
    ms = [t * 1000 for t in times]
    # Sorted by hop; the peak, 300 s, is over 2 minutes: minutes on the axis.
    assert [t["name"] for t in figure["data"]] == ["hes to kafka", "kafka to store"]
    assert lines["hes to kafka"] == (ms, [0.5, 5.0, 3.0])
    assert lines["kafka to store"] == (ms, [1.0, 1.5, None])
    assert figure["layout"]["yaxis"]["title"]["text"] == "minutes"
    assert figure["layout"]["xaxis"]["type"] == "date"
    assert figure["layout"]["title"]["text"] == "Hop lag"


def test_hop_lag_figure_says_why_it_is_empty() -> None:
    figure = _hop_lag_figure({"hop_lag": []})
    assert figure["data"] == []
    (annotation,) = figure["layout"]["annotations"]
    assert "no vigia_pipeline_hop_lag_seconds series" in annotation["text"]
    unreachable = _hop_lag_figure({"hop_lag": Unreachable("Prometheus", "connection refused")})
    assert unreachable["data"] == []
    assert "connection refused" in unreachable["layout"]["annotations"][0]["text"]


@pytest.mark.parametrize(
    ("state", "margin", "text", "status"),
    [
        ("ok", 86000.0, "≥ ", "green"),
        ("at_risk", 1200.0, "AT RISK", "red"),
        ("lost", 0.0, "LOST", "red"),
        ("none", None, "forever", "green"),
        (None, None, "–", "grey"),
    ],
)
def test_the_hes_hop_says_how_long_the_binlog_is_kept(
    state: str | None, margin: float | None, text: str, status: str
) -> None:
    states = [] if state is None else [Sample({"state": state}, 1.0)]
    fact, colour = pipeline.binlog_fact(states, margin)
    assert text in fact and colour == status
