"""The HES leg seen from the exporter (pure): what one look at the source gave, and how far each hop
of HES → Kafka → store is behind the one before it.

Hops, in seconds, never negative:

- ``hes_to_kafka``: the HES's newest row ``ts`` minus the newest measure ``ts`` among the last
  record of each partition of the pipeline topic. Both are the HES's own clock (the row's ts
  travels in the message), so simulated or backfilled time compares correctly, where a Kafka
  record timestamp (the producer's wall clock) would not. The last record of a partition is the
  newest it received, not necessarily the largest ts (a backfill writes old days), hence "newest
  among the last records".
- ``kafka_to_store``: the ingest job's consumer group lag in seconds on the topic, the largest
  over partitions (`exporter.model.lag_seconds`, the same value as
  ``kafka_consumergroup_lag_seconds_max``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

HOP_HES_TO_KAFKA: Final = "hes_to_kafka"
HOP_KAFKA_TO_STORE: Final = "kafka_to_store"
HOPS: Final = (HOP_HES_TO_KAFKA, HOP_KAFKA_TO_STORE)


@dataclass(frozen=True)
class HesReading:
    """What the HES answered in one round."""

    newest_row_timestamp: float | None
    """Newest ``ts`` in hes.measure, epoch seconds; None while the table is empty."""
    day_rows: Mapping[dt.date, int]
    """Rows per measure date, for `watched_days` (0 for a day without rows)."""
    query_seconds: float
    """Time the round's queries took."""
    counted_at: float | None = None
    """When `day_rows` were counted (they are counted less often than the newest ts is read)."""


@dataclass(frozen=True)
class TopicTailReading:
    """What one read of the topic's tail gave."""

    end_offsets: int
    """The high watermarks summed over the topic's partitions: it grows with every record."""
    newest_measure: float | None
    """Newest measure ts among the last records; None while the topic holds no measure."""


@dataclass(frozen=True)
class SourceLook:
    """One round of watching the source: the HES, then the topic's tail (in that order)."""

    checked_at: float
    hes: HesReading | None
    """None when the HES did not answer (see `hes_error`)."""
    hes_error: str | None = None
    topic_newest_measure: float | None = None
    """Newest measure ts among the topic's last records; None when unknown or the topic is empty."""
    topic_error: str | None = None
    topic_end_offsets: int | None = None
    """`TopicTailReading.end_offsets`, read after the HES; None when the tail was not read."""

    @property
    def hes_up(self) -> bool:
        return self.hes is not None


def watched_days(now: float) -> tuple[dt.date, dt.date]:
    """The last closed day and the open day (UTC) at epoch second `now`."""
    today = dt.datetime.fromtimestamp(now, dt.UTC).date()
    return today - dt.timedelta(days=1), today


def counts_due(
    previous: HesReading | None, days: tuple[dt.date, dt.date], now: float, interval: float
) -> bool:
    """Whether this round counts the days' rows: every `interval` seconds, and at once when there
    are no counts yet or the watched days changed (midnight)."""
    if previous is None or previous.counted_at is None:
        return True
    return tuple(previous.day_rows) != days or now - previous.counted_at >= interval


def measure_ts(value: bytes | None) -> float | None:
    """The ``ts`` of a measure message (``2026-11-20T09:15:00Z``) as epoch seconds; None when the
    value is not a measure (a malformed message is the ingest job's business, not this hop's)."""
    if not value:
        return None
    try:
        record = json.loads(value)
        text = record["ts"]
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def hop_lags(look: SourceLook | None, store_lag_seconds: float | None) -> dict[str, float]:
    """Seconds each hop is behind; a hop whose inputs are unknown is left out (no sample)."""
    lags: dict[str, float] = {}
    hes_newest = look.hes.newest_row_timestamp if look is not None and look.hes else None
    kafka_newest = look.topic_newest_measure if look is not None else None
    if hes_newest is not None and kafka_newest is not None:
        lags[HOP_HES_TO_KAFKA] = max(0.0, hes_newest - kafka_newest)
    if store_lag_seconds is not None:
        lags[HOP_KAFKA_TO_STORE] = max(0.0, store_lag_seconds)
    return lags
