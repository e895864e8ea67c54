"""The HES leg end to end on real parts (tests/realstack: the harness's, or a user's own): rows
upserted into the HES with its writer user (the exporter reads with the read-only one) → Debezium on
a Kafka Connect worker (connector `hes-measure` as in docker/connect/connector-hes-measure.json) →
topic `measure` on a real cluster → the ingest job (--available-now, its own checkpoint and group)
→ Parquet, while the exporter watches every hop.

Everything is shared and busy: this run's meters carry a random prefix (`it<run>-`), counts are
compared as deltas against values read before the insert. The run's consumer group is deleted at
the end; its 80 rows stay in the HES (and flow on like any other), because the HES's day counts
must never go down for other readers (tests/integration/test_hes_real_source.py relies on it).

Where the HES can be stopped and started and the worker's JMX agent is known, the outage drill
(issue 23 §3) stops the database for 70 s and expects Debezium's `Connected` and `vigia_hes_up` to
drop within one collection; the task, restarted through REST meanwhile, goes FAILED and stays so
after the HES is back until it is restarted through REST again. What the exporter served at each
moment is recorded (tests/realstack/moments.py; tests/fixtures/connect-debezium/drills/).

No stall may be seen (issue 23) while rows flow, nor while the HES cannot be read (nothing shows a
row the topic lacks then): every scrape serves `kafka_connect_connector_stalled` 0 for
`hes-measure` whatever the cause, and the flow verdict in /api/v1/cluster is never `stalled`. The
one stall is the drill's FAILED task, cause `failed`.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from tests.exporter.exposition import Samples, value
from tests.exporter.live import Running, exporter_process, wait_for
from tests.integration.hes_drill import every_row_once_in_parquet
from tests.integration.hes_leg import (
    CONNECT,
    CONNECTOR,
    JMX,
    KAFKA,
    ONE_COLLECTION,
    TOPIC,
    WRITER,
    Key,
    env,  # noqa: F401
    exporter_args,
    insert,
    keys_of,
    topic_ends,
)
from tests.realstack.moments import Moments
from tests.realstack.targets import HesTarget
from vigia.common import kafka_config
from vigia.common.hes import UPSERT, connect, naive_utc, parse_dsn
from vigia.exporter.connect.stall import CAUSES
from vigia.exporter.model.pipeline_flow import IDLE, MOVING, STALLED
from vigia.exporter.model.pipeline_hops import HOPS
from vigia.ingest.schema import MAGNITUDES

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DEADLINE = 240.0  # any one condition; CI's machine runs two drills at a load of 30 and more
METERS, PERIODS = 20, 4


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
def exporter(
    env: dict[str, str],  # noqa: F811
    run_id: str,
    tmp_path: Path,
) -> Iterator[Running]:
    group = f"vigia-it-hes-{run_id}"
    with exporter_process(tmp_path / "exporter.log", *exporter_args(env, group)) as running:
        # The HES watch and the Connect watchers serve before the first Kafka collection has
        # completed; /api/v1/cluster answers 503 until it has (at load 25 that took long enough).
        wait_for(
            lambda: running.get("/readyz").status_code == 200,
            DEADLINE,
            "the exporter's first collection",
        )
        yield running


def _scrape(running: Running) -> Samples:
    """/metrics, which must not say that the connector stalls."""
    found = running.metrics()
    stalls = _stalls(found)
    assert not any(stalls.values()), f"{CONNECTOR} stalled: {stalls}"
    return found


def _stalls(found: Samples) -> dict[str, float]:
    return {
        labels["cause"]: v
        for (name, labels), v in found.items()
        if name == "kafka_connect_connector_stalled" and labels["connector"] == CONNECTOR
    }


def _sample(running: Running, name: str, **labels: str) -> float | None:
    return value(_scrape(running), name, **labels)


def _flow(running: Running) -> str:
    flow = running.get("/api/v1/cluster").json()["source"]["flow"]
    assert flow["state"] != STALLED, flow
    return str(flow["state"])


def _not_stalled(running: Running) -> None:
    """The connector's stall series are served, each 0, and the flow verdict is not stalled."""
    assert set(_stalls(_scrape(running))) == set(CAUSES)
    _flow(running)


