"""What the HES leg's real-stack drills use (test_hes_leg_end_to_end.py,
test_connect_worker_killed.py): their targets, the exporter's flags, rows written with the HES's
writer user, the topic's end offsets straight from the cluster, and the ingest job's available-now
runs whose Parquet is read back by key."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from tests.realstack.targets import ConnectTarget, HesTarget, KafkaTarget
from vigia.common.hes import UPSERT, connect, naive_utc, parse_dsn
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, preflight_kafka
from vigia.ingest.kafka_source.adapter import KafkaAdmin
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.schema import MAGNITUDES, MEASURE_KEY_COLUMNS

CONNECT, HES, WRITER, KAFKA, JMX = "connect", "hes", "writer", "kafka", "jmx"
TOPIC = "measure"  # where the connector's RegexRouter sends cdc.hes.measure
CONNECTOR = "hes-measure"
HES_INTERVAL = 2  # the exporter's --hes-interval and --hes-count-interval
COLLECTION_TIMEOUT = 5
# One look at the HES: the interval, its queries' timeout, and a scrape.
ONE_COLLECTION = HES_INTERVAL + COLLECTION_TIMEOUT + 3

Key = tuple[str, str, int, str]


@pytest.fixture
def env(
    kafka_target: KafkaTarget, connect_target: ConnectTarget, hes_target: HesTarget
) -> dict[str, str]:
    """The drills' targets by name: Kafka, Connect (REST, JMX), the HES (read-only, writer)."""
    if not hes_target.writer_dsn:
        pytest.skip("VIGIA_TEST_HES_WRITER_DSN is not set: nothing may insert into the HES")
    return {
        KAFKA: kafka_target.bootstrap,
        CONNECT: connect_target.url,
        JMX: connect_target.jmx_url,
        HES: hes_target.dsn,  # the exporter's read-only user, as in test_hes_real_source.py
        WRITER: hes_target.writer_dsn,
    }


def exporter_args(env: dict[str, str], group: str) -> tuple[str, ...]:
    """The exporter watching the HES, the worker (as `it`), the topic and the run's group."""
    return (
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
    )


def insert(writer_dsn: str, keys: list[Key], stamp: int) -> None:
    """Upserts `keys` stamped `stamp` (epoch seconds) in one transaction."""
    ts = naive_utc(stamp).isoformat(" ")
    rows = [(m, day, p, magnitude, 1.0 + p, ts) for m, day, p, magnitude in keys]
    writer = connect(parse_dsn(writer_dsn), 30, autocommit=False)
    try:
        with writer.cursor() as cursor:
            cursor.executemany(UPSERT, rows)
        writer.commit()
    finally:
        writer.close()


def keys_of(prefix: str, first: int, count: int, stamp: int) -> list[Key]:
    """Rows `first`..`first + count` of a run's meters (prefix + 4 digits), 96 periods a meter."""
    day = dt.datetime.fromtimestamp(stamp, dt.UTC).date().isoformat()
    return [
        (f"{prefix}{i // 96:04d}", day, i % 96 + 1, MAGNITUDES[0])
        for i in range(first, first + count)
    ]


def topic_ends(bootstrap: str, options: dict[str, str]) -> dict[tuple[str, int], int]:
    """The topic's end offsets straight from the cluster (no group is touched)."""
    admin = KafkaAdmin(bootstrap, options, "vigia-it-hes-unused", 30)
    try:
        return admin.topic_watermarks([TOPIC])[1]
    finally:
        admin.close()


def stored_keys(output: Path, prefix: str) -> Counter[Key]:
    if not output.exists():
        return Counter()
    table = ds.dataset(output, partitioning="hive").to_table(columns=list(MEASURE_KEY_COLUMNS))
    return Counter(
        (row["meter"], str(row["measure_date"]), int(row["period"]), row["magnitude"])
        for row in table.to_pylist()
        if row["meter"].startswith(prefix)
    )


def ingest(session: SparkSession, config: IngestConfig) -> None:
    IngestJob(session, config, IngestMetrics(config.query_name), preflight_kafka(config)).run()
