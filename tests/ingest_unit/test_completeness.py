"""The completeness check: the pure comparison, the meter list, and one run on real Parquet."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from vigia.ingest.completeness import (
    EXIT_COMPLETE,
    EXIT_INVALID,
    InputError,
    MeasureKey,
    add_completeness_arguments,
    build_report,
    completeness_report,
    expected_keys,
    load_meters,
    main_completeness,
    summarise_keys,
)
from vigia.ingest.schema import MAGNITUDES
from vigia.ingest.simulator.manifest import Manifest, MeterRange, write_manifest

DAY = dt.date(2026, 11, 20)
METERS = ["UY000001", "UY000002", "UY000003"]


def report_for(stored: list[MeasureKey], sample_size: int = 5) -> dict[str, object]:
    summary = summarise_keys(stored, DAY, METERS, MAGNITUDES, sample_groups=sample_size)
    return build_report(DAY, len(METERS), MAGNITUDES, summary, sample_size).to_json()


def test_expected_keys_cover_meters_periods_and_magnitudes() -> None:
    keys = list(expected_keys(METERS, DAY, MAGNITUDES))
    assert len(keys) == len(set(keys)) == 3 * 96 * 4
    assert keys[0] == MeasureKey("UY000001", DAY, 1, "AEI")
    assert keys[-1] == MeasureKey("UY000003", DAY, 96, "REE")


def test_a_complete_day() -> None:
    report = report_for(list(expected_keys(METERS, DAY)))
    assert report["complete"] is True
    assert (report["expected"], report["distinct_stored"], report["missing"]) == (1152, 1152, 0)
    assert (report["duplicates"], report["unexpected"], report["missing_sample"]) == (0, 0, [])


def test_missing_duplicated_and_unexpected_keys_are_counted() -> None:
    stored = [
        k
        for k in expected_keys(METERS, DAY)
        if not (k.meter == "UY000002" and k.magnitude == "REI" and k.period in (5, 6))
        and not (k.meter == "UY000003" and k.magnitude == "AEE")
    ]
    stored += stored[:10]  # written twice
    stored.append(MeasureKey("UY999999", DAY, 1, "AEI"))  # a meter nobody expects
    stored.append(MeasureKey("UY000001", DAY + dt.timedelta(days=1), 1, "AEI"))  # another day
    report = report_for(stored, sample_size=5)
    assert report["missing"] == 2 + 96
    assert report["duplicates"] == 10
    assert report["unexpected"] == 1
    assert report["stored_rows"] == 1152 - 98 + 10 + 1
    assert report["complete"] is False
    assert report["missing_sample"] == [
        {"meter": "UY000002", "period": 5, "magnitude": "REI"},
        {"meter": "UY000002", "period": 6, "magnitude": "REI"},
        {"meter": "UY000003", "period": 1, "magnitude": "AEE"},
        {"meter": "UY000003", "period": 2, "magnitude": "AEE"},
        {"meter": "UY000003", "period": 3, "magnitude": "AEE"},
    ]


def test_duplicates_alone_make_a_day_incomplete() -> None:
    keys = list(expected_keys(METERS, DAY))
    report = report_for([*keys, keys[0]])
    assert (report["missing"], report["duplicates"], report["complete"]) == (0, 1, False)


def test_meters_from_a_manifest_or_a_file(tmp_path: Path) -> None:
    manifest = Manifest("backfill", "measure", 1, MeterRange(count=3), MAGNITUDES)
    write_manifest(manifest, tmp_path / "m.json")
    assert load_meters(manifest=str(tmp_path / "m.json")) == METERS
    (tmp_path / "meters.txt").write_text("# our meters\nUY000001\n\n UY000002 \nUY000003\n")
    assert load_meters(meters_file=str(tmp_path / "meters.txt")) == METERS


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "lists no meter"), ("UY1\nUY1\n", "twice"), (None, "cannot read meters file")],
)
def test_bad_meter_lists(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "meters.txt"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_meters(meters_file=str(path))
    with pytest.raises(InputError, match="exactly one"):
        load_meters()


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_completeness_arguments(parser)
    return parser.parse_args(argv)


PREVIOUS_DAY = DAY - dt.timedelta(days=1)
# DAY: UY000002 misses periods 91-96, three keys are written twice, one meter is unknown.
STORED = [
    *(k for k in expected_keys(METERS, DAY) if not (k.meter == "UY000002" and k.period > 90)),
    *list(expected_keys(METERS, DAY))[:3],
    MeasureKey("UY000404", DAY, 1, "AEI"),
    *expected_keys(METERS, PREVIOUS_DAY),  # complete
]


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The job's layout, <output>/measure_date=YYYY-MM-DD/*.parquet, written with pyarrow."""
    root = tmp_path_factory.mktemp("completeness") / "measures"
    columns = list(zip(*STORED, strict=True))
    table = pa.table(
        {
            "meter": pa.array(columns[0], pa.string()),
            "measure_date": pa.array([str(d) for d in columns[1]], pa.string()),
            "period": pa.array(columns[2], pa.int32()),
            "magnitude": pa.array(columns[3], pa.string()),
            "value": pa.array([1.0] * len(STORED), pa.float64()),
        }
    )
    pq.write_to_dataset(table, str(root), partition_cols=["measure_date"])  # type: ignore[no-untyped-call]
    assert (root / f"measure_date={DAY}").is_dir()
    return root


@pytest.mark.spark
def test_report_from_parquet_matches_the_pure_comparison(spark: SparkSession, output: Path) -> None:
    report = completeness_report(spark, str(output), DAY, METERS, MAGNITUDES, sample_size=3)
    pure = build_report(
        DAY, 3, MAGNITUDES, summarise_keys(STORED, DAY, METERS, sample_groups=3), sample_size=3
    )
    assert report == pure
    assert (report.missing, report.duplicates, report.unexpected) == (6 * 4, 3, 1)


@pytest.mark.spark
def test_the_command_reports_json_and_exit_codes(
    spark: SparkSession, output: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meters = tmp_path / "meters.txt"
    meters.write_text("\n".join(METERS))
    base = ["--output", str(output), "--meters-file", str(meters)]
    assert main_completeness(_args("--date", str(PREVIOUS_DAY), *base), spark) == EXIT_COMPLETE
    printed = json.loads(capsys.readouterr().out)
    assert (printed["complete"], printed["expected"], printed["missing"]) == (True, 1152, 0)
    assert printed["measure_date"] == str(PREVIOUS_DAY)
    assert main_completeness(_args("--date", "20-11-2026", *base), spark) == EXIT_INVALID
    nowhere = ["--output", str(tmp_path / "nowhere"), "--meters-file", str(meters)]
    assert main_completeness(_args("--date", str(DAY), *nowhere), spark) == EXIT_INVALID
    assert capsys.readouterr().out == ""
