"""The ingest job end to end against a real Kafka cluster (VIGIA_TEST_KAFKA_BOOTSTRAP_SERVERS):
simulator → topic vigia-it-<random> → vigia-kafka source → Parquet + quarantine, group commits,
a restart from the checkpoint and the completeness check. The topic and the consumer group it
creates are deleted at the end; nothing else on the cluster is touched."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from tests.ingest.conftest import backfill, utc_day
from tests.realstack.topics import create_topic
from vigia.common import kafka_config
from vigia.ingest.cli import build_parser
from vigia.ingest.completeness import main_completeness
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, preflight_kafka
from vigia.ingest.kafka_source.adapter import KafkaAdmin
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.schema import MEASURE_KEY_COLUMNS

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 6


@pytest.fixture
def topic(real_kafka_bootstrap: str) -> Iterator[str]:
    name = f"vigia-it-{uuid.uuid4().hex[:8]}"
    options = kafka_config.from_env()
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap, **options})
    create_topic(real_kafka_bootstrap, name, PARTITIONS, options=options)
    try:
        yield name
    finally:
        admin.delete_consumer_groups([name], request_timeout=30)[name].exception(timeout=30)
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)


def run(session: SparkSession, config: IngestConfig) -> int:
    job = IngestJob(session, config, IngestMetrics(config.query_name), preflight_kafka(config))
    job.run()
    assert job.query is not None
    return sum(json.loads(p.json)["numInputRows"] for p in job.query.recentProgress)


def test_ingest_end_to_end_on_a_real_cluster(
    real_kafka_bootstrap: str,
    topic: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    # Only now, past the skip: a session fixture requested up front would start Spark first.
    session: SparkSession = request.getfixturevalue("spark")
    options = kafka_config.from_env()
    day = utc_day(1)
    manifest = backfill(
        real_kafka_bootstrap,
        tmp_path / "m1.json",
        day=day,
        meters=50,
        malformed_ratio=0.01,
        topic=topic,
    )
    config = IngestConfig(
        bootstrap_servers=real_kafka_bootstrap,
        kafka_options=options,
        topic=topic,
        group_id=topic,
        output=str(tmp_path / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        max_offsets_per_trigger=5_000,
        metrics_port=0,
    )
    assert run(session, config) == manifest.produced

    # A restart from the checkpoint reads only what came since.
    more = backfill(
        real_kafka_bootstrap, tmp_path / "m2.json", day=utc_day(0), meters=20, topic=topic
    )
    assert run(session, replace(config, max_offsets_per_trigger=None)) == more.produced

    measures = ds.dataset(config.output, partitioning="hive").to_table()
    assert measures.num_rows == manifest.valid_total + more.valid_total
    keys = measures.group_by(list(MEASURE_KEY_COLUMNS)).aggregate([]).num_rows
    assert keys == measures.num_rows
    bad = ds.dataset(config.quarantine).to_table()
    assert Counter(bad.column("reason").to_pylist()) == Counter(
        {reason: n for reason, n in manifest.malformed.items() if n}
    )

    admin = KafkaAdmin(real_kafka_bootstrap, options, topic, 30)
    try:
        _, latest = admin.topic_watermarks([topic])
        assert admin.committed(latest) == latest  # the group shows lag 0 after the run
    finally:
        admin.close()

    args = build_parser().parse_args(
        [
            "completeness",
            "--date",
            day.isoformat(),
            "--output",
            config.output,
            "--manifest",
            str(tmp_path / "m1.json"),
        ]
    )
    capsys.readouterr()
    assert main_completeness(args, session) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["expected"] == report["distinct_stored"] == manifest.valid_total
    assert report["missing"] == 0 and report["duplicates"] == 0
