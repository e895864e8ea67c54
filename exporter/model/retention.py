"""Ahead of the loss: how long until Kafka may delete what a group has not read, whether its
catch-up ends first, and what was deleted unread (docs/lag.md#retention).

Self-contained, like lag_status: plain values in, one `RetentionTracker` kept across collections,
no clock (times are the collections'). Three questions, per group and topic:
- the retention margin: seconds until the oldest record the group has not consumed may be deleted,
  by the topic's time limit (`retention.ms`) or size limit (`retention.bytes`), whichever comes
  first. Both are lower bounds: Kafka deletes whole segments, only once the segment's newest record
  is past the limit (time) or the log without that segment is still over it (size);
- the catch-up: backlog ÷ how fast it shrinks over `window` seconds (a span that outlasts one slow
  micro-batch), and whether it shrinks at all (`CatchUp`);
- the loss: records below the log start offset that the group never committed past.
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Final, Literal, NamedTuple

TIME: Final = "time"
SIZE: Final = "size"
DELETED: Final = "deleted"  # the method of a margin whose record is gone already
Limit = Literal["time", "size"]
# Why a topic has no margin: Kafka never deletes its records by age or size (compacted, or both
# limits infinite), or its configs were not read.
NoRetention = Literal["compacted", "infinite", "unknown"]

DEFAULT_WINDOW_SECONDS = 300.0
DEFAULT_FLOOR_SECONDS = 6 * 3600.0
# A backlog that changed by at most this share over the window (and at least one message) holds.
HOLDING_TOLERANCE = 0.01

TP = tuple[str, int]
GT = tuple[str, str]
GTP = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class Retention:
    """A topic's deletion limits; None for a limit that is off (-1)."""

    ms: int | None
    bytes: int | None  # per partition


def topic_retention(configs: Mapping[str, str]) -> Retention | NoRetention:
    if "retention.ms" not in configs and "retention.bytes" not in configs:
        return "unknown"
    policies = {p.strip() for p in configs.get("cleanup.policy", "delete").split(",")}
    if "delete" not in policies:
        return "compacted"
    ms, size = _limit(configs.get("retention.ms")), _limit(configs.get("retention.bytes"))
    if ms is None and size is None:
        return "infinite"
    return Retention(ms, size)


def _limit(value: str | None) -> int | None:
    try:
        number = int(value) if value is not None else -1
    except ValueError:
        return None
    return number if number >= 0 else None


@dataclass(frozen=True, slots=True)
class PartitionLog:
    """One partition as a collection saw it."""

    earliest: int
    latest: int
    size_bytes: int | None  # the leader replica's size; None when unknown
    produced_per_second: float | None  # over the tracker's window; None on the first sight


class Margin(NamedTuple):
    """One per group-partition per collection: a named tuple, as `Lagging` is."""

    seconds: float
    limit: Limit
    # For the time limit, how the oldest unconsumed record's age was had (the lag seconds'
    # method, `caught_up` when there is none); for the size limit, `rate`.
    method: str


def partition_margin(
    retention: Retention,
    log: PartitionLog,
    committed: int,
    age_seconds: float | None,
    age_method: str | None,
) -> Margin | None:
    """The smaller of the time and size margins of one partition (the time margin on a tie), 0
    once the committed offset is below the log start (deleted already); None when neither limit
    can be computed."""
    if committed < log.earliest:
        return Margin(0.0, TIME if retention.ms is not None else SIZE, DELETED)
    by_time = None
    if retention.ms is not None:
        if committed >= log.latest:
            # Nothing unread: what is produced next is the oldest, the whole retention ahead.
            by_time = _whole_retention(retention.ms)
        elif age_seconds is None or age_method is None:
            return None  # the time limit may come first: the size limit alone would overstate
        else:
            by_time = Margin(max(0.0, retention.ms / 1000 - age_seconds), TIME, age_method)
    if retention.bytes is None:
        return by_time
    if log.size_bytes is None or log.produced_per_second is None:
        return None  # the size limit may come first: the time limit alone would overstate
    by_size = _size_margin(retention.bytes, log, log.size_bytes, committed)
    if by_size is None or (by_time is not None and by_time.seconds <= by_size.seconds):
        return by_time
    return by_size


@functools.lru_cache(maxsize=256)
def _whole_retention(ms: int) -> Margin:
    """The margin of every caught-up partition of a topic: one shared value, not one per
    group-partition (most of them at 10,000 groups)."""
    return Margin(ms / 1000, TIME, "caught_up")


