"""The Connect adapter and /metrics, /api/v1/cluster end to end, against the recorded REST answers
served over HTTP on loopback, next to a Kafka collection from the recorded cluster."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import free_port
from tests.connect.recorded import RecordedConnect, recorded_connect
from tests.connect.test_connect_model import DENIED, REFUSED
from tests.exporter.exposition import samples, value
from tests.exporter.fake_kafka import FakeCluster
from tests.exporter.recorded import snapshot
from tests.hes_world import LOOK, World, watcher
from vigia.exporter.config import ConfigError, ConnectTarget, parse_config
from vigia.exporter.connect.adapter import ConnectClient
from vigia.exporter.connect.watcher import ConnectWatcher
from vigia.exporter.service import CollectionService
from vigia.exporter.web.app import create_app


@pytest.fixture
def service() -> Iterator[CollectionService]:
    adapter = FakeCluster(snapshot("healthy")).adapter()
    try:
        yield CollectionService(adapter.collect, interval=60, timeout=5)
    finally:
        adapter.close()


def _watcher(name: str, url: str, timeout: float = 5.0) -> ConnectWatcher:
    return ConnectWatcher(ConnectClient(name, url, timeout), interval=60)


def test_recorded_outage_through_the_rest_api_and_metrics(service: CollectionService) -> None:
    with recorded_connect("healthy") as worker:
        watcher = _watcher("hes", worker.url)
        app = create_app(service, manage_service=False, connect=[watcher])
        with TestClient(app) as client:
            service.collect_once()
            watcher.poll_once()
            found = samples(client.get("/metrics").text)
            assert value(found, "vigia_exporter_up") == 1
            assert value(found, "kafka_connect_worker_up", connect="hes") == 1
            measure = {"connect": "hes", "connector": "hes-measure", "task": "0"}
            assert value(found, "kafka_connect_task_state", **measure, state="RUNNING") == 1
            assert (
                value(
                    found,
                    "kafka_connect_connector_config_info",
                    connect="hes",
                    connector="hes-measure",
                    type="source",
                    topic_prefix="cdc",
                    **{"class": "io.debezium.connector.mysql.MySqlConnector"},
                )
                == 1
            )
            # One call each: the status of every connector came with the listing.
            assert worker.requests == ["/", "/connectors?expand=status&expand=info"]

            for state in ("task-failed", "task-failed-db-back", "recovered"):
                worker.state = state
                watcher.poll_once()
                found = samples(client.get("/metrics").text)
                document = client.get("/api/v1/cluster").json()
                if state != "recovered":
                    assert value(found, "kafka_connect_task_state", **measure, state="FAILED") == 1
                    (connect,) = document["connect"]
                    tasks = {c["name"]: c["tasks"][0] for c in connect["connectors"]}
                    assert tasks["hes-measure"]["trace_first_line"] == REFUSED
                    assert tasks["hes-broken"]["trace_first_line"] == DENIED
            assert value(found, "kafka_connect_task_state", **measure, state="RUNNING") == 1
            assert value(found, "kafka_connect_task_restarts_seen_total", **measure) == 1
            (connect,) = document["connect"]
            assert connect["up"] is True and connect["version"] == "4.3.0"
            assert connect["kafka_cluster_id"] == "jMBs6txRQfyywwIp1SezFA"
            assert document["probe"]["status"] == "disabled"  # the probe section is still there


def test_a_worker_without_expand_is_asked_per_connector(service: CollectionService) -> None:
    with recorded_connect("task-failed") as worker:
        worker.expand = False
        report = _watcher("connect", worker.url).poll_once()
        assert report.view.up, report.view.error
        assert [c.tasks[0].state for c in report.view.connectors] == ["FAILED", "FAILED"]
        assert "/connectors/hes-measure/status" in worker.requests


def test_connect_that_does_not_answer_is_a_fact_about_connect(service: CollectionService) -> None:
    hanging = RecordedConnect("healthy")
    hanging.hang = True
    hanging.start()
    try:
        down = _watcher("down", f"http://127.0.0.1:{free_port()}")
        slow = _watcher("slow", hanging.url, timeout=0.5)
        with recorded_connect("healthy") as worker:
            ok = _watcher("ok", worker.url)
            app = create_app(service, manage_service=False, connect=[down, slow, ok])
            with TestClient(app) as client:
                service.collect_once()
                started = time.monotonic()
                for w in (down, slow, ok):
                    w.poll_once()
                assert time.monotonic() - started < 3  # the hanging worker costs its timeout
                found = samples(client.get("/metrics").text)
                document = client.get("/api/v1/cluster").json()
        assert value(found, "vigia_exporter_up") == 1
        ups = {
            c: value(found, "kafka_connect_worker_up", connect=c) for c in ("down", "slow", "ok")
        }
        assert ups == {"down": 0, "slow": 0, "ok": 1}
        errors = {c["connect"]: c["error"] for c in document["connect"]}
        assert "ConnectError" in errors["down"] and "timed out" in errors["slow"]
        assert errors["ok"] is None
        # Nothing is known about the connectors of a worker that does not answer.
        assert not [k for k in found if k[1].get("connect") in ("down", "slow") and "state" in k[0]]
    finally:
        hanging.stop()


def test_one_timeout_bounds_the_whole_poll() -> None:
    """Four slow answers (root, listing, two statuses) do not add up beyond the timeout."""
    with recorded_connect("healthy") as worker:
        # 3.2 s in all, each answer within the 1 s timeout: only a bound on the whole poll
        # stops it near 1 s; the margin to 3.2 is for a loaded machine.
        worker.expand, worker.delay = False, 0.8
        started = time.monotonic()
        report = _watcher("slow", worker.url, timeout=1.0).poll_once()
        elapsed = time.monotonic() - started
    assert not report.view.up and "timed out" in (report.view.error or "")
    assert elapsed < 2.5, elapsed


def test_the_app_starts_and_stops_the_watchers(service: CollectionService) -> None:
    with recorded_connect("recovered") as worker:
        watcher = _watcher("connect", worker.url)
        with TestClient(create_app(service, connect=[watcher])) as client:
            deadline = time.monotonic() + 10
            while watcher.report is None and time.monotonic() < deadline:
                time.sleep(0.05)
            found = samples(client.get("/metrics").text)
            assert value(found, "kafka_connect_worker_up", connect="connect") == 1


def test_connect_urls_from_flags_and_environment() -> None:
    assert parse_config([], {}).connect_urls == ()
    assert parse_config(["--connect-url", "http://c:8083"], {}).connect_urls == (
        ConnectTarget("connect", "http://c:8083"),
    )
    both = parse_config(["--connect-url", "a=http://a:8083", "--connect-url", "b=https://b"], {})
    assert [t.name for t in both.connect_urls] == ["a", "b"]
    env = parse_config([], {"VIGIA_CONNECT_URLS": "x=http://x:1, y=http://y:2"})
    assert env.connect_urls == (ConnectTarget("x", "http://x:1"), ConnectTarget("y", "http://y:2"))
    flags_win = parse_config(["--connect-url", "http://f"], {"VIGIA_CONNECT_URLS": "http://e"})
    assert flags_win.connect_urls == (ConnectTarget("connect", "http://f"),)


@pytest.mark.parametrize(
    ("urls", "reason"),
    [
        (["c:8083"], "not an http:// or https:// URL"),
        (["http://a", "http://b"], "two URLs named 'connect'"),
        (["bad name=http://a"], "is not a name"),
    ],
)
def test_connect_url_mistakes_are_one_line_errors(urls: list[str], reason: str) -> None:
    argv = [a for u in urls for a in ("--connect-url", u)]
    with pytest.raises(ConfigError, match=reason):
        parse_config(argv, {})


def test_issue_23s_stall_through_metrics_and_the_json(service: CollectionService) -> None:
    """REST says RUNNING (recorded healthy) while nothing reaches the topic and the HES writes:
    /metrics and /api/v1/cluster name hes-measure stalled, `silent`; `connect_down` once the
    worker stops answering; nothing once rows move again."""
    world = World()
    source = watcher(world)
    with recorded_connect("healthy") as worker:
        connect = _watcher("connect", worker.url, timeout=1)
        app = create_app(service, manage_service=False, connect=[connect], source=source)
        with TestClient(app) as client:
            service.collect_once()
            connect.poll_once()

            def looks(seconds: float) -> tuple[dict[str, float], dict[str, object]]:
                for _ in range(int(seconds // LOOK)):
                    world.tick(LOOK)
                    source.watch_once()
                found = samples(client.get("/metrics").text)
                stalled = {
                    k[1]["cause"]: v
                    for k, v in found.items()
                    if k[0] == "kafka_connect_connector_stalled"
                    and k[1]["connector"] == "hes-measure"
                }
                return stalled, client.get("/api/v1/cluster").json()

            stalled, document = looks(2 * 60)
            assert set(stalled.values()) == {0} and document["source"]["flow"]["state"] == "moving"
            world.connector = False
            stalled, document = looks(60)
            assert stalled == {"failed": 0, "unassigned": 0, "connect_down": 0, "silent": 1}
            assert document["source"]["flow"]["state"] == "stalled"
            assert {"connector": "hes-measure", "stalled": True, "cause": "silent"} in (
                document["connect"][0]["stalls"]
            )
            worker.hang = True
            connect.poll_once()
            stalled, document = looks(LOOK)
            assert stalled == {"failed": 0, "unassigned": 0, "connect_down": 1, "silent": 0}
            assert document["connect"][0]["stalls"] == [
                {"connector": "hes-measure", "stalled": True, "cause": "connect_down"}
            ]
            world.connector = True
            stalled, document = looks(LOOK)
            assert set(stalled.values()) == {0}
