"""Parsing Kafka Connect's REST answers, on every recorded state (README of the fixtures)."""

from __future__ import annotations

import pytest

from tests.connect.recorded import STATES, answer
from tests.exporter.exposition import samples, value
from vigia.exporter.connect.collector import CachedExposition, render_connect
from vigia.exporter.connect.model import (
    STATES as CONNECT_STATES,
)
from vigia.exporter.connect.model import (
    ConnectAnswerError,
    ConnectorStatus,
    ConnectView,
    TaskStatus,
    parse_expanded,
    parse_root,
    parse_status,
    restarts_seen,
)
from vigia.exporter.connect.watcher import ConnectReport, next_report

RUNNING, FAILED = "RUNNING", "FAILED"
# The README's table: (hes-measure connector, its task 0, hes-broken connector, its task 0).
EXPECTED = {
    "healthy": (RUNNING, RUNNING, RUNNING, FAILED),
    "db-down-20s": (RUNNING, RUNNING, RUNNING, FAILED),
    "db-down-70s": (RUNNING, RUNNING, RUNNING, FAILED),
    "task-failed": (RUNNING, FAILED, RUNNING, FAILED),
    "task-failed-db-back": (RUNNING, FAILED, RUNNING, FAILED),
    "recovered": (RUNNING, RUNNING, RUNNING, FAILED),
}
REFUSED = (
    "io.debezium.DebeziumException: Error reading MySQL variables: Could not connect to "
    "address=(host=127.0.0.1)(port=13306)(type=master) : Socket fail to connect to "
    "host:127.0.0.1, port:13306. Connection refused"
)
DENIED = (
    "io.debezium.DebeziumException: Error reading MySQL variables: Could not connect to "
    "address=(host=127.0.0.1)(port=13306)(type=master) : (conn=21) Access denied for user "
    "'dbz_broken'@'127.0.0.1' (using password: YES)"
)


def view(state: str, collected_at: float = 0.0) -> ConnectView:
    connectors = parse_expanded(answer(state, "connectors-expand.json"))
    assert isinstance(connectors, tuple)
    return ConnectView(
        "connect",
        "http://connect:8083",
        collected_at,
        worker=parse_root(answer(state, "rest-root.json")),
        connectors=connectors,
    )


@pytest.mark.parametrize("state", STATES)
def test_every_recorded_state_gives_the_states_its_readme_lists(state: str) -> None:
    measure, broken = view(state).connectors[::-1]  # sorted by name: hes-broken first
    assert (measure.name, broken.name) == ("hes-measure", "hes-broken")
    got = (measure.state, measure.tasks[0].state, broken.state, broken.tasks[0].state)
    assert got == EXPECTED[state]
    assert measure.topic_prefix == "cdc" and broken.topic_prefix == "cdcbroken"
    assert measure.connector_class == "io.debezium.connector.mysql.MySqlConnector"
    assert measure.type == "source" and measure.task_count == 1
    assert measure.worker_id == "127.0.0.1:18083"
    # The per-connector answers say the same as the expanded listing.
    for parsed in (measure, broken):
        alone = parse_status(answer(state, f"status-{parsed.name}.json"))
        assert alone.state == parsed.state and alone.tasks == parsed.tasks


@pytest.mark.parametrize("state", STATES)
def test_state_sets_serve_one_series_per_state_with_1_for_the_current(state: str) -> None:
    found = samples(render_connect([ConnectReport(view(state))]))
    expected = dict(zip(("measure", "measure0", "broken", "broken0"), EXPECTED[state], strict=True))
    for connector, key in (("hes-measure", "measure"), ("hes-broken", "broken")):
        for s in CONNECT_STATES:
            labels = {"connect": "connect", "connector": connector, "state": s}
            assert value(found, "kafka_connect_connector_state", **labels) == (
                1 if s == expected[key] else 0
            )
            task = value(found, "kafka_connect_task_state", task="0", **labels)
            assert task == (1 if s == expected[key + "0"] else 0)
        assert (
            value(found, "kafka_connect_connector_tasks", connect="connect", connector=connector)
            == 1
        )
    assert value(found, "kafka_connect_worker_up", connect="connect") == 1
    # 1 + connectors × (8 + tasks × 7) + source connectors × 4, as the collector's docstring says.
    assert len(found) == 1 + 2 * (8 + 1 * 7) + 2 * 4


