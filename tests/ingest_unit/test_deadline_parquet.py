"""The measures stored by a deadline, read back from the job's Parquet: what a restarted job
counts for a day that fell due while it was down."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from tests.ingest_unit.conftest import kafka_frame
from vigia.ingest import transform
from vigia.ingest.config import IngestConfig
from vigia.ingest.deadline_watch import stored_by_deadline
from vigia.ingest.job import BatchWriter
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.sinks import ExactlyOnceSink

pytestmark = pytest.mark.spark

DAY = dt.date(2026, 11, 20)


def message(period: int, value: float = 1.0) -> str:
    return json.dumps(
        {"meter": "UY000001", "measure_date": DAY.isoformat(), "period": period,
         "magnitude": "AEI", "value": value, "ts": "2026-11-20T09:15:00Z"}
    )  # fmt: skip


def test_only_measures_stamped_by_the_deadline_count_and_each_key_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    config = IngestConfig(
        bootstrap_servers="unused",
        output=str(tmp_path / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
    )
    write = BatchWriter(
        ExactlyOnceSink(spark, config.checkpoint), config, IngestMetrics(config.query_name)
    )

    def batch(batch_id: int, messages: list[str]) -> dt.datetime:
        frame = kafka_frame(spark, messages, offsets=[batch_id * 100 + i for i in range(3)])
        write(transform.slim(transform.classify(transform.parse(frame))), batch_id)
        stamps = ds.dataset(config.output, partitioning="hive").to_table().to_pylist()
        return max(r["ingested_at"] for r in stamps).replace(tzinfo=dt.UTC)

    first = batch(0, [message(1), message(2), message(3)])
    # A correction of period 3 (a second row, the same measure) and two new periods.
    second = batch(1, [message(3, 2.0), message(4), message(5)])
    assert second > first
    assert stored_by_deadline(spark, config.output, DAY, first) == 3
    assert stored_by_deadline(spark, config.output, DAY, first - dt.timedelta(seconds=1)) == 0
    assert stored_by_deadline(spark, config.output, DAY, second) == 5
    assert stored_by_deadline(spark, config.output, DAY + dt.timedelta(days=1), second) == 0
