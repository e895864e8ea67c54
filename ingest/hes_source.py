"""What the HES holds, for the ingest side (I/O only): a day's keys for ``vigia-ingest
completeness --hes-dsn`` and rows per day for the job's completeness metric.

Both read the ``measure_day`` index range of the days asked for (`common.hes.TABLE_DDL`), with a
read-only user. A day's keys are streamed (server-side cursor) into Arrow in chunks, so a
3.84 M-row day (10,000 meters) never sits in memory as Python tuples.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Final

import pyarrow as pa
import pymysql
import pymysql.cursors

from vigia.common.hes import Dsn, connect

log = logging.getLogger(__name__)

KEY_SCHEMA: Final = pa.schema(
    [("meter", pa.string()), ("period", pa.int32()), ("magnitude", pa.string())]
)
_CHUNK: Final = 100_000


class HesReadError(RuntimeError):
    """The HES could not be read; one line, without the password."""


def _failed(dsn: Dsn, exc: pymysql.MySQLError) -> HesReadError:
    reason = exc.args[1] if len(exc.args) > 1 else exc
    return HesReadError(f"cannot read the HES at {dsn.redacted()}: {reason}")


def day_keys(dsn: Dsn, day: dt.date, timeout: float = 60.0) -> pa.Table:
    """Every (meter, period, magnitude) the HES holds for `day` (the primary key makes each row
    a distinct key)."""
    batches: list[pa.RecordBatch] = []
    try:
        connection = connect(dsn, timeout)
        try:
            with connection.cursor(pymysql.cursors.SSCursor) as cursor:
                cursor.execute(
                    "SELECT meter, period, magnitude FROM measure WHERE measure_date = %s", (day,)
                )
                while rows := cursor.fetchmany(_CHUNK):
                    meters, periods, magnitudes = zip(*rows, strict=True)
                    batches.append(
                        pa.record_batch([list(meters), list(periods), list(magnitudes)], KEY_SCHEMA)
                    )
        finally:
            connection.close()
    except pymysql.MySQLError as exc:
        raise _failed(dsn, exc) from exc
    return pa.Table.from_batches(batches, KEY_SCHEMA)


def day_rows(dsn: Dsn, days: Iterable[dt.date], timeout: float = 30.0) -> dict[dt.date, int]:
    """Rows the HES holds per day (0 for a day without rows)."""
    wanted = tuple(days)
    try:
        connection = connect(dsn, timeout)
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT measure_date, COUNT(*) FROM measure WHERE measure_date IN %s "
                    "GROUP BY 1",
                    (wanted,),
                )
                counts = {day: int(rows) for day, rows in cursor.fetchall()}
        finally:
            connection.close()
    except pymysql.MySQLError as exc:
        raise _failed(dsn, exc) from exc
    return {day: counts.get(day, 0) for day in wanted}


class DayRowsRefresher:
    """Counts the closed days' rows in the HES every `interval` seconds, on its own thread, and
    hands them to `publish` (the job's metrics). A failed count keeps the last one published and
    is logged once per change of outcome; the ingest itself never waits for the HES."""

    def __init__(
        self,
        dsn: Dsn,
        days: Callable[[], Iterable[dt.date]],
        publish: Callable[[Mapping[dt.date, int]], None],
        interval: float,
    ) -> None:
        self._dsn = dsn
        self._days = days
        self._publish = publish
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vigia-hes-day-rows", daemon=True)
        self._failing: str | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=35)

    def refresh(self) -> None:
        try:
            rows = day_rows(self._dsn, self._days())
        except HesReadError as exc:
            if str(exc) != self._failing:
                log.warning("%s; completeness keeps the last counts", exc)
            self._failing = str(exc)
            return
        if self._failing is not None:
            log.info("the HES answers again: completeness counts refreshed")
        self._failing = None
        self._publish(rows)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self._interval)