def test_the_failed_tasks_first_trace_line_is_the_exception_and_its_message() -> None:
    failed = view("task-failed").connectors
    assert failed[1].tasks[0].trace_first_line == REFUSED
    assert failed[0].tasks[0].trace_first_line == DENIED
    assert view("healthy").connectors[1].tasks[0].trace_first_line is None
    assert parse_root(answer("healthy", "rest-root.json")).version == "4.3.0"


def recorded_reports() -> list[ConnectReport]:
    """The reports of a watcher that polled each recorded state in order."""
    reports: list[ConnectReport] = []
    for i, state in enumerate(STATES):
        reports.append(next_report(reports[-1] if reports else None, view(state, i)))
    return reports


def test_restarts_seen_over_the_recording() -> None:
    """The task restarted at 01:34:26 failed at once (RUNNING → FAILED: a failure, not a seen
    restart); the restart at 01:36:09 brought it back (FAILED → RUNNING: one restart)."""
    reports = recorded_reports()
    assert [r.restarts[("hes-measure", 0)] for r in reports] == [0, 0, 0, 0, 0, 1]
    assert reports[-1].restarts[("hes-broken", 0)] == 0


def test_a_worker_that_does_not_answer_keeps_the_counters_but_serves_only_worker_up_0() -> None:
    report = next_report(None, view("task-failed"))
    report = next_report(report, ConnectView("connect", "http://x", 1, error="timed out"))
    assert samples(render_connect([report])) == samples(
        '# TYPE kafka_connect_worker_up gauge\nkafka_connect_worker_up{connect="connect"} 0\n'
        "# TYPE kafka_connect_task_restarts_seen counter\n"
    )
    report = next_report(report, view("recovered", collected_at=2))
    assert report.restarts[("hes-measure", 0)] == 1  # compared with the last answer


def _task(state: str, worker: str = "w1") -> ConnectorStatus:
    return ConnectorStatus("c", RUNNING, worker, (TaskStatus(0, state, worker),))


@pytest.mark.parametrize(
    ("before", "after", "seen"),
    [
        (_task(RUNNING), _task("RESTARTING"), 1),
        (_task("RESTARTING"), _task("RESTARTING"), 0),
        (_task("RESTARTING"), _task(RUNNING), 0),  # counted when it went into RESTARTING
        (_task(FAILED), _task(RUNNING), 1),
        (_task(FAILED), _task(FAILED), 0),
        (_task(RUNNING), _task(FAILED), 0),
        (_task(RUNNING, "w1"), _task(RUNNING, "w2"), 1),  # moved by a rebalance or a crash
        (_task("UNASSIGNED"), _task(RUNNING), 0),
    ],
)
def test_restart_rules(before: ConnectorStatus, after: ConnectorStatus, seen: int) -> None:
    assert restarts_seen((before,), (after,)) == ({("c", 0): 1} if seen else {})


def test_old_workers_list_names_and_malformed_answers_are_errors() -> None:
    assert parse_expanded(["b", "a"]) == ["a", "b"]
    assert parse_expanded({"gone": {"info": {}}}) == ()  # deleted between listing and status
    for bad in ({"x": 1}, "html", [1]):
        with pytest.raises(ConnectAnswerError):
            parse_expanded(bad)
    with pytest.raises(ConnectAnswerError):
        parse_status({"name": "x"})
    with pytest.raises(ConnectAnswerError):
        parse_root({"error_code": 404})


def test_a_state_connect_adds_later_gets_its_own_series() -> None:
    odd = ConnectView("c", "u", 0, connectors=(_task("PAUSING"),))
    found = samples(render_connect([ConnectReport(odd)]))
    assert (
        value(
            found, "kafka_connect_task_state", connect="c", connector="c", task="0", state="PAUSING"
        )
        == 1
    )
    assert (
        value(
            found, "kafka_connect_task_state", connect="c", connector="c", task="0", state=RUNNING
        )
        == 0
    )


def test_the_exposition_is_rendered_again_only_after_a_poll() -> None:
    cache = CachedExposition()
    first, second = recorded_reports()[:2]
    body = cache.get([first])
    assert cache.get([first]) is body  # a scrape between two polls reuses the text
    assert samples(body.decode()) == samples(render_connect([first]))
    assert cache.get([second]) is not body
    assert cache.get([]) == b""
