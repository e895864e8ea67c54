"""The exporter's source watch against a real HES database (tests/realstack; a read-only user),
checked against the database's own answers taken just before and just after. The HES may be busy
(a live head-end writing): rows are only added or upserted, so its newest ts and day counts never go
down, and the watch's values must lie between the two. Nothing is written."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.realstack.targets import HesTarget
from vigia.common.hes import connect, epoch_seconds, parse_dsn
from vigia.exporter.hes.adapter import DAY_ROWS, NEWEST_ROW, HesAdapter
from vigia.exporter.model.pipeline_hops import watched_days

pytestmark = pytest.mark.integration


@pytest.fixture
def hes_dsn(hes_target: HesTarget) -> str:
    return hes_target.dsn


def _direct(connection: Any, days: tuple[Any, Any]) -> tuple[float | None, dict[Any, int]]:
    with connection.cursor() as cursor:
        cursor.execute(NEWEST_ROW)
        (newest,) = cursor.fetchone()
        cursor.execute(DAY_ROWS, (days,))
        counts = {day: int(rows) for day, rows in cursor.fetchall()}
    return (None if newest is None else epoch_seconds(newest)), counts


def test_the_watch_agrees_with_the_database(hes_dsn: str) -> None:
    dsn = parse_dsn(hes_dsn)
    days = watched_days(time.time())
    connection = connect(dsn, timeout=30)
    adapter = HesAdapter(dsn, timeout=30)
    try:
        newest_before, before = _direct(connection, days)
        reading = adapter.read(days)
        newest_after, after = _direct(connection, days)
    finally:
        adapter.close()
        connection.close()
    for day in days:
        assert before.get(day, 0) <= reading.day_rows[day] <= after.get(day, 0), day
    if newest_after is None:
        assert reading.newest_row_timestamp is None
    else:
        assert reading.newest_row_timestamp is not None
        assert (newest_before or 0) <= reading.newest_row_timestamp <= newest_after