def first_to_go(margin: Margin) -> tuple[float, bool]:
    """Orders margins: the smallest first and, at 0, a record already deleted before one that
    may be deleted at any moment."""
    return margin.seconds, margin.method != DELETED


def _size_margin(limit: int, log: PartitionLog, size: int, committed: int) -> Margin | None:
    """Bytes still allowed before the unread part alone exceeds the limit, at the current growth;
    None when nothing is written (size retention then deletes nothing). Records are taken as
    equally large: the unread bytes are the log's size in proportion."""
    rate = log.produced_per_second
    if rate is None or rate <= 0 or log.latest <= log.earliest:
        return None
    per_record = size / (log.latest - log.earliest)
    unread = per_record * (log.latest - max(committed, log.earliest))
    return Margin(max(0.0, (limit - unread) / (rate * per_record)), SIZE, "rate")


def outage_budget(retention: Retention, logs: Iterable[PartitionLog]) -> Margin | None:
    """How long a consumer that stopped now could stay stopped before losing a record: the time
    limit, or the first of `logs` (every partition of the topic; only read for a size limit) to
    fill the size limit; None while a partition's size or growth is unknown."""
    margins = [] if retention.ms is None else [_whole_retention(retention.ms)]
    if retention.bytes is not None:
        for log in logs:
            if log.size_bytes is None or log.produced_per_second is None:
                return None
            if size := _size_margin(retention.bytes, log, log.size_bytes, log.latest):
                margins.append(size)
    return min(margins, key=lambda m: m.seconds, default=None)


class CatchUp(IntEnum):
    """What the backlog did over the window (the numbers are the gauge's values)."""

    CAUGHT_UP = 0  # nothing to read
    DRAINING = 1  # it shrinks: time to catch up = backlog ÷ drain rate
    HOLDING = 2  # it neither shrinks nor grows beyond HOLDING_TOLERANCE
    GROWING = 3


@dataclass(frozen=True, slots=True)
class Progress:
    """One (group, topic) at one collection: its backlog and how much it has consumed."""

    at: float
    backlog: int  # Σ (latest − committed) over the partitions with a commit
    committed: int  # Σ committed offsets, for whether the group consumes at all


@dataclass(frozen=True, slots=True)
class CatchUpEstimate:
    state: CatchUp
    backlog: int
    drain_per_second: float  # consumption minus production; negative while the backlog grows
    consuming: bool  # the committed offsets moved within the window
    seconds: float | None  # time to catch up, only while draining (0 when caught up)


def catch_up(oldest: Progress, newest: Progress) -> CatchUpEstimate | None:
    span = newest.at - oldest.at
    if span <= 0:
        return None
    drain = (oldest.backlog - newest.backlog) / span
    consuming = newest.committed != oldest.committed
    if newest.backlog == 0:
        return CatchUpEstimate(CatchUp.CAUGHT_UP, 0, drain, consuming, 0.0)
    tolerance = max(1.0, HOLDING_TOLERANCE * oldest.backlog)
    change = newest.backlog - oldest.backlog
    if abs(change) <= tolerance:
        return CatchUpEstimate(CatchUp.HOLDING, newest.backlog, drain, consuming, None)
    if change > 0:
        return CatchUpEstimate(CatchUp.GROWING, newest.backlog, drain, consuming, None)
    seconds = newest.backlog / drain
    return CatchUpEstimate(CatchUp.DRAINING, newest.backlog, drain, consuming, seconds)


def at_risk(margin: Margin, estimate: CatchUpEstimate, floor_seconds: float) -> bool:
    """The question on call: will the group lose records before it has caught up? Yes when its
    catch-up ends after the margin, or when the margin is under the floor and nothing brings it
    back: the backlog grows, or holds while the group consumes nothing (its oldest record ages)."""
    if estimate.state is CatchUp.CAUGHT_UP:
        return False
    if estimate.state is CatchUp.DRAINING:
        return estimate.seconds is not None and estimate.seconds > margin.seconds
    ageing = estimate.state is CatchUp.GROWING or not estimate.consuming
    return ageing and margin.seconds < floor_seconds


@dataclass(frozen=True, slots=True)
class Loss:
    missing: int  # records between the committed offset and the log start, deleted unread
    counted: int  # everything counted for this group-partition since the tracker's start


# What almost every group-partition reports: one shared value rather than one each.
_NOTHING_LOST: Final = Loss(0, 0)


_INT64_MAX: Final = 2**63 - 1


