"""`vigia-ingest completeness --hes-dsn`: the stored day against the keys a real MariaDB holds."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from tests.conftest import free_port
from tests.hes_db import hes, hes_db
from vigia.common.hes import parse_dsn
from vigia.ingest.completeness import (
    EXIT_COMPLETE,
    EXIT_INCOMPLETE,
    EXIT_INVALID,
    MeasureKey,
    add_completeness_arguments,
    expected_keys,
    main_completeness,
)
from vigia.ingest.hes_source import DayRowsRefresher, day_keys, day_rows
from vigia.ingest.metrics import IngestMetrics, day_window
from vigia.launcher.mariadb import HesDatabase

__all__ = ["hes", "hes_db"]

DAY = dt.date(2026, 11, 20)
METERS = ["UY000001", "UY000002", "UY000003"]
LOST = MeasureKey("UY000002", DAY, 57, "REI")  # in the HES, never stored (a skipped binlog event)
STRAY = MeasureKey("UY000404", DAY, 1, "AEI")  # stored, not in the HES


def _load_hes(hes: HesDatabase, keys: list[MeasureKey]) -> None:
    connection = hes.admin()
    try:
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO hes.measure VALUES (%s, %s, %s, %s, 1.5, '2026-11-20 23:59:00')",
                [(k.meter, k.measure_date, k.period, k.magnitude) for k in keys],
            )
    finally:
        connection.close()


def _store(root: Path, keys: list[MeasureKey]) -> None:
    columns = list(zip(*keys, strict=True))
    table = pa.table(
        {
            "meter": pa.array(columns[0], pa.string()),
            "measure_date": pa.array([str(d) for d in columns[1]], pa.string()),
            "period": pa.array(columns[2], pa.int32()),
            "magnitude": pa.array(columns[3], pa.string()),
            "value": pa.array([1.5] * len(keys), pa.float64()),
        }
    )
    pq.write_to_dataset(table, str(root), partition_cols=["measure_date"])  # type: ignore[no-untyped-call]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_completeness_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.spark
def test_a_row_the_hes_has_and_the_store_lacks_is_found(
    spark: SparkSession, hes: HesDatabase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The HES has two of three meters' REI only for part of the day: "expected" is what it holds.
    source = [
        k for k in expected_keys(METERS, DAY) if not (k.meter == "UY000003" and k.period > 90)
    ]
    _load_hes(hes, source)
    stored = [k for k in source if k != LOST]
    _store(tmp_path / "out", [*stored, stored[0], STRAY])
    dsn = hes.dsn("reader")
    assert day_rows(parse_dsn(dsn), [DAY, DAY + dt.timedelta(days=1)]) == {
        DAY: len(source),
        DAY + dt.timedelta(days=1): 0,
    }
    assert day_keys(parse_dsn(dsn), DAY).num_rows == len(source)

    args = _args("--date", str(DAY), "--output", str(tmp_path / "out"), "--hes-dsn", dsn)
    assert main_completeness(args, spark) == EXIT_INCOMPLETE
    report = json.loads(capsys.readouterr().out)
    assert report["expected_from"] == "hes"
    assert (report["expected"], report["meters"], report["magnitudes"]) == (
        len(source),
        3,
        ["AEE", "AEI", "REE", "REI"],
    )
    assert (report["missing"], report["duplicates"], report["unexpected"]) == (1, 1, 1)
    assert report["missing_sample"] == [{"meter": "UY000002", "period": 57, "magnitude": "REI"}]

    _store(tmp_path / "complete", source)
    complete = _args("--date", str(DAY), "--output", str(tmp_path / "complete"), "--hes-dsn", dsn)
    assert main_completeness(complete, spark) == EXIT_COMPLETE
    assert json.loads(capsys.readouterr().out)["complete"] is True


@pytest.mark.spark
def test_an_unreachable_hes_is_invalid_input(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = f"mysql://reader:pw@127.0.0.1:{free_port()}/hes"
    args = _args("--date", str(DAY), "--output", str(tmp_path), "--hes-dsn", dsn)
    assert main_completeness(args, spark) == EXIT_INVALID
    assert capsys.readouterr().out == ""


def _ratios(metrics: IngestMetrics) -> dict[str, float]:
    (family,) = [f for f in metrics.collect() if f.name == "vigia_ingest_day_completeness_ratio"]
    return {s.labels["measure_date"]: s.value for s in family.samples}


def test_the_daily_ratio_uses_the_hes_counts(hes: HesDatabase) -> None:
    """The job's metric with --hes-dsn: stored ÷ the HES's rows, for the closed days it holds."""
    today = DAY + dt.timedelta(days=2)
    clock = dt.datetime(today.year, today.month, today.day, 8, tzinfo=dt.UTC).timestamp
    source = list(expected_keys(METERS[:1], DAY))
    _load_hes(hes, source)
    metrics = IngestMetrics("q", clock=clock, expected_per_day=10_000)
    metrics.seed_days({DAY: len(source) - 4, DAY + dt.timedelta(days=1): 7})
    # The job was running through both closed days (only those are judged, in either mode).
    metrics.running_since(dt.datetime(DAY.year, DAY.month, DAY.day, tzinfo=dt.UTC).timestamp())
    refresher = DayRowsRefresher(
        parse_dsn(hes.dsn("reader")),
        lambda: day_window(today)[:-1],
        metrics.source_day_rows,
        interval=300,
    )
    assert _ratios(metrics)[str(DAY)] == (len(source) - 4) / 10_000  # meters × 96 × magnitudes
    refresher.refresh()
    # Only the day the HES holds rows for; the next day has none in the HES: nothing expected.
    assert _ratios(metrics) == {str(DAY): (len(source) - 4) / len(source)}
