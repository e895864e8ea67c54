"""Issue 22 §3 and §6 on the real stack: retention deletes measures the ingest job had not read
while it was stopped; restarted with --no-fail-on-data-loss it stores every measure still there
exactly once, and counts exactly the offsets it skipped (the log start offsets read from Kafka),
and the completeness check names the day whose measures retention took, from the job's record of
what it skipped.

Three simulated days go to a topic of its own: day A is ingested; the job stops; day B and, 30 s
later, day C are written (each in segments of its own: `segment.ms` is 5 s); `retention.ms` is
then set between B's age and C's, so that Kafka deletes A's and B's segments only, and set back
to a week once it has.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from pyspark.sql import SparkSession

from tests.exporter.live import wait_for
from tests.ingest.conftest import backfill, utc_day
from tests.realstack.topics import create_topic
from vigia.ingest.cli import build_parser
from vigia.ingest.completeness import EXIT_INCOMPLETE, main_completeness
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, preflight_kafka
from vigia.ingest.kafka_source.adapter import KafkaAdmin
from vigia.ingest.kafka_source.retry_spool import RetrySpool
from vigia.ingest.loss_log import loss_dir, read_losses
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.schema import MEASURE_KEY_COLUMNS

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3


@pytest.fixture
def topic(real_kafka_bootstrap: str) -> Iterator[str]:
    name = f"vigia-it-skip-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap})
    create_topic(real_kafka_bootstrap, name, PARTITIONS, config={"segment.ms": "5000"})
    try:
        yield name
    finally:
        admin.delete_consumer_groups([name], request_timeout=30)[name].exception(timeout=30)
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)


def _retention_ms(bootstrap: str, topic: str, value: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", str(value), incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


# Two runs of the job and its Spark session's start: over 600 s with the stack's start beside a
# CPU burner.
@pytest.mark.timeout(900)
def test_a_job_told_to_go_on_stores_what_is_left_once_and_counts_what_retention_deleted(
    real_kafka_bootstrap: str,
    topic: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    session: SparkSession = request.getfixturevalue("spark")
    config = IngestConfig(
        bootstrap_servers=real_kafka_bootstrap,
        topic=topic,
        group_id=topic,
        output=str(tmp_path / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        metrics_port=0,
    )
    spool = RetrySpool()
    try:
        metrics = IngestMetrics(config.query_name, skipped_offsets=spool.skipped)

        def run(config: IngestConfig) -> None:
            IngestJob(session, config, metrics, preflight_kafka(config), spool.directory).run()

        day_a, day_b, day_c = utc_day(3), utc_day(2), utc_day(1)
        a = backfill(real_kafka_bootstrap, tmp_path / "a.json", day=day_a, meters=20, topic=topic)
        run(config)
        kafka = KafkaAdmin(real_kafka_bootstrap, {}, topic, 30)
        _, after_a = kafka.topic_watermarks([topic])
        assert kafka.committed(after_a) == after_a  # the job read day A, and stopped

        b = backfill(real_kafka_bootstrap, tmp_path / "b.json", day=day_b, meters=10, topic=topic)
        b_written = time.time()
        _, after_b = kafka.topic_watermarks([topic])
        time.sleep(30)  # past segment.ms, and far enough apart for a retention between B and C
        c = backfill(
            real_kafka_bootstrap, tmp_path / "c.json", day=day_c, meters=5, seed=7, topic=topic
        )
        # B's records are 30 s older than C's: a retention 10 s shorter than B's age deletes B
        # (and A) at the next check; C is then at least 15 s from its own (Kafka would delete
        # even the active segment once all of it is past the retention).
        _retention_ms(real_kafka_bootstrap, topic, int((time.time() - b_written - 10) * 1000))
        seen: list[object] = []

        def deleted_up_to_day_c() -> bool:
            start, latest = kafka.topic_watermarks([topic])
            seen[:] = [start, latest]
            return all(start[tp] >= after_b[tp] for tp in after_b)

        wait_for(deleted_up_to_day_c, 60, "retention to delete days A and B")
        # Back to a week, so nothing else goes while the job reads day C.
        _retention_ms(real_kafka_bootstrap, topic, 7 * 86_400_000)
        # Where each partition starts now is where day B ended: all of C is still there.
        assert seen[0] == after_b, (after_a, after_b, seen)
        assert sum(after_b[tp] - after_a[tp] for tp in after_a) == b.produced

        run(replace(config, fail_on_data_loss=False))
        skipped = spool.skipped()
        # The job's record of each range, for the completeness check: the first message kept
        # (day C's) bounds when the deleted ones were appended.
        losses = read_losses(loss_dir(config.output))
        assert {(loss.partition, loss.lost_from, loss.lost_to) for loss in losses} == {
            (tp[1], after_a[tp], after_b[tp]) for tp in after_a if after_b[tp] > after_a[tp]
        }
        assert all(
            loss.appended_before is not None and loss.appended_before.timestamp() > b_written
            for loss in losses
        ), losses
        assert skipped == {
            tp: after_b[tp] - after_a[tp] for tp in after_a if after_b[tp] > after_a[tp]
        }
        assert sum(skipped.values()) == b.produced
        family = next(m for m in metrics.collect() if m.name == "vigia_ingest_skipped_offsets")
        assert sum(s.value for s in family.samples) == b.produced

        measures = ds.dataset(config.output, partitioning="hive").to_table()
        assert measures.num_rows == a.valid_total + c.valid_total
        keys = measures.group_by(list(MEASURE_KEY_COLUMNS)).aggregate([]).num_rows
        assert keys == measures.num_rows  # each once
        dates = set(measures.column("measure_date").to_pylist())
        assert {str(d) for d in dates} == {day_a.isoformat(), day_c.isoformat()}
        kafka.close()
    finally:
        spool.close()

    # The completeness check names day B: everything the manifest expected is missing.
    args = build_parser().parse_args(
        [
            "completeness",
            "--date",
            day_b.isoformat(),
            "--output",
            config.output,
            "--manifest",
            str(tmp_path / "b.json"),
        ]
    )
    capsys.readouterr()
    assert main_completeness(args, session) == EXIT_INCOMPLETE
    report = json.loads(capsys.readouterr().out)
    assert report["distinct_stored"] == 0 and report["missing"] == b.valid_total
    # ...and says retention took them: every one, within the offsets the job skipped.
    assert report["lost_to_retention"] == b.valid_total
    assert sum(loss["offsets"] for loss in report["retention_losses"]) == b.produced
