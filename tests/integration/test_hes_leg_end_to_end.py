"""The HES leg end to end on real parts (tests/realstack: the harness's, or a user's own): rows
upserted into the HES with its writer user (the exporter reads with the read-only one) → Debezium on
a Kafka Connect worker (connector `hes-measure` as in docker/connect/connector-hes-measure.json) →
topic `measure` on a real cluster → the ingest job (--available-now, its own checkpoint and group)
→ Parquet, while the exporter watches every hop.

Everything is shared and busy: this run's meters carry a random prefix (`it<run>-`), counts are
compared as deltas against values read before the insert. The run's consumer group is deleted at
the end; its 80 rows stay in the HES (and flow on like any other), because the HES's day counts
must never go down for other readers (tests/integration/test_hes_real_source.py relies on it).

Where the HES can be stopped and started and the worker's JMX agent is known, the outage test
stops the database and expects Debezium's `Connected` and `vigia_hes_up` to drop within one
collection.

Neither test may see a stall (issue 23): every scrape of the exporter serves
`kafka_connect_connector_stalled` 0 for `hes-measure` whatever the cause, and the flow verdict in
/api/v1/cluster is never `stalled` — while rows flow, nor while the HES cannot be read (nothing
shows a row the topic lacks then).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("pyspark", reason="pyspark (the ingest extra) is not installed")

import pyarrow.dataset as ds
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from common import kafka_config
from common.hes import UPSERT, connect, naive_utc, parse_dsn
from exporter.connect.stall import CAUSES
from exporter.model.pipeline_flow import IDLE, MOVING, STALLED
from exporter.model.pipeline_hops import HOPS
from ingest.config import IngestConfig
from ingest.job import IngestJob, preflight_kafka
from ingest.kafka_source.adapter import KafkaAdmin
from ingest.kafka_source.offsets import to_json
from ingest.metrics import IngestMetrics
from ingest.schema import MAGNITUDES, MEASURE_KEY_COLUMNS
from tests.exporter.exposition import Samples, value
from tests.exporter.live import Running, exporter_process, wait_for
from tests.ingest.conftest import spark  # noqa: F401
from tests.realstack.targets import ConnectTarget, HesTarget, KafkaTarget

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CONNECT, HES, WRITER, KAFKA, JMX = "connect", "hes", "writer", "kafka", "jmx"
TOPIC = "measure"  # where the connector's RegexRouter sends cdc.hes.measure
CONNECTOR = "hes-measure"
DEADLINE = 120.0
HES_INTERVAL = 2  # the exporter's --hes-interval and --hes-count-interval
COLLECTION_TIMEOUT = 5
# One look at the HES: the interval, its queries' timeout, and a scrape.
ONE_COLLECTION = HES_INTERVAL + COLLECTION_TIMEOUT + 3
METERS, PERIODS = 20, 4


@pytest.fixture
def env(
    kafka_target: KafkaTarget, connect_target: ConnectTarget, hes_target: HesTarget
) -> dict[str, str]:
    if not hes_target.writer_dsn:
        pytest.skip("VIGIA_TEST_HES_WRITER_DSN is not set: nothing may insert into the HES")
    return {
        KAFKA: kafka_target.bootstrap,
        CONNECT: connect_target.url,
        JMX: connect_target.jmx_url,
        HES: hes_target.dsn,  # the exporter's read-only user, as in test_hes_real_source.py
        WRITER: hes_target.writer_dsn,
    }


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
def exporter(env: dict[str, str], run_id: str, tmp_path: Path) -> Iterator[Running]:
    group = f"vigia-it-hes-{run_id}"
    with exporter_process(
        tmp_path / "exporter.log",
        f"--bootstrap-servers={env[KAFKA]}",
        f"--hes-dsn={env[HES]}",
        f"--hes-interval={HES_INTERVAL}",
        f"--hes-count-interval={HES_INTERVAL}",
        f"--collection-timeout={COLLECTION_TIMEOUT}",
        f"--collection-interval={HES_INTERVAL}",
        f"--connect-url=it={env[CONNECT]}",
        f"--pipeline-topic={TOPIC}",
        f"--pipeline-group={group}",
        f"--topic-include=^{TOPIC}$",
        f"--group-include=^{re.escape(group)}$",
    ) as running:
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


Key = tuple[str, str, int, str]


def _stored_keys(output: Path, prefix: str) -> Counter[Key]:
    if not output.exists():
        return Counter()
    table = ds.dataset(output, partitioning="hive").to_table(columns=list(MEASURE_KEY_COLUMNS))
    return Counter(
        (row["meter"], str(row["measure_date"]), int(row["period"]), row["magnitude"])
        for row in table.to_pylist()
        if row["meter"].startswith(prefix)
    )


def _ingest(session: SparkSession, config: IngestConfig) -> None:
    IngestJob(session, config, IngestMetrics(config.query_name), preflight_kafka(config)).run()


def test_hes_rows_reach_parquet_and_every_hop_agrees(
    env: dict[str, str],
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
    start = _ends(env[KAFKA], options)

    writer = connect(dsn, 30, autocommit=False)
    try:
        with writer.cursor() as cursor:
            cursor.executemany(UPSERT, rows)
        writer.commit()

        # The job reads from the offsets taken before the insert; each run reads what arrived.
        session: SparkSession = request.getfixturevalue("spark")
        config = IngestConfig(
            bootstrap_servers=env[KAFKA],
            kafka_options=options,
            topic=TOPIC,
            group_id=group,
            output=str(tmp_path / "measure"),
            quarantine=str(tmp_path / "quarantine"),
            checkpoint=str(tmp_path / "checkpoint"),
            available_now=True,
            starting_offsets=json.dumps(to_json(start)),
            metrics_port=0,
        )
        deadline = time.monotonic() + DEADLINE
        stored = _stored_keys(Path(config.output), prefix)
        while set(stored) != set(inserted) and time.monotonic() < deadline:
            _ingest(session, config)
            stored = _stored_keys(Path(config.output), prefix)
        assert stored == inserted  # every key stored, exactly once

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
        assert end_served <= sum(_ends(env[KAFKA], options).values())
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


def _ends(bootstrap: str, options: dict[str, str]) -> dict[tuple[str, int], int]:
    """The topic's end offsets straight from the cluster (no group is touched)."""
    admin = KafkaAdmin(bootstrap, options, "vigia-it-hes-unused", 30)
    try:
        return admin.topic_watermarks([TOPIC])[1]
    finally:
        admin.close()


