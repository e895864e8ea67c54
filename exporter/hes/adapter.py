"""The exporter's look at the HES database (I/O only): two indexed queries on hes.measure.

Run by `exporter.hes.watch.SourceWatcher` at its own, bounded rate (the newest ts every
``--hes-interval``, the day counts every ``--hes-count-interval``), with a read-only user. The
queries and what they cost, with the indexes of `common.hes.TABLE_DDL` (EXPLAIN and timings on
MariaDB 10.11, benchmarks/hes_source.py; MySQL 8.4 plans them on the same indexes):

- ``SELECT MAX(ts) FROM measure``: "Select tables optimized away", one read at the end of the
  ``measure_ts`` index, whatever the table's size (0.1 ms);
- ``SELECT measure_date, COUNT(*) FROM measure WHERE measure_date IN (closed, open) GROUP BY 1``:
  a range scan of the ``measure_day`` index ("Using where; Using index"), never the rows: linear
  in the two days' rows, 0.4–0.7 µs a row here (0.31–0.52 s for 768,000 rows, so 3–5 s at the
  end of a day for 10,000 meters: 7.68 M rows).

And, for the binlog margin (`exporter.model.binlog`), every ``--binlog-interval``: the server's
expiry variables and ``SHOW BINARY LOGS``, neither of which touches a table: a few global
variables, and the binlog index with each closed file opened to read its length (microseconds a
file; a server keeps tens to hundreds; both servers hold the binlog lock meanwhile). The
user needs ``BINLOG MONITOR`` on MariaDB 10.5+ (``REPLICATION CLIENT`` there is its alias) or
``REPLICATION CLIENT`` on MySQL; without it the binlog state is ``unknown`` with the server's
"Access denied" as the reason.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Sequence
from typing import Any

import pymysql

from vigia.common.hes import Dsn, connect, epoch_seconds
from vigia.exporter.model.binlog import VARIABLES_QUERY, BinlogFile, binary_logs
from vigia.exporter.model.pipeline_hops import HesReading

NEWEST_ROW = "SELECT MAX(ts) FROM measure"
BINARY_LOGS = "SHOW BINARY LOGS"
DAY_ROWS = "SELECT measure_date, COUNT(*) FROM measure WHERE measure_date IN %s GROUP BY 1"


class HesError(RuntimeError):
    """The HES did not answer (down, access denied, no table, timeout): one line, no password."""


class HesAdapter:
    def __init__(self, dsn: Dsn, timeout: float) -> None:
        self.dsn = dsn
        self._timeout = timeout
        self._connection: Any = None

    def read(self, days: Sequence[dt.date], count: bool = True) -> HesReading:
        """The newest ts, and with `count` the rows of `days` (else `day_rows` is empty)."""
        started = time.monotonic()
        counts: dict[dt.date, int] = {}
        try:
            with self._cursor() as cursor:
                cursor.execute(NEWEST_ROW)
                (newest,) = cursor.fetchone()
                if count:
                    cursor.execute(DAY_ROWS, (tuple(days),))
                    counts = {day: int(rows) for day, rows in cursor.fetchall()}
        except pymysql.MySQLError as exc:
            raise self._failed(exc) from exc
        return HesReading(
            newest_row_timestamp=None if newest is None else epoch_seconds(newest),
            day_rows={day: counts.get(day, 0) for day in days} if count else {},
            query_seconds=time.monotonic() - started,
        )

    def binlog(self) -> tuple[dict[str, str], tuple[BinlogFile, ...]]:
        """The server's binlog expiry variables (name → value) and its binlog files, oldest
        first. A server without a binlog (log_bin OFF) answers SHOW BINARY LOGS with an error."""
        try:
            with self._cursor() as cursor:
                cursor.execute(VARIABLES_QUERY)
                variables = {str(name): str(value) for name, value in cursor.fetchall()}
                cursor.execute(BINARY_LOGS)
                files = binary_logs(cursor.fetchall())
        except pymysql.MySQLError as exc:
            raise self._failed(exc) from exc
        return variables, files

    def _cursor(self) -> Any:
        if self._connection is None:
            self._connection = connect(self.dsn, self._timeout)
        return self._connection.cursor()

    def _failed(self, exc: pymysql.MySQLError) -> HesError:
        self.close()
        reason = exc.args[1] if len(exc.args) > 1 else exc
        return HesError(f"{self.dsn.redacted()}: {reason}")

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(pymysql.MySQLError):  # already broken: nothing to release
                connection.close()
