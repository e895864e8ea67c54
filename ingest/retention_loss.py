"""Measures Kafka deleted before the job read them: the record the job leaves of each range it
skipped (run with ``--no-fail-on-data-loss``), and which days such a record may concern.

The deleted messages are gone, so which measures they held can only be bounded, by time: the first
message read after the gap was appended to Kafka at ``appended_before``, so every deleted one was
appended earlier, and a measure is never appended to Kafka before its day began. A loss appended
before a day therefore holds none of that day's measures; any later loss may hold some. How many is
bounded by the offsets deleted (one message per measure; a transaction marker or a malformed message
also takes an offset, so "at most").

Pure: `ingest.loss_log` reads and writes the records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

# measure_date is the utility's local date: its day can begin up to 14 h before the UTC day does
# (UTC+14), and a bound must hold in every timezone.
_EARLIEST_UTC_OFFSET: Final = dt.timedelta(hours=14)


@dataclass(frozen=True)
class RetentionLoss:
    """Offsets ``[lost_from, lost_to)`` of one partition, gone before the job read them."""

    topic: str
    partition: int
    lost_from: int
    lost_to: int
    why: str
    detected_at: dt.datetime
    appended_before: dt.datetime | None = None
    """Kafka timestamp of the first message read after the gap; None when nothing of the range
    the job was reading survived (`detected_at` bounds the loss then)."""

    @property
    def offsets(self) -> int:
        return self.lost_to - self.lost_from

    @property
    def file_name(self) -> str:
        """The same for every attempt of a task that meets this gap: recording it is idempotent."""
        return f"{self.topic}-{self.partition}-{self.lost_from}-{self.lost_to}.json"

    def may_hold(self, day: dt.date) -> bool:
        """Whether the deleted messages may hold measures of ``day``."""
        day_began = dt.datetime.combine(day, dt.time.min, dt.UTC) - _EARLIEST_UTC_OFFSET
        return (self.appended_before or self.detected_at) > day_began

    def describe(self) -> str:
        before = self.appended_before or self.detected_at
        return (
            f"{self.topic}-{self.partition} offsets [{self.lost_from}, {self.lost_to}), "
            f"appended before {before.isoformat(timespec='seconds')}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "lost_from": self.lost_from,
            "lost_to": self.lost_to,
            "offsets": self.offsets,
            "why": self.why,
            "detected_at": self.detected_at.isoformat(),
            "appended_before": (
                self.appended_before.isoformat() if self.appended_before is not None else None
            ),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RetentionLoss:
        appended = data.get("appended_before")
        return cls(
            topic=str(data["topic"]),
            partition=int(data["partition"]),
            lost_from=int(data["lost_from"]),
            lost_to=int(data["lost_to"]),
            why=str(data.get("why", "")),
            detected_at=dt.datetime.fromisoformat(data["detected_at"]),
            appended_before=dt.datetime.fromisoformat(appended) if appended else None,
        )


@dataclass(frozen=True)
class DayLoss:
    """What retention may have taken of one day's missing measures."""

    losses: tuple[RetentionLoss, ...]
    """The recorded losses that may hold the day's measures."""
    at_most: int
    """Missing measures they can account for: the missing ones, up to the offsets deleted."""


def day_loss(day: dt.date, missing: int, losses: Iterable[RetentionLoss]) -> DayLoss:
    held = tuple(sorted((loss for loss in losses if loss.may_hold(day)), key=_position))
    return DayLoss(held, min(missing, sum(loss.offsets for loss in held)))


def _position(loss: RetentionLoss) -> tuple[str, int, int]:
    return loss.topic, loss.partition, loss.lost_from


def merged(losses: Iterable[RetentionLoss]) -> list[RetentionLoss]:
    """Overlapping records of one partition as one: a task run again after retention deleted more
    records the same gap from the same start, further."""
    out: list[RetentionLoss] = []
    for loss in sorted(losses, key=_position):
        last = out[-1] if out else None
        same_partition = last is not None and _position(last)[:2] == _position(loss)[:2]
        if last is None or not same_partition or loss.lost_from > last.lost_to:
            out.append(loss)
            continue
        if loss.lost_to > last.lost_to:
            out[-1] = replace(
                last,
                lost_to=loss.lost_to,
                detected_at=max(last.detected_at, loss.detected_at),
                appended_before=loss.appended_before,
            )
    return out
