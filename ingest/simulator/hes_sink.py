"""The HES side of the simulator: rows upserted into ``hes.measure``, as a head-end system writes
them (``vigia-simulate --sink hes``). Kafka Connect then carries them to the topic.

Same interface as `KafkaSink`, so every mode (live, backfill, outage, corrections) runs unchanged:
`send` buffers a row, `poll` writes the buffer in one transaction (one batched multi-row INSERT,
PyMySQL's `executemany`) and reports each row to its callback as the producer's delivery reports
do. A batch the database refuses is reported as failed, row by row, with the error; the next batch
opens a new connection. A correction (same key, newer ts) is an upsert (`common.hes.UPSERT`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any

import pymysql

from vigia.common.hes import UPSERT, Dsn, connect
from vigia.ingest.simulator.delivery import DeliveryCallback

log = logging.getLogger(__name__)

Row = tuple[str, str, int, str, float, str]


class HesSinkError(RuntimeError):
    """The HES database cannot take our rows (unreachable, access denied, no table)."""


def row_from_message(value: bytes) -> Row:
    """A simulator message's JSON value as the table's row; ts as the naive UTC DATETIME text."""
    record = json.loads(value)
    ts = record["ts"]
    return (
        record["meter"],
        record["measure_date"],
        int(record["period"]),
        record["magnitude"],
        float(record["value"]),
        ts[:10] + " " + ts[11:19],  # 2026-11-20T09:15:00Z → 2026-11-20 09:15:00
    )


class HesSink:
    def __init__(self, dsn: Dsn, connect_timeout: float) -> None:
        self.dsn = dsn
        self.target = dsn.redacted()
        self._timeout = connect_timeout
        self._connection: Any = None
        self._rows: list[Row] = []
        self._callbacks: list[DeliveryCallback] = []
        # Writes are synchronous: a row is either written or reported failed by the next poll.
        self.delivery_timeout = 0.0

    def _connected(self) -> Any:
        if self._connection is None:
            self._connection = connect(self.dsn, self._timeout, autocommit=False)
        return self._connection

    def check(self) -> None:
        """Fail fast when the database, the user or the table is not there."""
        try:
            with self._connected().cursor() as cursor:
                cursor.execute("SELECT 1 FROM measure LIMIT 0")
        except pymysql.MySQLError as exc:
            self._drop_connection()
            raise HesSinkError(f"cannot write to {self.target}: {_reason(exc)}") from exc

    def send(self, key: bytes, value: bytes, on_delivery: DeliveryCallback) -> None:
        self._rows.append(row_from_message(value))
        self._callbacks.append(on_delivery)

    def poll(self, timeout: float = 0.0) -> None:
        self._write()
        if timeout > 0:
            time.sleep(timeout)

    def pending(self) -> int:
        return len(self._rows)

    def flush(self, timeout: float) -> int:
        """Write what is buffered; nothing stays pending after a write (it succeeded or failed)."""
        self._write()
        return self.pending()

    def close(self) -> None:
        self._drop_connection()

    def _write(self) -> None:
        if not self._rows:
            return
        rows, callbacks = self._rows, self._callbacks
        self._rows, self._callbacks = [], []
        error: str | None = None
        try:
            connection = self._connected()
            with connection.cursor() as cursor:
                cursor.executemany(UPSERT, rows)
            connection.commit()
        except pymysql.MySQLError as exc:
            error = f"{self.target}: {_reason(exc)}"
            self._drop_connection()
        for callback in callbacks:
            callback(error, None)

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(pymysql.MySQLError):  # already broken: nothing to release
                connection.close()


def _reason(exc: pymysql.MySQLError) -> str:
    args = exc.args
    return str(args[1]) if len(args) > 1 else str(exc)
