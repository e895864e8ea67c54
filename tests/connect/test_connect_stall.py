"""Stall causes (exporter.connect.stall) on the recorded REST answers beside flow verdicts, and how
they are served: kafka_connect_connector_stalled and /api/v1/cluster's `connect[].stalls`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.connect.recorded import STATES
from tests.connect.test_connect_model import view
from tests.exporter.exposition import samples, value
from vigia.exporter.connect.collector import CachedExposition, connect_json, render_connect
from vigia.exporter.connect.model import ConnectorStatus, ConnectView, TaskStatus
from vigia.exporter.connect.stall import CAUSES, Pipeline, cause, stalls
from vigia.exporter.connect.watcher import ConnectReport, next_report
from vigia.exporter.model.pipeline_flow import FLOW_STATES, IDLE, MOVING, STALLED, UNKNOWN, Flow

NOW = 1_795_484_000.0


def flow(state: str) -> Flow:
    return Flow(state, NOW, 118_310, NOW - 5, NOW - 60, NOW - 45 if state == STALLED else None)


def pipeline(state: str) -> Pipeline:
    return Pipeline("hes-measure", flow(state))


# hes-measure's cause in each recorded state, by flow verdict; hes-broken's task is FAILED
# throughout (its password was rotated) and it is not the pipeline's connector.
EXPECTED = {
    "healthy": {STALLED: "silent"},
    "db-down-20s": {STALLED: "silent"},
    "db-down-70s": {STALLED: "silent"},
    "task-failed": dict.fromkeys(FLOW_STATES, "failed"),
    "task-failed-db-back": dict.fromkeys(FLOW_STATES, "failed"),
    "recovered": {STALLED: "silent"},
}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("verdict", FLOW_STATES)
def test_recorded_states_beside_every_flow_verdict(state: str, verdict: str) -> None:
    got = stalls(ConnectReport(view(state)), pipeline(verdict))
    assert got == {"hes-broken": "failed", "hes-measure": EXPECTED[state].get(verdict)}


def test_a_failed_task_is_a_stall_whether_or_not_the_hes_writes() -> None:
    """REST alone (no --hes-dsn): only a FAILED task, which never recovers by itself."""
    assert stalls(ConnectReport(view("healthy")), None) == {
        "hes-broken": "failed",
        "hes-measure": None,
    }
    assert stalls(ConnectReport(view("task-failed")), Pipeline("hes-measure", None)) == {
        "hes-broken": "failed",
        "hes-measure": "failed",
    }


def _connector(
    state: str = "RUNNING", *tasks: str, configured: int | None = None
) -> ConnectorStatus:
    return ConnectorStatus(
        "hes-measure",
        state,
        "w1:8083",
        tuple(TaskStatus(i, s, "w1:8083") for i, s in enumerate(tasks)),
        type="source",
        configured_tasks=configured,
    )


@pytest.mark.parametrize(
    ("connector", "verdict", "expected"),
    [
        # Unassigned tasks of the pipeline's connector: a stall only while rows wait.
        (_connector("RUNNING", "UNASSIGNED"), STALLED, "unassigned"),
        (_connector("RUNNING", "UNASSIGNED"), IDLE, None),
        (_connector("RUNNING", "RESTARTING"), STALLED, "unassigned"),
        (_connector("UNASSIGNED"), STALLED, "unassigned"),  # no task: fewer than configured
        (_connector("RUNNING", "RUNNING", configured=2), STALLED, "unassigned"),
        (_connector("RUNNING", "RUNNING"), STALLED, "silent"),
        (_connector("RUNNING", "RUNNING"), MOVING, None),
        # Someone paused or stopped it: nothing moves, on purpose.
        (_connector("PAUSED", "PAUSED"), STALLED, None),
        (_connector("STOPPED"), STALLED, None),
        (_connector("RUNNING", "FAILED", "RUNNING"), IDLE, "failed"),
    ],
)
def test_causes(connector: ConnectorStatus, verdict: str, expected: str | None) -> None:
    assert cause(connector, flow(verdict)) == expected


def test_other_source_connectors_are_judged_on_rest_alone_and_sinks_not_at_all() -> None:
    other = replace(_connector("RUNNING", "UNASSIGNED"), name="other-source")
    sink = replace(_connector("RUNNING", "FAILED"), name="files-sink", type="sink")
    mine = _connector("RUNNING", "RUNNING")
    report = ConnectReport(ConnectView("connect", "http://c", NOW, connectors=(other, sink, mine)))
    assert stalls(report, pipeline(STALLED)) == {
        "other-source": "unassigned",
        "hes-measure": "silent",
    }
    # An unknown flow (the last look could not read the HES or the topic) judges on REST alone.
    assert stalls(report, pipeline(UNKNOWN)) == {"other-source": "unassigned", "hes-measure": None}


def test_a_worker_that_does_not_answer_leaves_the_pipelines_connector_to_the_flow() -> None:
    report = next_report(None, view("healthy"))
    down = next_report(report, ConnectView("connect", "http://c", NOW, error="timed out"))
    assert stalls(down, pipeline(STALLED)) == {"hes-measure": "connect_down"}
    assert stalls(down, pipeline(MOVING)) == {"hes-measure": None}
    assert stalls(down, pipeline(UNKNOWN)) == {}
    assert stalls(down, Pipeline("not-there", flow(STALLED))) == {}
    never = next_report(None, ConnectView("connect", "http://c", NOW, error="timed out"))
    assert stalls(never, pipeline(STALLED)) == {}


def test_the_family_has_one_series_per_cause_for_each_source_connector() -> None:
    report = next_report(None, view("healthy"))
    found = samples(render_connect([report], pipeline(STALLED)))
    for connector, why in (("hes-measure", "silent"), ("hes-broken", "failed")):
        for option in CAUSES:
            got = value(
                found,
                "kafka_connect_connector_stalled",
                connect="connect",
                connector=connector,
                cause=option,
            )
            assert got == (1 if option == why else 0)
    # 1 + connectors × (8 + tasks × 7) + source connectors × 4, as the collector says.
    assert len(found) == 1 + 2 * (8 + 1 * 7) + 2 * 4
    down = next_report(report, ConnectView("connect", "http://c", NOW, error="timed out"))
    found = samples(render_connect([down], pipeline(STALLED)))
    stalled = {k[1]["cause"]: v for k, v in found.items() if k[0].endswith("_stalled")}
    assert stalled == {"failed": 0, "unassigned": 0, "connect_down": 1, "silent": 0}
    assert {k[1]["connector"] for k in found if k[0].endswith("_stalled")} == {"hes-measure"}


def test_the_exposition_is_rendered_again_after_a_look_too() -> None:
    cache = CachedExposition()
    report = ConnectReport(view("healthy"))
    moving, stalled = pipeline(MOVING), pipeline(STALLED)
    body = cache.get([report], moving)
    assert cache.get([report], Pipeline("hes-measure", moving.flow)) is body
    again = cache.get([report], stalled)
    assert again is not body
    assert value(samples(again.decode()), "kafka_connect_connector_stalled", connect="connect",
                 connector="hes-measure", cause="silent") == 1  # fmt: skip


def test_the_json_says_which_connector_is_stalled_and_why() -> None:
    report = next_report(None, view("healthy"))
    (cluster,) = connect_json([report], pipeline(STALLED))
    assert cluster["stalls"] == [
        {"connector": "hes-broken", "stalled": True, "cause": "failed"},
        {"connector": "hes-measure", "stalled": True, "cause": "silent"},
    ]
    down = next_report(report, ConnectView("connect", "http://c", NOW, error="timed out"))
    (cluster,) = connect_json([down], pipeline(STALLED))
    assert cluster["connectors"] == []
    assert cluster["stalls"] == [
        {"connector": "hes-measure", "stalled": True, "cause": "connect_down"}
    ]
