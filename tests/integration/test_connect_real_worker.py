"""The Connect watch against a real Kafka Connect cluster (tests/realstack).

Any worker (the harness's or a user's): the state sets agree with the worker's own REST answers
taken just before and just after the exporter's poll (a shared cluster's connectors may change
state in between). Only reads.

The harness's worker: a Debezium connector of the test's own is driven through each state the
worker can be put in (RUNNING, PAUSED, STOPPED, a FAILED task), and what the exporter serves for
each is checked against its rules (exporter/connect/: state sets, stall causes) and the inputs of
prometheus/rules/hes.yml's alerts, Debezium's `Connected` series (the worker's JMX agent, rules as
in tests/fixtures/connect-debezium) included: present while the task runs, gone once it FAILED.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.exporter.exposition import Samples, samples, value
from tests.realstack.connect_worker import ConnectWorker, connector_config
from tests.realstack.plugin import RealStack
from tests.realstack.targets import ConnectTarget
from tests.requirements import require
from vigia.exporter.connect.adapter import ConnectClient
from vigia.exporter.connect.collector import render_connect
from vigia.exporter.connect.model import STATES, parse_expanded
from vigia.exporter.connect.stall import CAUSES
from vigia.exporter.connect.watcher import ConnectWatcher
from vigia.launcher.mariadb import HesDatabase

pytestmark = pytest.mark.integration


def _listing(url: str) -> dict[str, tuple[str, dict[int, str], int]]:
    """{connector: (state, {task: state}, configured tasks)} straight from the worker."""
    answer = httpx.get(
        f"{url.rstrip('/')}/connectors",
        params=[("expand", "status"), ("expand", "info")],
        timeout=10,
    ).json()
    parsed = parse_expanded(answer)
    assert isinstance(parsed, tuple), "the worker does not expand (Kafka < 2.3)"
    return {c.name: (c.state, {t.id: t.state for t in c.tasks}, c.task_count) for c in parsed}


def test_state_sets_agree_with_the_workers_rest_answers(connect_target: ConnectTarget) -> None:
    url = connect_target.url
    before = _listing(url)
    report = ConnectWatcher(ConnectClient("it", url, timeout=10), interval=60).poll_once()
    after = _listing(url)
    assert report.view.up, report.view.error
    found = samples(render_connect([report]))
    assert value(found, "kafka_connect_worker_up", connect="it") == 1
    stable = before.keys() & after.keys()  # created or deleted meanwhile: either way is right
    by_name = {c.name: c for c in report.view.connectors}
    served = set(by_name)
    assert stable <= served <= before.keys() | after.keys()
    for name in stable:
        connector_states = {
            k[1]["state"]: v
            for k, v in found.items()
            if k[0] == "kafka_connect_connector_state" and k[1]["connector"] == name
        }
        assert sum(connector_states.values()) == 1, (name, connector_states)
        current = next(s for s, v in connector_states.items() if v == 1)
        assert current in (before[name][0], after[name][0]), name
        tasks = value(found, "kafka_connect_connector_tasks", connect="it", connector=name)
        assert tasks in (before[name][2], after[name][2]), name
        for task in by_name[name].tasks:
            assert task.state in (before[name][1].get(task.id), after[name][1].get(task.id))
            labels = {"connect": "it", "connector": name, "task": str(task.id)}
            assert value(found, "kafka_connect_task_state", **labels, state=task.state) == 1


@dataclass(frozen=True)
class Expected:
    """What the exporter serves for a connector in one state, by the rules of
    exporter/connect/ (state sets, stall causes) and prometheus/rules/hes.yml."""

    connector: str  # kafka_connect_connector_state{state=…} is 1 for this one alone
    tasks: tuple[str, ...]  # kafka_connect_task_state, per task id
    stall: str | None  # kafka_connect_connector_stalled's cause at 1 (None: every cause 0)
    connected: bool | None  # Debezium's Connected series present (None: not asserted)

    @property
    def failed(self) -> bool:
        """HesConnectorFailed's input: a FAILED connector or task series at 1."""
        return "FAILED" in (self.connector, *self.tasks)