def _flow_settles(running: Running) -> None:
    """Once the rows are on the topic: moving, or idle since (pending for a look or two after the
    HES wrote), never passing through stalled."""
    wait_for(lambda: _flow(running) in (MOVING, IDLE), DEADLINE, "the flow moving or idle")


def _served(running: Running, name: str, **labels: str) -> float:
    """The series' value once the exporter serves it (0 is a value too)."""
    found = wait_for(
        lambda: [v] if (v := _sample(running, name, **labels)) is not None else None,
        DEADLINE,
        f"{name}{labels or ''}",
    )
    assert isinstance(found, list)
    return float(found[0])


def _topic_end(running: Running) -> int:
    return int(
        sum(
            v
            for (name, labels), v in _scrape(running).items()
            if name == "kafka_topic_partition_current_offset" and labels["topic"] == TOPIC
        )
    )


def test_hes_rows_reach_parquet_and_every_hop_agrees(
    env: dict[str, str],  # noqa: F811
    run_id: str,
    exporter: Running,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    dsn = parse_dsn(env[WRITER])
    options = kafka_config.from_env()
    group, prefix = f"vigia-it-hes-{run_id}", f"it{run_id}-"
    now = time.time()
    day = dt.datetime.fromtimestamp(now, dt.UTC).date()
    stamp = naive_utc(int(now))
    rows = [
        (f"{prefix}{m:03d}", day.isoformat(), p, MAGNITUDES[0], 1.0 + p, stamp.isoformat(" "))
        for m in range(METERS)
        for p in range(1, PERIODS + 1)
    ]
    inserted: Counter[Key] = Counter((r[0], r[1], r[2], r[3]) for r in rows)

    rows_before = _served(exporter, "vigia_hes_day_rows", measure_date=day.isoformat())
    assert _served(exporter, "kafka_connect_worker_up", connect="it") == 1
    _not_stalled(exporter)
    start = topic_ends(env[KAFKA], options)

    writer = connect(dsn, 30, autocommit=False)
    try:
        with writer.cursor() as cursor:
            cursor.executemany(UPSERT, rows)
        writer.commit()

        # The job reads from the offsets taken before the insert; each run reads what arrived.
        every_row_once_in_parquet(env, group, prefix, start, list(inserted), tmp_path, request)

        # The HES hop: the watch's count grew by the rows, never past the DB's own count.
        def day_rows() -> float | None:
            return _sample(exporter, "vigia_hes_day_rows", measure_date=day.isoformat())

        wait_for(
            lambda: (day_rows() or 0) >= rows_before + len(rows),
            DEADLINE,
            f"vigia_hes_day_rows{{measure_date={day}}} to grow by {len(rows)}",
        )
        served = day_rows()
        with writer.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM measure WHERE measure_date = %s", (day,))
            (db_rows,) = cursor.fetchone()
        writer.commit()
        assert served is not None and served <= db_rows
        wait_for(
            lambda: (_sample(exporter, "vigia_hes_newest_row_timestamp_seconds") or 0) >= int(now),
            DEADLINE,
            "vigia_hes_newest_row_timestamp_seconds to reach the rows' ts",
        )

        # The topic hop: at least one message per row (Connect is at-least-once), and the
        # exporter's end offsets never past the topic's own, read just after.
        wait_for(
            lambda: _topic_end(exporter) >= sum(start.values()) + len(rows),
            DEADLINE,
            f"{TOPIC}'s end offsets to grow by {len(rows)}",
        )
        end_served = _topic_end(exporter)
        assert end_served <= sum(topic_ends(env[KAFKA], options).values())
        _not_stalled(exporter)
        _flow_settles(exporter)

        # Freshness: both hops served, finite, never negative.
        def hop_lags() -> dict[str, float] | None:
            lags = {h: _sample(exporter, "vigia_pipeline_hop_lag_seconds", hop=h) for h in HOPS}
            known = {h: v for h, v in lags.items() if v is not None}
            return known if len(known) == len(HOPS) else None

        lags = wait_for(hop_lags, DEADLINE, "every hop's lag")
        assert isinstance(lags, dict)
        assert all(math.isfinite(v) and v >= 0 for v in lags.values()), lags
        _not_stalled(exporter)
        _flow_settles(exporter)
    finally:
        writer.close()
        kafka = AdminClient({"bootstrap.servers": env[KAFKA], **options})
        kafka.delete_consumer_groups([group], request_timeout=30)[group].exception(timeout=30)


def _connected(jmx_url: str, server: str) -> float | None:
    """Debezium's `Connected` for `server` in the worker's scrape; None when absent."""
    scrape = httpx.get(jmx_url, timeout=5).text
    pattern = rf'^debezium_\w+_connected\{{[^}}]*server="{re.escape(server)}"[^}}]*\}} (\S+)'
    found = re.search(pattern, scrape, re.M)
    return None if found is None else float(found.group(1))


@pytest.fixture
def outage(
    env: dict[str, str],  # noqa: F811
    hes_target: HesTarget,
) -> tuple[Callable[[], None], ...]:
    if hes_target.stop is None or hes_target.start is None or not env[JMX]:
        pytest.skip(
            "VIGIA_TEST_HES_STOP/_START or VIGIA_TEST_CONNECT_JMX_URL not set: cannot stop the "
            "HES nor see Debezium's Connected"
        )
    return hes_target.stop, hes_target.start


def _task_state(connect_url: str) -> str | None:
    """Task 0's state in the worker's own REST answer; None while it has no task."""
    status = httpx.get(f"{connect_url}/connectors/{CONNECTOR}/status", timeout=10)
    tasks = status.raise_for_status().json()["tasks"]
    return str(tasks[0]["state"]) if tasks else None


def _restart_task(connect_url: str) -> int:
    return httpx.post(
        f"{connect_url}/connectors/{CONNECTOR}/tasks/0/restart", timeout=60
    ).status_code


def _served_state(running: Running, state: str) -> float | None:
    labels = {"connect": "it", "connector": CONNECTOR, "task": "0", "state": state}
    return value(running.metrics(), "kafka_connect_task_state", **labels)


# Issue 23's drill: the HES down this long, past the binlog client's first keepalive (60 s).
OUTAGE = 70.0


def test_a_stopped_hes_shows_within_one_collection_and_a_task_restarted_meanwhile_stays_failed(
    env: dict[str, str],  # noqa: F811
    outage: tuple[Callable[[], None], ...],
    exporter: Running,
    run_id: str,
    tmp_path: Path,
) -> None:
    """The HES stopped for 70 s: Debezium's `Connected` and `vigia_hes_up` drop within one
    collection, and nothing says stalled. The task restarted through REST while the HES is down
    goes FAILED, the exporter says so (task state, stall cause `failed`), and it stays FAILED once
    the HES is back and has written rows, until the test restarts it through REST: then RUNNING,
    and the rows written meanwhile reach the topic."""
    stop_hes, start_hes = outage
    url = env[CONNECT].rstrip("/")
    moments = Moments(tmp_path / "hes-stopped-70s", exporter, url, TOPIC, env[JMX])
    config = httpx.get(f"{url}/connectors/{CONNECTOR}/config", timeout=10)
    server = config.raise_for_status().json()["topic.prefix"]
    wait_for(lambda: _sample(exporter, "vigia_hes_up") == 1, DEADLINE, "vigia_hes_up 1")
    wait_for(lambda: _connected(env[JMX], server) == 1, DEADLINE, "Debezium Connected 1")
    wait_for(lambda: _served_state(exporter, "RUNNING") == 1, DEADLINE, "the task RUNNING")
    _not_stalled(exporter)
    moments.record("healthy")

    stop_hes()
    stopped = time.monotonic()
    moments.mark("HES stopped")
    try:
        wait_for(
            lambda: _connected(env[JMX], server) in (0, None),
            ONE_COLLECTION,
            "Debezium Connected 0 or absent",
        )
        left = max(0.5, stopped + ONE_COLLECTION - time.monotonic())
        wait_for(lambda: _sample(exporter, "vigia_hes_up") == 0, left, "vigia_hes_up 0")
        _not_stalled(exporter)  # a HES that cannot be read shows no row the topic lacks
        moments.record("hes-down")

        code = _restart_task(url)
        moments.mark(f"POST tasks/0/restart while the HES is down: {code}")
        assert code in (202, 204), code
        wait_for(lambda: _task_state(url) == "FAILED", DEADLINE, "the task FAILED in REST")
        moments.mark("the task FAILED in REST")
        wait_for(lambda: _served_state(exporter, "FAILED") == 1, DEADLINE, "FAILED served")
        assert _stalls(exporter.metrics()) == {c: float(c == "failed") for c in CAUSES}
        # The failed task took Debezium's MBeans with it (the recordings' lesson: gone, not 0).
        assert _connected(env[JMX], server) is None
        # The worker's JMX status says failed (HesConnectorFailed without --connect-url).
        wait_for(
            lambda: _jmx_task_status(env[JMX]) == "failed", ONE_COLLECTION, "JMX status failed"
        )
        moments.record("task-failed-hes-down")
        time.sleep(max(0.0, stopped + OUTAGE - time.monotonic()))
    finally:
        start_hes()
    moments.mark("HES started")

    wait_for(lambda: _sample_any(exporter, "vigia_hes_up") == 1, DEADLINE, "vigia_hes_up 1 again")
    end_before = _topic_end_any(exporter)
    rows, stamp = 10, int(time.time())
    insert(env[WRITER], keys_of(f"it{run_id}-", 0, rows, stamp), stamp)
    moments.mark(f"{rows} rows written to the HES")
    wait_for(
        lambda: (_sample_any(exporter, "vigia_hes_newest_row_timestamp_seconds") or 0) >= stamp,
        DEADLINE,
        "the exporter to read the new rows",
    )
    # The HES is up and has rows to move: the task still FAILED, for a collection more, and
    # nothing reached the topic.
    until = time.monotonic() + ONE_COLLECTION
    while time.monotonic() < until:
        assert _task_state(url) == "FAILED"
        assert _served_state(exporter, "FAILED") == 1
        assert _stalls(exporter.metrics())["failed"] == 1
        time.sleep(1)
    assert _topic_end_any(exporter) == end_before
    moments.record("task-failed-hes-back")

    code = _restart_task(url)
    moments.mark(f"POST tasks/0/restart with the HES back: {code}")
    assert code in (202, 204), code
    wait_for(lambda: _served_state(exporter, "RUNNING") == 1, DEADLINE, "the task RUNNING")
    wait_for(
        lambda: _topic_end_any(exporter) >= end_before + rows,
        DEADLINE,
        f"{TOPIC}'s end offsets to grow by the {rows} rows",
    )
    moments.mark("the rows reached the topic")
    wait_for(lambda: _connected(env[JMX], server) == 1, DEADLINE, "Debezium Connected 1 again")
    _not_stalled(exporter)
    _flow_settles(exporter)
    moments.record("recovered")


def _jmx_task_status(jmx_url: str) -> str | None:
    """The worker's own `kafka_connect_task_status` for task 0 (the state at 1), if served."""
    scrape = httpx.get(jmx_url, timeout=5).text
    pattern = (
        rf'^kafka_connect_task_status\{{connector="{CONNECTOR}",status="(\w+)",task="0",?\}} 1'
    )
    found = re.search(pattern, scrape, re.M)
    return None if found is None else found.group(1)


def _sample_any(running: Running, name: str, **labels: str) -> float | None:
    """A series' value whatever the stall series say (the drill expects some)."""
    return value(running.metrics(), name, **labels)


def _topic_end_any(running: Running) -> int:
    return int(
        sum(
            v
            for (name, labels), v in running.metrics().items()
            if name == "kafka_topic_partition_current_offset" and labels["topic"] == TOPIC
        )
    )