class _Samples:
    """One key's samples over the window: their times and integer columns (a fifth of the memory
    of a deque of tuples or `Progress`es; 21 samples per key at a 15-s interval, 10,000 keys at
    10,000 groups). Values past 64 bits are clamped: no real log has them."""

    __slots__ = ("at", "columns")

    def __init__(self, width: int) -> None:
        self.at = array("d")
        self.columns = tuple(array("q") for _ in range(width))

    def add(self, at: float, values: tuple[int, ...], cutoff: float) -> None:
        """Appends one sample, then drops those older than `cutoff` but the newest of them (the
        baseline, so that the span reaches back a whole window once there is one)."""
        self.at.append(at)
        for column, value in zip(self.columns, values, strict=True):
            column.append(min(value, _INT64_MAX))
        drop = 0
        while drop + 1 < len(self.at) and self.at[drop + 1] <= cutoff:
            drop += 1
        if drop:
            del self.at[:drop]
            for column in self.columns:
                del column[:drop]

    def sample(self, index: int) -> tuple[float, list[int]]:
        """The time and values of one sample, as kept."""
        return self.at[index], [column[index] for column in self.columns]


@dataclass(slots=True)
class RetentionTracker:
    """Windows of the latest offsets per partition and of the progress per (group, topic), and the
    deletions counted per group-partition. A gap already open at a partition's first sight is
    reported in `Loss.missing` but not counted: an exporter that restarts during an outage counts
    only what is deleted after its start, so that Prometheus never sees one loss twice."""

    window_seconds: float = DEFAULT_WINDOW_SECONDS
    floor_seconds: float = DEFAULT_FLOOR_SECONDS
    _latest: dict[TP, _Samples] = field(default_factory=dict)
    _progress: dict[GT, _Samples] = field(default_factory=dict)
    # Per group-partition: the offset up to which deletions were counted, and their count.
    _counted_up_to: dict[GTP, int] = field(default_factory=dict)
    _counted: dict[GTP, int] = field(default_factory=dict)

    def produced_per_second(
        self, at: float, latest: Mapping[TP, int], *, prune: bool
    ) -> dict[TP, float]:
        """Records the window's latest offsets, and returns each partition's production rate."""
        rates: dict[TP, float] = {}
        for key, offset in latest.items():
            samples = self._latest.get(key)
            if samples is None or offset < samples.columns[0][-1]:
                # First sight, or the topic was recreated: a new log.
                samples = self._latest[key] = _Samples(1)
            samples.add(at, (offset,), at - self.window_seconds)
            first_at, (first,) = samples.sample(0)
            if at > first_at:
                rates[key] = (offset - first) / (at - first_at)
        if prune:
            for gone in self._latest.keys() - latest.keys():
                del self._latest[gone]
        return rates

    def catch_up(
        self, progress: Mapping[GT, Progress], *, prune: bool
    ) -> dict[GT, CatchUpEstimate]:
        estimates: dict[GT, CatchUpEstimate] = {}
        for key, now in progress.items():
            samples = self._progress.get(key)
            if samples is None:
                samples = self._progress[key] = _Samples(2)
            samples.add(now.at, (now.backlog, now.committed), now.at - self.window_seconds)
            # Both as kept, so that a clamped sum compares with a clamped sum.
            at, (backlog, committed) = samples.sample(0)
            oldest = Progress(at, backlog, committed)
            at, (backlog, committed) = samples.sample(-1)
            newest = Progress(at, backlog, committed)
            if estimate := catch_up(oldest, newest):
                estimates[key] = estimate
        if prune:
            for gone in self._progress.keys() - progress.keys():
                del self._progress[gone]
        return estimates

    def losses(
        self, committed: Mapping[GTP, int], earliest: Mapping[TP, int], *, prune: bool
    ) -> dict[GTP, Loss]:
        """Every group-partition whose log start is known. Records in [committed, log start) are
        deleted unread; each is counted once, from the highest offset counted or committed."""
        result: dict[GTP, Loss] = {}
        counted_up_to, counted = self._counted_up_to, self._counted
        for key, offset in committed.items():
            start = earliest.get(key[1:])
            if start is None:
                continue
            accounted = counted_up_to.get(key)
            if accounted is None:
                accounted = max(offset, start)  # first sight: a baseline
                counted[key] = 0
            elif offset > accounted:
                accounted = offset
            if start > accounted:
                counted[key] += start - accounted
                accounted = start
            counted_up_to[key] = accounted
            count = counted[key]
            result[key] = (
                _NOTHING_LOST
                if count == 0 and start <= offset
                else Loss(max(0, start - offset), count)
            )
        if prune:
            for gone in self._counted_up_to.keys() - committed.keys():
                del self._counted_up_to[gone], self._counted[gone]
        return result
