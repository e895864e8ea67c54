"""The HES database: the ``hes.measure`` table, DSNs, and connections through PyMySQL.

The head-end system writes every reading into ``hes.measure``; Kafka Connect (Debezium, reading
the binlog in ROW format) carries the rows to the ``measure`` topic. The simulator writes the table
(``vigia-simulate --sink hes``), the exporter and ``vigia-ingest completeness`` read it.

A DSN is ``mysql://USER:PASSWORD@HOST:PORT/DATABASE`` (port 3306 and database ``hes`` when left
out; user and password URL-encoded). ``ts`` is a naive DATETIME holding UTC, as the recorded HES
does (Debezium prints it with a literal ``Z``); every connection sets its session time zone to UTC
so that the server never shifts it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import pymysql

TABLE: Final = "measure"
# The primary key is the seed's; the two secondary indexes are what keeps the monitoring queries
# cheap: MAX(ts) reads one index entry, a day's COUNT(*) and key list read one index range.
TABLE_DDL: Final = """CREATE TABLE IF NOT EXISTS measure (
  meter varchar(16) NOT NULL,
  measure_date date NOT NULL,
  period int NOT NULL,
  magnitude varchar(8) NOT NULL,
  value double NOT NULL,
  ts datetime NOT NULL,
  PRIMARY KEY (meter, measure_date, period, magnitude),
  KEY measure_ts (ts),
  KEY measure_day (measure_date)
) ENGINE=InnoDB DEFAULT CHARSET=latin1"""

SIGNAL_TABLE: Final = "debezium_signal"
# Debezium's signalling table (signal.data.collection hes.debezium_signal): `vigia-ingest repair`
# inserts an execute-snapshot signal, and the connector writes the open / close watermarks of each
# chunk of an incremental snapshot into it, which is how it orders the chunk's rows against the
# binlog (MySQL's read-only alternative needs GTIDs MariaDB does not have). Columns as Debezium
# requires them: id, type, data, in that order.
SIGNAL_TABLE_DDL: Final = """CREATE TABLE IF NOT EXISTS debezium_signal (
  id varchar(64) NOT NULL,
  type varchar(32) NOT NULL,
  data varchar(2048) DEFAULT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=latin1"""

# A correction is the same key written again with a newer ts: the row keeps the newest reading.
# VALUES() is deprecated in MySQL 8.0.20+ but still works in 8.4, and it is the only spelling
# MariaDB knows (it has no `AS new` row alias): one statement for both. Assignments run left to
# right, so `value` is decided against the old ts before ts moves.
UPSERT: Final = (
    "INSERT INTO measure (meter, measure_date, period, magnitude, value, ts) "
    "VALUES (%s, %s, %s, %s, %s, %s) "
    "ON DUPLICATE KEY UPDATE value = IF(VALUES(ts) >= ts, VALUES(value), value), "
    "ts = GREATEST(ts, VALUES(ts))"
)


class DsnError(ValueError):
    """A DSN that cannot be used, described in one line (without the password)."""


@dataclass(frozen=True)
class Dsn:
    host: str
    port: int
    user: str
    password: str = ""
    database: str = "hes"

    def __repr__(self) -> str:
        return f"Dsn({self.redacted()!r})"

    def redacted(self) -> str:
        """The DSN for logs: everything but the password."""
        return f"mysql://{self.user}@{self.host}:{self.port}/{self.database}"


def parse_dsn(text: str) -> Dsn:
    try:
        parts = urlsplit(text.strip())
        port = parts.port or 3306
    except ValueError as exc:
        raise DsnError(f"not a DSN like mysql://user:password@host:3306/hes ({exc})") from None
    if parts.scheme not in ("mysql", "mariadb"):
        raise DsnError("a DSN starts with mysql:// (mysql://user:password@host:3306/hes)")
    if not parts.hostname or not parts.username:
        raise DsnError("a DSN needs a user and a host (mysql://user:password@host:3306/hes)")
    database = parts.path.lstrip("/") or "hes"
    return Dsn(
        host=parts.hostname,
        port=port,
        user=unquote(parts.username),
        password=unquote(parts.password or ""),
        database=database,
    )


def connect(dsn: Dsn, timeout: float, *, autocommit: bool = True) -> Any:
    """A PyMySQL connection; every network wait is bounded by `timeout` seconds."""
    return pymysql.connect(
        host=dsn.host,
        port=dsn.port,
        user=dsn.user,
        password=dsn.password,
        database=dsn.database,
        connect_timeout=max(1, round(timeout)),
        read_timeout=timeout,
        write_timeout=timeout,
        autocommit=autocommit,
        init_command="SET time_zone = '+00:00'",
        charset="latin1",
    )


def naive_utc(epoch_seconds: float) -> dt.datetime:
    """Epoch seconds as the naive UTC DATETIME the table holds."""
    return dt.datetime.fromtimestamp(epoch_seconds, dt.UTC).replace(tzinfo=None)


def epoch_seconds(value: dt.datetime) -> float:
    """A naive UTC DATETIME read from the table, as epoch seconds."""
    return value.replace(tzinfo=dt.UTC).timestamp()
