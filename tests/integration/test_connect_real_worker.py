"""The Connect watch against a real Kafka Connect cluster (tests/realstack: the harness's worker or
a user's), checked against the worker's own REST answers taken just before and just after the
exporter's poll (a shared cluster's connectors may change state in between). Only reads.

Where the worker's JMX agent is known (rules as in tests/fixtures/connect-debezium), Debezium's
`Connected` series is checked against the REST state:
present for a Debezium connector whose tasks all run, absent while one of its tasks is FAILED.
"""

from __future__ import annotations

import re

import httpx
import pytest

from exporter.connect.adapter import ConnectClient
from exporter.connect.collector import render_connect
from exporter.connect.model import parse_expanded
from exporter.connect.watcher import ConnectWatcher
from tests.exporter.exposition import samples, value
from tests.realstack.targets import ConnectTarget

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


def test_debezium_connected_is_present_exactly_for_running_tasks(
    connect_target: ConnectTarget,
) -> None:
    if not connect_target.jmx_url:
        pytest.skip("VIGIA_TEST_CONNECT_JMX_URL is not set: the worker's JMX agent is unknown")
    url = connect_target.url
    report = ConnectWatcher(ConnectClient("it", url, timeout=10), interval=60).poll_once()
    scrape = httpx.get(connect_target.jmx_url, timeout=10).text
    after = _listing(url)
    servers = set(re.findall(r'^debezium_\w+_connected\{[^}]*server="([^"]+)"', scrape, re.M))
    checked = 0
    for c in report.view.connectors:
        if not (c.connector_class or "").startswith("io.debezium.") or not c.topic_prefix:
            continue
        states = {t.state for t in c.tasks}
        if states != {s for s in after[c.name][1].values()}:
            continue  # it changed while we looked
        if states == {"RUNNING"}:
            assert c.topic_prefix in servers, c.name
        elif states == {"FAILED"}:
            assert c.topic_prefix not in servers, c.name  # the recordings' lesson: gone, not 0
        checked += 1
    if not checked:
        pytest.skip("no Debezium connector with a stable state on this Connect cluster")
