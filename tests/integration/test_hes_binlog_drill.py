"""The HES purges binlog a stopped connector has not read: the exporter counts the margin down,
says at_risk before the purge and lost after it (counted once), and names the connector's failure
when it resumes. A schema history topic with a finite retention is flagged.

Real components throughout: its own MariaDB (launcher.mariadb, with a short
binlog_expire_logs_seconds set at runtime and the binlog rotated with FLUSH BINARY LOGS), a
connector of its own on the harness's Connect worker (a fresh name, server id and topic prefix;
the harness's `hes-measure` and its HES are not touched), the harness's Kafka (Connect's offsets
topic), and the exporter as a process. Afterwards the connector is stopped, its offsets deleted
and the connector deleted, so the shared worker is as it was. Prints the timeline.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import free_port
from tests.exporter.exposition import samples, value
from tests.exporter.live import Running, exporter_process, wait_for
from tests.realstack.connect_worker import ConnectWorker, connector_config
from vigia.launcher.mariadb import HesDatabase

EXPIRE = 60  # seconds: binlog_expire_logs_seconds for the drill
FLOOR = 30  # --binlog-risk-floor
ROUND = 2.0  # --hes-interval and --binlog-interval
OFFSETS_TOPIC = "cdc-connect-offsets"  # docker/connect/worker-distributed.properties


@pytest.fixture
def own_hes(tmp_path: Path) -> Iterator[HesDatabase]:
    hes = HesDatabase(tmp_path / "hes", free_port())
    hes.start()
    try:
        yield hes
    finally:
        hes.close()


def _sql(hes: HesDatabase, *statements: str) -> list[Any]:
    connection = hes.admin()
    try:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            return list(cursor.fetchall())
    finally:
        connection.close()


def _write(hes: HesDatabase, n: int) -> None:
    meter = f"M{n:07d}"
    _sql(
        hes,
        "INSERT INTO hes.measure (meter, measure_date, period, magnitude, value, ts) VALUES "
        f"('{meter}', UTC_DATE(), 1, 'AI', {n}, UTC_TIMESTAMP())",
    )


def _binlog(exporter: Running) -> dict[str, Any]:
    answer = exporter.get("/api/v1/cluster")
    if answer.status_code != 200:
        return {}
    source = answer.json().get("source") or {}
    return source.get("binlog") or {}


def _task_trace(url: str, name: str) -> str | None:
    status = httpx.get(f"{url}/connectors/{name}/status", timeout=10).json()
    tasks = status.get("tasks") or []
    return next((t.get("trace") for t in tasks if t.get("state") == "FAILED"), None)


def _until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    return wait_for(check, timeout, what)


def test_binlog_margin_counts_down_then_lost_once_and_the_failure_is_named(
    tmp_path: Path,
    own_hes: HesDatabase,
    connect_worker: ConnectWorker,
    real_kafka_bootstrap: str,
) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix = f"binlog-drill-{run}", f"drill{run}"
    history = f"{prefix}-schemahistory"
    url = connect_worker.url
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap})
    # The schema history topic created beforehand with a finite retention: the exporter flags it
    # (Debezium accepts an existing topic whatever its retention).
    created = admin.create_topics(
        [NewTopic(history, 1, 3, config={"retention.ms": "604800000"})], request_timeout=30
    )
    created[history].result(timeout=60)
    config = connector_config(real_kafka_bootstrap, own_hes)
    config.update(
        {
            "database.password": own_hes.passwords["connect"],
            "database.server.id": str(5400 + int(run[:3], 16) % 500 + 100),
            "topic.prefix": prefix,
            "schema.history.internal.kafka.topic": history,
        }
    )
    timeline: list[str] = []
    started = time.monotonic()

    def note(event: str) -> None:
        timeline.append(f"{time.monotonic() - started:7.1f} s  {event}")
        print(timeline[-1])

    _sql(own_hes, f"SET GLOBAL binlog_expire_logs_seconds = {EXPIRE}")
    for n in range(5):
        _write(own_hes, n)
    answer = httpx.put(f"{url}/connectors/{name}/config", json=config, timeout=60)
    assert answer.status_code in (200, 201), answer.text
    try:
        note(f"connector {name} registered on the harness's worker")
        args = (
            f"--bootstrap-servers={real_kafka_bootstrap}",
            f"--hes-dsn={own_hes.dsn('reader')}",
            f"--hes-interval={ROUND}",
            f"--binlog-interval={ROUND}",
            f"--binlog-risk-floor={FLOOR}",
            "--catchup-window=20",
            f"--collection-interval={ROUND}",
            "--collection-timeout=8",
            f"--connect-url=it={url}",
            f"--connect-offsets-topic={OFFSETS_TOPIC}",
            f"--pipeline-connector={name}",
            f"--pipeline-topic={prefix}.hes.measure",
            f"--topic-include=^({prefix}.*|measure)$",
        )
        with exporter_process(tmp_path / "exporter.log", *args) as exporter:
            running = _until(
                lambda: _binlog(exporter).get("state") == "ok" and _binlog(exporter),
                180,
                "the running connector's binlog state ok",
            )
            note(
                f"running: state ok, file {running['file']}, margin {running['margin']} "
                f"(expire {running['expire_seconds']:g} s)"
            )
            unsafe = _until(
                lambda: {
                    dict(labels)["reason"]
                    for (family, labels), v in samples(exporter.get("/metrics").text).items()
                    if family == "vigia_hes_schema_history_unsafe"
                    and dict(labels)["connector"] == name
                    and v == 1
                },
                120,
                "the schema history check of the drill's connector",
            )
            assert unsafe == {"retention_ms"}
            note(f"schema history {history} flagged: {sorted(unsafe)}")

            stop = httpx.put(f"{url}/connectors/{name}/stop", timeout=30)
            assert stop.status_code in (202, 204), stop.text
            _until(
                lambda: (
                    httpx.get(f"{url}/connectors/{name}/status", timeout=10).json()["connector"][
                        "state"
                    ]
                    == "STOPPED"
                ),
                60,
                "the connector STOPPED",
            )
            note("connector stopped (PUT /stop); rows keep being written")
            _write(own_hes, 100)
            # A look that sees the connector's file still open, then the rotation.
            before = _binlog(exporter)["checked_at"]
            _until(lambda: _binlog(exporter)["checked_at"] > before, 30, "a look")
            flush_before = time.time()
            _sql(own_hes, "FLUSH BINARY LOGS")
            flush_after = time.time()
            files = [row[0] for row in _sql(own_hes, "SHOW BINARY LOGS")]
            note(f"FLUSH BINARY LOGS: the connector's file is closed; files {files}")

            seen_at_risk = None
            n = 200
            countdown: list[tuple[float, float, str]] = []
            deadline = time.monotonic() + EXPIRE + 60
            while time.monotonic() < deadline:
                _write(own_hes, n)
                n += 1
                look = _binlog(exporter)
                margin = (look.get("margin") or {}).get("seconds")
                if look.get("checked_at", 0) > flush_after and margin is not None:
                    checked = look["checked_at"]
                    # The server purges the file once its mtime (the rotation, within
                    # [flush_before, flush_after]) is EXPIRE seconds old: the true margin is in
                    # [true_min, true_max].
                    true_min = EXPIRE - (checked - flush_before)
                    true_max = EXPIRE - (checked - flush_after)
                    if not countdown or countdown[-1][0] != checked:
                        countdown.append((checked, margin, look["state"]))
                        note(
                            f"state {look['state']}, margin {margin:.1f} s (true "
                            f"{true_min:.1f}–{true_max:.1f} s), {look['margin']['method']}"
                        )
                    # Past the expiry, until the next rotation purges the file, it says 0 s.
                    assert margin <= max(0.0, true_min) + 1, "not a lower bound"
                    assert margin >= true_max - 2 * ROUND - 1, "not within a round"
                    if look["state"] == "at_risk" and seen_at_risk is None:
                        seen_at_risk = checked
                if time.time() > flush_after + EXPIRE + 1:
                    break
                time.sleep(ROUND / 2)
            assert seen_at_risk is not None and seen_at_risk < flush_before + EXPIRE
            assert len(countdown) >= 5
            note("the file's expiry has passed: rotating again, MariaDB purges it at rotation")

            gone: dict[str, Any] = {}
            deadline = time.monotonic() + 60
            while gone.get("state") != "lost":
                assert time.monotonic() < deadline, f"no state lost: {gone}"
                _sql(own_hes, "FLUSH BINARY LOGS")
                time.sleep(ROUND)
                gone = _binlog(exporter)
            files = [row[0] for row in _sql(own_hes, "SHOW BINARY LOGS")]
            assert gone["file"] not in files
            assert gone["losses"] == 1
            note(f"lost: {gone['reason']}; files now {files}; losses {gone['losses']}")
            metrics = samples(exporter.get("/metrics").text)
            assert value(metrics, "vigia_hes_binlog_losses_total", connector=name) == 1
            assert (
                value(metrics, "vigia_hes_binlog_retention_state", connector=name, state="lost")
                == 1
            )
            # Counted once: more looks, more rotations, still one.
            after = _binlog(exporter)["checked_at"]
            _sql(own_hes, "FLUSH BINARY LOGS")
            _until(lambda: _binlog(exporter)["checked_at"] > after + ROUND, 30, "two more looks")
            assert _binlog(exporter)["losses"] == 1

            resume = httpx.put(f"{url}/connectors/{name}/resume", timeout=30)
            assert resume.status_code in (202, 204), resume.text
            note("connector resumed")
            trace = _until(lambda: _task_trace(url, name), 120, "the resumed task FAILED")

            def named() -> str | None:
                for c in exporter.get("/api/v1/cluster").json()["connect"][0]["connectors"]:
                    for t in c["tasks"] if c["name"] == name else ():
                        if t["state"] == "FAILED" and t["trace_first_line"]:
                            return str(t["trace_first_line"])
                return None

            first_line = _until(named, 60, "the exporter naming the failure")
            assert "no longer available" in trace, trace[:500]
            note(f"the task FAILED; the exporter says: {first_line}")
    finally:
        _clean_up(url, name, admin, [history, f"{prefix}.hes.measure"])
        print("\n".join(["timeline:", *timeline]))


def _clean_up(url: str, name: str, admin: AdminClient, topics: list[str]) -> None:
    """Leaves the shared worker as it was: no connector, no offsets of the drill's."""
    httpx.put(f"{url}/connectors/{name}/stop", timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = httpx.get(f"{url}/connectors/{name}/status", timeout=10)
        if state.status_code != 200 or state.json()["connector"]["state"] == "STOPPED":
            break
        time.sleep(0.5)
    httpx.delete(f"{url}/connectors/{name}/offsets", timeout=30)
    httpx.delete(f"{url}/connectors/{name}", timeout=30)
    for future in admin.delete_topics(topics, request_timeout=30).values():
        with contextlib.suppress(KafkaException):  # already gone: nothing to clean
            future.result(timeout=60)