RUNNING = Expected("RUNNING", ("RUNNING",), None, True)
PAUSED = Expected("PAUSED", ("PAUSED",), None, None)  # someone paused it: no stall
STOPPED = Expected("STOPPED", (), None, None)  # no tasks at all, and no stall either
TASK_FAILED = Expected("RUNNING", ("FAILED",), "failed", False)  # the recordings: series gone
STATES_CONNECTOR = "vigia-states"
STATES_USER = "vigia_states"
SETTLE_S = 180.0


class StatesWalk:
    """A Debezium connector of its own on the harness's worker and HES (the pipeline's
    `hes-measure` is left alone): reads nothing (no table matches), sends nothing."""

    def __init__(self, url: str, hes: HesDatabase, bootstrap: str) -> None:
        self.url = url.rstrip("/")
        self.hes = hes
        self.password = secrets.token_hex(8)
        config = {
            k: v
            for k, v in connector_config(bootstrap, hes).items()
            if not k.startswith("transforms")
        }
        config.update(
            {
                "database.user": STATES_USER,
                "database.password": self.password,
                "database.server.id": "5499",
                "topic.prefix": STATES_CONNECTOR,
                "table.include.list": "hes.vigia_states_no_such_table",
                "snapshot.mode": "no_data",
                "schema.history.internal.kafka.topic": f"{STATES_CONNECTOR}-schemahistory",
            }
        )
        self.config = config
        self.watcher = ConnectWatcher(ConnectClient("it", url, timeout=10), interval=60)

    def sql(self, statement: str, *args: str) -> None:
        connection = self.hes.admin()
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement, args)
        finally:
            connection.close()

    def create(self) -> None:
        account = f"'{STATES_USER}'@'{self.hes.host}'"
        self.sql(f"CREATE OR REPLACE USER {account} IDENTIFIED BY %s", self.password)
        self.sql(f"GRANT {_DEBEZIUM_GRANTS} TO {account}")
        self.call("PUT", "config", json=self.config, ok=(200, 201))

    def rotate_password(self) -> None:
        """What a DBA's rotation does: the running binlog session stays, the next login fails."""
        self.sql(f"ALTER USER '{STATES_USER}'@'{self.hes.host}' IDENTIFIED BY %s", "rotated")

    def call(self, method: str, path: str, ok: tuple[int, ...] = (202, 204), **kw: Any) -> None:
        answer = httpx.request(
            method, f"{self.url}/connectors/{STATES_CONNECTOR}/{path}", timeout=60, **kw
        )
        assert answer.status_code in ok, (method, path, answer.status_code, answer.text)

    def rest(self) -> tuple[str, tuple[str, ...]] | None:
        answer = httpx.get(f"{self.url}/connectors/{STATES_CONNECTOR}/status", timeout=10)
        if answer.status_code != 200:
            return None
        body = answer.json()
        tasks = sorted(body["tasks"], key=lambda t: t["id"])
        return body["connector"]["state"], tuple(t["state"] for t in tasks)

    def settle(self, expected: Expected) -> Samples:
        """The exporter's series from a poll between two REST answers that both show the
        expected state: waited for (Connect takes seconds to pause, stop or fail a task)."""
        want = (expected.connector, expected.tasks)
        deadline = time.monotonic() + SETTLE_S
        seen: object = None
        while time.monotonic() < deadline:
            seen = self.rest()
            if seen == want:
                report = self.watcher.poll_once()
                if self.rest() == want:
                    assert report.view.up, report.view.error
                    return samples(render_connect([report]))
            time.sleep(0.5)
        raise AssertionError(f"{STATES_CONNECTOR} not {want} within {SETTLE_S:g} s: {seen}")

    def close(self) -> None:
        self.watcher.client.close()
        httpx.delete(f"{self.url}/connectors/{STATES_CONNECTOR}", timeout=60)
        self.sql(f"DROP USER IF EXISTS '{STATES_USER}'@'{self.hes.host}'")


_DEBEZIUM_GRANTS = (
    "SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, BINLOG MONITOR ON *.*"
)


