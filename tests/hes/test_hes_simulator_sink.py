"""`vigia-simulate --sink hes` against a real MariaDB: the rows in hes.measure are the manifest."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from vigia.ingest.schema import MAGNITUDES, PERIODS_PER_DAY
from vigia.ingest.simulator.cli import main
from vigia.launcher.mariadb import HesDatabase

DAY = dt.date(2026, 11, 20)


def _query(hes: HesDatabase, sql: str) -> list[tuple[Any, ...]]:
    connection = hes.admin()
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def _run(hes: HesDatabase, tmp_path: Path, *argv: str) -> dict[str, Any]:
    manifest = tmp_path / "manifest.json"
    common = ["--sink", "hes", "--hes-dsn", hes.dsn("writer"), "--metrics-port", "0"]
    assert main([*argv, *common, "--manifest", str(manifest)]) == 0
    data: dict[str, Any] = json.loads(manifest.read_text())
    return data


def test_backfill_with_corrections_writes_exactly_the_manifest(
    hes: HesDatabase, tmp_path: Path
) -> None:
    meters = 25
    manifest = _run(
        hes,
        tmp_path,
        "backfill",
        "--start-date",
        DAY.isoformat(),
        "--days",
        "2",
        "--meters",
        str(meters),
        "--duplicate-ratio",
        "0.01",
    )
    per_day = meters * PERIODS_PER_DAY * len(MAGNITUDES)
    assert manifest["topic"] == "hes.measure"
    assert manifest["valid_total"] == 2 * per_day and manifest["failed"] == 0
    assert manifest["duplicates"] > 0
    rows = dict(_query(hes, "SELECT measure_date, COUNT(*) FROM hes.measure GROUP BY 1"))
    assert {str(day): n for day, n in rows.items()} == {
        day: sum(counts.values()) for day, counts in manifest["valid"].items()
    }
    by_magnitude = _query(hes, "SELECT magnitude, COUNT(*) FROM hes.measure GROUP BY 1 ORDER BY 1")
    assert dict(by_magnitude) == dict.fromkeys(MAGNITUDES, 2 * meters * PERIODS_PER_DAY)
    ((first, last),) = _query(hes, "SELECT MIN(ts), MAX(ts) FROM hes.measure")
    assert first.isoformat() + "Z" == manifest["first_ts"]
    # A correction carries the end of the write window as its ts, which no first write has: each
    # one replaced its row (an upsert), none added one.
    ((corrected,),) = _query(
        hes,
        "SELECT COUNT(*) FROM hes.measure WHERE ts = "
        "TIMESTAMP(measure_date) + INTERVAL period * 15 MINUTE + INTERVAL 300 SECOND",
    )
    assert corrected == manifest["duplicates"] > 0
    assert last.isoformat() + "Z" <= manifest["last_ts"]


def test_a_correction_keeps_the_newest_reading(hes: HesDatabase, tmp_path: Path) -> None:
    """The same run twice: every key is written again with the same ts, and nothing changes."""
    argv = ("backfill", "--start-date", DAY.isoformat(), "--meters", "3")
    _run(hes, tmp_path, *argv)
    before = _query(hes, "SELECT * FROM hes.measure ORDER BY 1, 2, 3, 4")
    _run(hes, tmp_path, *argv)
    assert _query(hes, "SELECT * FROM hes.measure ORDER BY 1, 2, 3, 4") == before
    connection = hes.admin()
    try:
        with connection.cursor() as cursor:
            older = "UPDATE hes.measure SET value = -1, ts = ts - INTERVAL 1 HOUR LIMIT 5"
            cursor.execute(older)
    finally:
        connection.close()
    _run(hes, tmp_path, *argv)
    assert _query(hes, "SELECT * FROM hes.measure ORDER BY 1, 2, 3, 4") == before


def test_outage_holds_rows_back_then_writes_the_backlog(hes: HesDatabase, tmp_path: Path) -> None:
    start = dt.datetime(2026, 11, 20, 6, 0, tzinfo=dt.UTC)
    manifest = _run(
        hes,
        tmp_path,
        "outage",
        "--start",
        start.isoformat(),
        "--speed",
        "1800",  # half an hour of HES time per second: two periods
        "--meters",
        "10",
        "--outage-after",
        "0",
        "--outage-duration",
        "1.5",
        "--stop-after-release",
    )
    ((rows, newest),) = _query(hes, "SELECT COUNT(*), MAX(ts) FROM hes.measure")
    assert rows == manifest["valid_total"] > 0
    # The backlog spans the whole outage: 1.5 s × 1800 = 45 simulated minutes of readings.
    ((periods,),) = _query(hes, "SELECT COUNT(DISTINCT measure_date, period) FROM hes.measure")
    assert periods >= 3
    assert newest.isoformat() + "Z" == manifest["last_ts"]


def test_live_writes_as_the_clock_passes_each_ts(hes: HesDatabase, tmp_path: Path) -> None:
    manifest = _run(
        hes,
        tmp_path,
        "live",
        "--start",
        "2026-11-20T06:00:00+00:00",
        "--speed",
        "600",
        "--duration",
        "2",
        "--meters",
        "10",
    )
    ((rows, newest),) = _query(hes, "SELECT COUNT(*), MAX(ts) FROM hes.measure")
    assert rows == manifest["valid_total"] > 0
    # Nothing written ahead of the simulated clock (start + 2 s × 600 at most, plus slack).
    assert newest <= dt.datetime(2026, 11, 20, 6, 21)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["backfill", "--sink", "hes"], "needs --hes-dsn"),
        (["backfill", "--sink", "hes", "--hes-dsn", "postgres://x@y/z"], "mysql://"),
        (
            [
                "backfill",
                "--sink",
                "hes",
                "--hes-dsn",
                "mysql://u@h/hes",
                "--malformed-ratio",
                "0.1",
            ],
            "malformed",
        ),
    ],
)
def test_hes_configuration_errors_exit_2(
    argv: list[str], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        assert main(argv) == 2
    (record,) = caplog.records
    assert message in record.getMessage()


def test_an_unreachable_hes_fails_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    dsn = f"mysql://nobody:pw@127.0.0.1:{free_port()}/hes"
    with caplog.at_level(logging.ERROR):
        assert main(["backfill", "--sink", "hes", "--hes-dsn", dsn, "--connect-timeout", "2"]) == 1
    (record,) = caplog.records
    assert "cannot write to mysql://nobody@127.0.0.1" in record.getMessage()
    assert "pw" not in record.getMessage()


def test_a_read_only_user_is_refused_and_nothing_is_counted(
    hes: HesDatabase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = tmp_path / "m.json"
    argv = ["backfill", "--sink", "hes", "--hes-dsn", hes.dsn("reader"), "--meters", "2"]
    with caplog.at_level(logging.ERROR):
        assert main([*argv, "--metrics-port", "0", "--manifest", str(manifest)]) == 1
    data = json.loads(manifest.read_text())
    assert data["valid_total"] == 0 and data["failed"] == 2 * PERIODS_PER_DAY * len(MAGNITUDES)
    assert "command denied" in caplog.text
