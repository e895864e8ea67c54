"""The drills recorded on the real stack (tests/fixtures/connect-debezium/drills: the HES stopped
70 s with a task restart meanwhile, the worker killed with `kill -9`, and the worker cut off from
Kafka until its task stayed unassigned for the rebalance delay; recorded by
tests/integration's drills through tests/realstack/moments.py). At each moment the stall cause
computed from what was recorded — the worker's REST answer, or its last one while it did not
answer, beside the exporter's flow verdict — is the one the exporter served, and each moment shows
what the drill is about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.connect.recorded import FIXTURES
from tests.exporter.exposition import Samples, samples, value
from vigia.exporter.connect.model import ConnectView, parse_expanded
from vigia.exporter.connect.stall import Pipeline, stalls
from vigia.exporter.connect.watcher import ConnectReport
from vigia.exporter.model.pipeline_flow import Flow

DRILLS = FIXTURES / "drills"
CONNECTOR = "hes-measure"
# drill/moment → (the stall cause served, task 0's state served, vigia_hes_up, worker up)
EXPECTED = {
    "hes-stopped-70s/healthy": (None, "RUNNING", 1, 1),
    "hes-stopped-70s/hes-down": (None, "RUNNING", 0, 1),
    "hes-stopped-70s/task-failed-hes-down": ("failed", "FAILED", 0, 1),
    "hes-stopped-70s/task-failed-hes-back": ("failed", "FAILED", 1, 1),
    "hes-stopped-70s/recovered": (None, "RUNNING", 1, 1),
    "worker-killed/healthy": (None, "RUNNING", 1, 1),
    # REST does not answer: no task state served, the flow judges the last answer's connector.
    "worker-killed/killed-stalled": ("connect_down", None, 1, 0),
    # The worker back and RUNNING, the topic moved, the flow verdict not yet looked again.
    "worker-killed/restarted-moving": ("silent", "RUNNING", 1, 1),
    "worker-killed/recovered": (None, "RUNNING", 1, 1),
    # Issue 23's stall: REST says the connector UNASSIGNED and its task still RUNNING, which no
    # worker runs; served as task RUNNING and cause unassigned until rows move again.
    "worker-cut-off/healthy": (None, "RUNNING", 1, 1),
    "worker-cut-off/cut-off-stalled": ("unassigned", "RUNNING", 1, 1),
    "worker-cut-off/paged": ("unassigned", "RUNNING", 1, 1),
    # The topic moved, the flow verdict not yet looked again: REST RUNNING, so `silent` one look.
    "worker-cut-off/moving-again": ("silent", "RUNNING", 1, 1),
    "worker-cut-off/recovered": (None, "RUNNING", 1, 1),
}


def _view(rest: Path) -> ConnectView:
    connectors = parse_expanded(json.loads(rest.read_text()))
    assert isinstance(connectors, tuple)
    return ConnectView("it", "http://127.0.0.1:8083", 0.0, connectors=connectors)


def _flow(recorded: dict[str, object]) -> Flow | None:
    state = recorded["state"]
    if state is None:
        return None
    return Flow(
        str(state),
        float(recorded["checked_at"]),  # type: ignore[arg-type]
        recorded["topic_end_offsets"],  # type: ignore[arg-type]
        None,
        recorded["moved_at"],  # type: ignore[arg-type]
        recorded["pending_since"],  # type: ignore[arg-type]
    )


def _served_cause(found: Samples) -> str | None:
    causes = [
        labels["cause"]
        for (name, labels), v in found.items()
        if name == "kafka_connect_connector_stalled" and labels["connector"] == CONNECTOR and v
    ]
    assert len(causes) <= 1, causes
    return causes[0] if causes else None


def _served_task(found: Samples) -> str | None:
    return next(
        (
            labels["state"]
            for (name, labels), v in found.items()
            if name == "kafka_connect_task_state" and labels["connector"] == CONNECTOR and v
        ),
        None,
    )


def test_every_drill_moment_is_recorded() -> None:
    recorded = {f"{p.parent.name}/{p.name.split('.')[0]}" for p in DRILLS.glob("*/*.api.json")}
    assert recorded == set(EXPECTED)


@pytest.mark.parametrize("moment", sorted(EXPECTED))
def test_the_cause_served_is_the_one_computed_from_the_recorded_state(moment: str) -> None:
    base = DRILLS / moment
    found = samples(base.with_suffix(".prom").read_text())
    flow = _flow(json.loads(base.with_suffix(".api.json").read_text())["flow"])
    rest = base.with_suffix(".rest.json")
    if rest.exists():
        report = ConnectReport(_view(rest))
    else:  # the worker did not answer: the exporter judges its last answer
        last = _view(base.parent / "healthy.rest.json")
        down = ConnectView("it", last.url, 0.0, error="connection refused")
        report = ConnectReport(down, last_answer=last)
    computed = stalls(report, Pipeline(CONNECTOR, flow)).get(CONNECTOR)
    assert computed == _served_cause(found)

    cause, task, hes_up, worker_up = EXPECTED[moment]
    assert _served_cause(found) == cause
    assert _served_task(found) == task
    assert value(found, "vigia_hes_up") == hes_up
    assert value(found, "kafka_connect_worker_up", connect="it") == worker_up
