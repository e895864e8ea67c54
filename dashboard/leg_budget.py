"""Each hop's outage budget and the settings a target budget needs, as pure functions.

- Outage budget of a hop: how long its reader may stay down, starting caught up, at today's write
  rate, before its store purges a measure the reader has not read (docs/lag.md "The leg's loss
  horizon" for the hops):
  - Connect (the HES binlog): the HES purges a binlog file `binlog_expire_logs_seconds` after it
    was closed, and the file being written now closes later, so the expiry itself is a lower bound;
    a size limit (`max_binlog_total_size`, MariaDB 11.4+) is reached after limit ÷ the binlog's
    write rate. The smaller of the two.
  - The ingest job (topic `measure`): `retention.ms`, or the first partition to fill
    `retention.bytes` (the exporter's `outage_budget`, docs/lag.md#retention).
- Settings for a target budget T: `binlog_expire_logs_seconds` ≥ T (and a size limit, where one is
  set, ≥ T × the binlog's write rate); `retention.ms` ≥ T (and `retention.bytes`, where set, ≥ T ×
  the busiest partition's byte rate). What they cost: the binlog written in T, and T of the topic's
  bytes stored replication-factor times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The outage each hop should survive unless vigia-dashboard --outage-target says otherwise: a day
# covers a Connect or ingest failure found the next morning.
DEFAULT_TARGET_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class Budget:
    seconds: float | None  # None with `limit` none (nothing purges) or unknown
    limit: str  # time | size | none | unknown


NONE = Budget(None, "none")
UNKNOWN = Budget(None, "unknown")


def binlog_budget(
    expire_seconds: float | None, size_limit_bytes: int | None, written_per_second: float | None
) -> Budget:
    """How long Connect may stay down; `written_per_second` the binlog's bytes (None: unknown)."""
    budgets = []
    if expire_seconds is not None:
        budgets.append(Budget(expire_seconds, "time"))
    if size_limit_bytes is not None:
        if written_per_second is None:
            return UNKNOWN  # the size limit may come first
        if written_per_second > 0:
            budgets.append(Budget(size_limit_bytes / written_per_second, "size"))
    return min(budgets, key=lambda b: b.seconds or 0.0, default=NONE)


def kafka_budget(seconds: float | None, limit: str | None, retention_known: bool) -> Budget:
    """How long the ingest job may stay down: the exporter's outage budget of topic `measure`
    (None when Kafka deletes nothing from it by retention, or when its retention is unknown)."""
    if seconds is not None and limit is not None:
        return Budget(seconds, limit)
    return NONE if retention_known else UNKNOWN


@dataclass(frozen=True)
class BinlogSettings:
    expire_seconds: int  # binlog_expire_logs_seconds for the target
    size_limit_bytes: int | None  # max_binlog_total_size for the target, where one is set
    disk_bytes: float | None  # binlog written in the target at today's rate


def binlog_settings(
    target_seconds: float, size_limit_bytes: int | None, written_per_second: float | None
) -> BinlogSettings:
    kept = None if written_per_second is None else written_per_second * target_seconds
    size = None
    if size_limit_bytes is not None and kept is not None:
        size = max(size_limit_bytes, math.ceil(kept))
    return BinlogSettings(math.ceil(target_seconds), size, kept)


@dataclass(frozen=True)
class KafkaSettings:
    retention_ms: int
    retention_bytes: int | None  # per partition, where the topic has a size limit
    disk_bytes: float | None  # the target's bytes, stored replication-factor times


def kafka_settings(
    target_seconds: float,
    retention_bytes: int | None,
    topic_bytes_per_second: float | None,
    partitions: int,
    replication_factor: int,
) -> KafkaSettings:
    """`topic_bytes_per_second`: what the topic is written today, spread evenly over its
    partitions (the ingest job's topic is keyed by meter: an even spread)."""
    kept = None if topic_bytes_per_second is None else topic_bytes_per_second * target_seconds
    size = None
    if retention_bytes is not None and kept is not None and partitions > 0:
        size = max(retention_bytes, math.ceil(kept / partitions))
    disk = None if kept is None else kept * max(1, replication_factor)
    return KafkaSettings(math.ceil(target_seconds * 1000), size, disk)