def _assert_served(found: Samples, expected: Expected) -> None:
    labels = {"connect": "it", "connector": STATES_CONNECTOR}

    def series(name: str) -> dict[tuple[tuple[str, str], ...], float]:
        return {
            tuple(sorted((k, v) for k, v in lab.items() if k not in labels)): val
            for (n, lab), val in found.items()
            if n == name and lab.get("connector") == STATES_CONNECTOR
        }

    states = {dict(k)["state"]: v for k, v in series("kafka_connect_connector_state").items()}
    assert states == {s: float(s == expected.connector) for s in STATES}, states
    tasks = series("kafka_connect_task_state")
    assert tasks == {
        (("state", s), ("task", str(i))): float(s == current)
        for i, current in enumerate(expected.tasks)
        for s in STATES
    }, tasks
    assert value(found, "kafka_connect_connector_tasks", **labels) == len(expected.tasks)
    stalled = {dict(k)["cause"]: v for k, v in series("kafka_connect_connector_stalled").items()}
    assert stalled == {c: float(c == expected.stall) for c in CAUSES}, stalled
    (info,) = series("kafka_connect_connector_config_info").items()
    assert dict(info[0]) == {
        "type": "source",
        "class": "io.debezium.connector.mysql.MySqlConnector",
        "topic_prefix": STATES_CONNECTOR,
    }
    # The alerts' inputs: HesConnectorFailed (a FAILED series at 1), HesConnectorStalled (a cause
    # at 1), HesCdcDisconnected (a Debezium class joined on topic_prefix).
    failed = max([states["FAILED"], *(v for k, v in tasks.items() if dict(k)["state"] == "FAILED")])
    assert (failed == 1) == expected.failed
    assert (max(stalled.values()) == 1) == (expected.stall is not None)


def _connected(jmx_url: str) -> bool:
    """Whether the worker's JMX agent serves Debezium's streaming Connected for the connector."""
    scrape = httpx.get(jmx_url, timeout=10).text
    return any(
        n == "debezium_mysql_connected"
        and lab.get("server") == STATES_CONNECTOR
        and lab.get("context") == "streaming"
        for n, lab in samples(scrape)
    )


def _wait_connected(jmx_url: str, expected: Expected) -> None:
    if expected.connected is None:
        return
    deadline = time.monotonic() + SETTLE_S
    while _connected(jmx_url) != expected.connected:
        assert time.monotonic() < deadline, (
            f"Debezium's Connected for {STATES_CONNECTOR} not "
            f"{'present' if expected.connected else 'absent'} within {SETTLE_S:g} s"
        )
        time.sleep(1.0)


def test_each_connect_state_is_served_by_its_rule(
    connect_worker: ConnectWorker, request: pytest.FixtureRequest
) -> None:
    """One Debezium connector driven through the states a real worker gives: RUNNING, PAUSED
    (PUT pause), STOPPED (PUT stop), and a FAILED task (its password rotated, the task
    restarted), each held until the exporter's poll is framed by two REST answers in it."""
    require(
        bool(connect_worker.jmx_url),
        "the JMX exporter agent beside the Kafka distribution",
        "put jmx_prometheus_javaagent-*.jar beside VIGIA_TEST_KAFKA_HOME (../shared/kafka has it)",
    )
    stack: RealStack = request.getfixturevalue("real_stack")
    hes, _ = stack.hes_and_connect()
    walk = StatesWalk(connect_worker.url, hes, stack.cluster().bootstrap)
    try:
        walk.create()
        for step, expected in (
            (None, RUNNING),
            ("pause", PAUSED),
            ("resume", RUNNING),
            ("stop", STOPPED),
            ("resume", RUNNING),
            ("fail", TASK_FAILED),
        ):
            if step == "fail":
                walk.rotate_password()
                walk.call("POST", "tasks/0/restart")
            elif step is not None:
                walk.call("PUT", step)
            _assert_served(walk.settle(expected), expected)
            _wait_connected(connect_worker.jmx_url, expected)
    finally:
        walk.close()