def _connected(jmx_url: str, server: str) -> float | None:
    """Debezium's `Connected` for `server` in the worker's scrape; None when absent."""
    scrape = httpx.get(jmx_url, timeout=5).text
    pattern = rf'^debezium_\w+_connected\{{[^}}]*server="{re.escape(server)}"[^}}]*\}} (\S+)'
    found = re.search(pattern, scrape, re.M)
    return None if found is None else float(found.group(1))


@pytest.fixture
def outage(env: dict[str, str], hes_target: HesTarget) -> tuple[Callable[[], None], ...]:
    if hes_target.stop is None or hes_target.start is None or not env[JMX]:
        pytest.skip(
            "VIGIA_TEST_HES_STOP/_START or VIGIA_TEST_CONNECT_JMX_URL not set: cannot stop the "
            "HES nor see Debezium's Connected"
        )
    return hes_target.stop, hes_target.start


def test_a_stopped_hes_shows_within_one_collection(
    env: dict[str, str], outage: tuple[Callable[[], None], ...], exporter: Running
) -> None:
    stop_hes, start_hes = outage
    config = httpx.get(f"{env[CONNECT].rstrip('/')}/connectors/{CONNECTOR}/config", timeout=10)
    server = config.raise_for_status().json()["topic.prefix"]
    wait_for(lambda: _sample(exporter, "vigia_hes_up") == 1, DEADLINE, "vigia_hes_up 1")
    wait_for(lambda: _connected(env[JMX], server) == 1, DEADLINE, "Debezium Connected 1")

    stop_hes()
    stopped = time.monotonic()
    try:
        wait_for(
            lambda: _connected(env[JMX], server) in (0, None),
            ONE_COLLECTION,
            "Debezium Connected 0 or absent",
        )
        left = max(0.5, stopped + ONE_COLLECTION - time.monotonic())
        wait_for(lambda: _sample(exporter, "vigia_hes_up") == 0, left, "vigia_hes_up 0")
        _flow(exporter)  # a HES that cannot be read shows no row the topic lacks: no stall
    finally:
        start_hes()

    wait_for(lambda: _sample(exporter, "vigia_hes_up") == 1, DEADLINE, "vigia_hes_up 1 again")
    # The binlog client reconnects at its next keepalive (60 s in the recordings).
    wait_for(lambda: _connected(env[JMX], server) == 1, DEADLINE, "Debezium Connected 1 again")
    labels = {"connect": "it", "connector": CONNECTOR, "task": "0", "state": "RUNNING"}
    wait_for(
        lambda: _sample(exporter, "kafka_connect_task_state", **labels) == 1,
        DEADLINE,
        "the task RUNNING",
    )
    _not_stalled(exporter)
    _flow_settles(exporter)
