"""Measures an incremental snapshot delivers again (`vigia-ingest repair`) are stored once: the
job's batch writer against Parquet it already wrote, replays included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from pyspark.sql import DataFrame, SparkSession

from tests.ingest_unit.conftest import kafka_frame
from vigia.ingest import transform
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import BatchWriter
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.schema import MEASURE_KEY_COLUMNS, REDELIVERED, SNAPSHOT_FIELD
from vigia.ingest.sinks import ExactlyOnceSink

pytestmark = pytest.mark.spark

DAY = "2026-11-20"


def message(period: int, snapshot: str | None = None, meter: str = "UY000001") -> str:
    record: dict[str, Any] = {
        "meter": meter,
        "measure_date": DAY,
        "period": period,
        "magnitude": "AEI",
        "value": 1.0,
        "ts": "2026-11-20T09:15:00Z",
    }
    if snapshot is not None:
        record[SNAPSHOT_FIELD] = snapshot
    return json.dumps(record)


def classified(spark: SparkSession, messages: list[str], first_offset: int) -> DataFrame:
    raw = kafka_frame(
        spark, messages, offsets=list(range(first_offset, first_offset + len(messages)))
    )
    return transform.slim(transform.classify(transform.parse(raw)))


def test_only_an_incremental_snapshot_read_counts_as_redelivered(spark: SparkSession) -> None:
    reads = [None, "incremental", "true", "last", "false"]
    rows = classified(spark, [message(p + 1, s) for p, s in enumerate(reads)], 0)
    flags = {r["period"]: r[REDELIVERED] for r in rows.collect()}
    assert flags == {1: False, 2: True, 3: False, 4: False, 5: False}


def test_a_malformed_message_is_not_redelivered(spark: SparkSession) -> None:
    # Read again as text (a period sent as a string): the flag survives the second read.
    text = json.loads(message(1, "incremental"))
    text["period"] = "1"
    rows = classified(spark, [json.dumps(text), "not json"], 0).collect()
    assert [(r["reason"], r[REDELIVERED]) for r in rows] == [
        (None, True),
        ("malformed_json", False),
    ]


class Job:
    """The batch writer over one output, as the job runs it."""

    def __init__(self, spark: SparkSession, tmp_path: Path) -> None:
        self.spark = spark
        self.config = IngestConfig(
            bootstrap_servers="unused",
            output=str(tmp_path / "measure"),
            quarantine=str(tmp_path / "quarantine"),
            checkpoint=str(tmp_path / "checkpoint"),
        )
        sink = ExactlyOnceSink(spark, self.config.checkpoint)
        sink.fs.check_writable(self.config.output, "output")
        self.write = BatchWriter(sink, self.config, IngestMetrics(self.config.query_name))
        self.offset = 0

    def batch(self, batch_id: int, messages: list[str], replay: bool = False) -> None:
        if replay:
            self.offset -= len(messages)
        self.write(classified(self.spark, messages, self.offset), batch_id)
        self.offset += len(messages)

    def stored(self) -> dict[tuple[str, int], int]:
        table = ds.dataset(self.config.output, partitioning="hive").to_table(
            columns=list(MEASURE_KEY_COLUMNS)
        )
        counts: dict[tuple[str, int], int] = {}
        for row in table.to_pylist():
            key = (row["meter"], row["period"])
            counts[key] = counts.get(key, 0) + 1
        return counts


def test_a_redelivered_measure_already_stored_is_not_stored_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    job = Job(spark, tmp_path)
    job.batch(0, [message(1), message(2)])
    # The repair's snapshot: periods 1 and 2 again, 3 (lost before), and a streamed measure.
    job.batch(
        1,
        [
            message(1, "incremental"),
            message(2, "incremental"),
            message(3, "incremental"),
            message(4, meter="UY000002"),
        ],
    )
    assert job.stored() == {
        ("UY000001", 1): 1,
        ("UY000001", 2): 1,
        ("UY000001", 3): 1,
        ("UY000002", 4): 1,
    }


def test_a_replayed_batch_keeps_the_measures_its_first_attempt_published(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A driver killed after batch 1 published, before Spark committed it: the replay must not
    take batch 1's own files for measures stored before, or it would stage nothing and then
    retract them."""
    job = Job(spark, tmp_path)
    job.batch(0, [message(1)])
    again = [message(1, "incremental"), message(2, "incremental")]
    job.batch(1, again)
    job.batch(1, again, replay=True)
    assert job.stored() == {("UY000001", 1): 1, ("UY000001", 2): 1}


def test_streamed_measures_are_stored_as_before(spark: SparkSession, tmp_path: Path) -> None:
    """Only re-delivered rows are looked up: a measure streamed twice from the binlog (a
    correction) is stored as it comes, as the job always did."""
    job = Job(spark, tmp_path)
    job.batch(0, [message(1)])
    job.batch(1, [message(1)])
    assert job.stored() == {("UY000001", 1): 2}
