"""The exactly-once publication protocol of `ingest.sinks`, crashing it at every step."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from pyspark.sql import DataFrame, SparkSession

from vigia.ingest.sinks import INTENT_DIR, ExactlyOnceSink, HadoopFs, Output, plan_moves


class Crash(Exception):
    """Stands for the driver dying at that point."""


class CrashingFs(HadoopFs):
    """Dies at the n-th rename, or when it first deletes a staging directory."""

    def __init__(self, spark: SparkSession, renames_before_crash: int | None, crash_cleanup: bool):
        super().__init__(spark)
        self.renames_left = renames_before_crash
        self.crash_cleanup = crash_cleanup

    def rename(self, source: str, target: str) -> None:
        if self.renames_left is not None:
            if self.renames_left == 0:
                raise Crash
            self.renames_left -= 1
        super().rename(source, target)

    def delete(self, path: str, recursive: bool = False) -> None:
        if self.crash_cleanup and "_staging" in path:
            raise Crash
        super().delete(path, recursive)


def test_plan_moves_names_files_after_the_batch_and_leaves_bookkeeping_behind() -> None:
    moves = plan_moves(
        "file:/out",
        7,
        ["measure_date=2026-11-20/part-00001-abc.c000.snappy.parquet", "_SUCCESS", "x/.p.crc"],
    )
    assert [(m.source, m.target) for m in moves] == [
        (
            "file:/out/_staging/batch-000000000007/measure_date=2026-11-20/"
            "part-00001-abc.c000.snappy.parquet",
            "file:/out/measure_date=2026-11-20/"
            "batch-000000000007-part-00001-abc.c000.snappy.parquet",
        )
    ]


def measures(spark: SparkSession, batch: int) -> DataFrame:
    rows = [(f"UY{batch:03d}{i:03d}", dt.date(2026, 11, 19 + i % 2), i % 96 + 1) for i in range(40)]
    return spark.createDataFrame(rows, "meter string, measure_date date, period int").repartition(3)


def rejected(spark: SparkSession, batch: int) -> DataFrame:
    return spark.createDataFrame(
        [(f"bad-{batch}-{i}", "malformed_json") for i in range(5)],
        "raw_value string, reason string",
    )


def write(sink: ExactlyOnceSink, spark: SparkSession, tmp_path: Path, batch: int) -> list[str]:
    return sink.write(
        batch,
        [
            Output(str(tmp_path / "out"), measures(spark, batch), ("measure_date",)),
            Output(str(tmp_path / "quarantine"), rejected(spark, batch)),
        ],
    )


def stored(tmp_path: Path) -> tuple[list[str], list[str]]:
    valid = ds.dataset(tmp_path / "out", partitioning="hive").to_table()
    bad = ds.dataset(tmp_path / "quarantine").to_table()
    return sorted(valid.column("meter").to_pylist()), sorted(bad.column("raw_value").to_pylist())


@pytest.mark.parametrize(
    ("renames_before_crash", "crash_cleanup"),
    [(0, False), (1, False), (4, False), (None, True)],
    ids=["before-first-rename", "after-one-rename", "after-four-renames", "after-all-renames"],
)
def test_replaying_a_crashed_batch_publishes_it_exactly_once(
    spark: SparkSession, tmp_path: Path, renames_before_crash: int | None, crash_cleanup: bool
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    sink = ExactlyOnceSink(spark, checkpoint)
    write(sink, spark, tmp_path, 0)

    crashing = ExactlyOnceSink(
        spark, checkpoint, CrashingFs(spark, renames_before_crash, crash_cleanup)
    )
    with pytest.raises(Crash):
        write(crashing, spark, tmp_path, 1)

    published = write(ExactlyOnceSink(spark, checkpoint), spark, tmp_path, 1)  # the replay

    valid, bad = stored(tmp_path)
    expected_valid = sorted(f"UY{b:03d}{i:03d}" for b in (0, 1) for i in range(40))
    assert valid == expected_valid
    assert bad == sorted(f"bad-{b}-{i}" for b in (0, 1) for i in range(5))
    assert all("/batch-000000000001-" in path for path in published)
    assert not list((tmp_path / "out" / "_staging").iterdir())
    intents = sorted(p.name for p in (tmp_path / "checkpoint" / INTENT_DIR).glob("batch-*.json"))
    assert intents == ["batch-000000000001.json"]  # batch 0 can never be replayed any more
    intent = json.loads((tmp_path / "checkpoint" / INTENT_DIR / intents[0]).read_text())
    assert sorted(intent["files"]) == sorted(published)


def test_a_new_checkpoint_never_retracts_an_earlier_querys_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    write(ExactlyOnceSink(spark, str(tmp_path / "checkpoint-1")), spark, tmp_path, 0)
    write(ExactlyOnceSink(spark, str(tmp_path / "checkpoint-2")), spark, tmp_path, 0)
    valid, bad = stored(tmp_path)
    assert len(valid) == 80 and len(bad) == 10  # both queries' batch 0, side by side


def test_check_writable_says_which_path_is_not_writable(
    spark: SparkSession, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    from vigia.ingest.sinks import SinkError

    with pytest.raises(SinkError, match=r"the output path .*a-file/out is not writable"):
        HadoopFs(spark).check_writable(str(blocker / "out"), "output")
