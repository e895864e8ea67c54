"""Offset arithmetic of the Kafka source: pure functions, no Kafka and no Spark.

An offset position maps (topic, partition) to the next offset to read. Spark keeps it in the
checkpoint as JSON in the same shape as its own Kafka source: ``{"measure": {"0": 120, "1": 87}}``
(JSON object keys are strings, hence the partition numbers as text).

A micro-batch reads, for every partition, the half-open range ``[start, end)`` where ``start`` is
the previous batch's end and ``end`` comes from `next_end`: the latest offsets, capped by the read
limit and by the Trigger.AvailableNow target.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

TopicPartition: TypeAlias = tuple[str, int]
Offsets: TypeAlias = dict[TopicPartition, int]

# Spark's Kafka source conventions inside a startingOffsets JSON.
EARLIEST: Final = -2
LATEST: Final = -1


class DataLossError(RuntimeError):
    """Offsets the job still needed are gone (retention, topic re-creation) and failOnDataLoss."""


class OffsetSpecError(ValueError):
    """A startingOffsets value that is neither earliest, latest nor a valid offsets JSON."""


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The checkpoint form, sorted so that equal positions serialise identically."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def from_json(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in data.items()
        for partition, offset in partitions.items()
    }


@dataclass(frozen=True)
class StartingOffsets:
    """Where a query without a checkpoint starts: ``earliest``, ``latest`` or explicit offsets."""

    mode: str  # "earliest" | "latest" | "explicit"
    explicit: Offsets

    @classmethod
    def parse(cls, spec: str) -> StartingOffsets:
        text = spec.strip()
        if text.lower() in ("earliest", "latest"):
            return cls(text.lower(), {})
        try:
            data = json.loads(text)
            explicit = from_json(data)
        except (ValueError, AttributeError, TypeError) as exc:
            raise OffsetSpecError(
                f"startingOffsets must be earliest, latest or JSON like "
                f'{{"measure": {{"0": 42}}}}, not {spec!r}'
            ) from exc
        if any(offset < EARLIEST for offset in explicit.values()):
            raise OffsetSpecError(f"startingOffsets has an offset below {EARLIEST}: {spec!r}")
        return cls("explicit", explicit)

    def resolve(self, earliest: Mapping[TopicPartition, int], latest: Offsets) -> Offsets:
        """The start position over the partitions that exist now (``latest``'s keys).

        A partition missing from explicit offsets starts at the earliest offset, as Spark does;
        -2 / -1 in explicit offsets mean earliest / latest.
        """
        if self.mode == "earliest":
            return {tp: earliest[tp] for tp in latest}
        if self.mode == "latest":
            return dict(latest)
        start: Offsets = {}
        for tp in latest:
            wanted = self.explicit.get(tp, EARLIEST)
            if wanted == EARLIEST:
                start[tp] = earliest[tp]
            elif wanted == LATEST:
                start[tp] = latest[tp]
            else:
                start[tp] = wanted
        return start


def cap_to_target(latest: Offsets, target: Mapping[TopicPartition, int] | None) -> Offsets:
    """Trigger.AvailableNow: never go past the offsets recorded when the run began; partitions
    created after that are left for the next run."""
    if target is None:
        return dict(latest)
    return {tp: min(offset, target[tp]) for tp, offset in latest.items() if tp in target}


def limit_end(start: Mapping[TopicPartition, int], available: Offsets, max_rows: int) -> Offsets:
    """End offsets reading at most ``max_rows`` offsets in total, shared across partitions in
    proportion to each one's backlog (largest remainder, so the shares add up exactly).

    Spark's own Kafka source rounds small shares up, which can exceed the limit; a backlog must
    drain in batches that never do. Partitions absent from ``start`` begin at offset 0.
    """
    if max_rows <= 0:
        raise ValueError("max_rows must be positive")
    backlog = {tp: max(0, end - start.get(tp, 0)) for tp, end in available.items()}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(available)
    shares = {tp: max_rows * size // total for tp, size in backlog.items()}
    left = max_rows - sum(shares.values())
    # Ties go to the lower (topic, partition) so the plan is deterministic.
    by_remainder = sorted(backlog, key=lambda tp: (-(max_rows * backlog[tp] % total), tp))
    for tp in by_remainder[:left]:
        shares[tp] += 1
    return {
        tp: start.get(tp, 0) + shares[tp] if backlog[tp] else end for tp, end in available.items()
    }


@dataclass(frozen=True)
class PartitionLoss:
    """Offsets of one partition that can no longer be read."""

    topic: str
    partition: int
    lost_from: int
    lost_to: int  # exclusive
    why: str

    def describe(self) -> str:
        return (
            f"{self.topic}-{self.partition}: offsets [{self.lost_from}, {self.lost_to}) are no "
            f"longer available ({self.why})"
        )


def next_end(
    start: Mapping[TopicPartition, int],
    latest: Offsets,
    earliest: Mapping[TopicPartition, int],
    max_rows: int | None,
    target: Mapping[TopicPartition, int] | None = None,
) -> tuple[Offsets, list[PartitionLoss]]:
    """The end offsets of the next micro-batch, and the data losses seen on the way.

    - A partition of ``start`` that no longer exists (topic deleted) is lost and dropped.
    - A partition whose latest offset went below ``start`` (topic re-created) restarts at its
      earliest offset; the range in between is reported lost.
    Whether a loss stops the query (failOnDataLoss) is the caller's decision.
    """
    losses: list[PartitionLoss] = []
    for (topic, partition), offset in sorted(start.items()):
        if (topic, partition) not in latest:
            losses.append(
                PartitionLoss(topic, partition, offset, offset, "the partition no longer exists")
            )
    available = cap_to_target(latest, target)
    effective_start: Offsets = {}
    reset: Offsets = {}
    for tp, end in available.items():
        begin = start.get(tp, 0)
        if end < begin:
            losses.append(
                PartitionLoss(
                    tp[0], tp[1], end, begin, f"its latest offset {end} is below the position"
                )
            )
            reset[tp] = earliest.get(tp, 0)
        else:
            effective_start[tp] = begin
    capped = {tp: available[tp] for tp in effective_start}
    if max_rows is not None:
        capped = limit_end(effective_start, capped, max_rows)
    return {**capped, **reset}, losses


@dataclass(frozen=True)
class OffsetRange:
    """The offsets ``[start, end)`` of one partition that one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def plan_ranges(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
) -> list[OffsetRange]:
    """One range per partition with something to read, in (topic, partition) order."""
    ranges = [
        OffsetRange(topic, partition, start.get((topic, partition), 0), stop)
        for (topic, partition), stop in sorted(end.items())
    ]
    return [r for r in ranges if r.size > 0]


def clamp_to_available(
    wanted: OffsetRange, earliest: int, latest: int
) -> tuple[OffsetRange, PartitionLoss | None]:
    """What of ``wanted`` can still be read given the partition's watermarks right now.

    Retention may have deleted the range's beginning (earliest > start), or the partition may
    have been truncated or re-created (latest < end). Gaps *inside* the range (compaction,
    transaction markers) are not losses: the reader steps over them.
    """
    start = min(max(wanted.start, earliest), wanted.end)
    end = max(min(wanted.end, latest), start)
    if (start, end) == (wanted.start, wanted.end):
        return wanted, None
    clamped = OffsetRange(wanted.topic, wanted.partition, start, end)
    if start > wanted.start:
        loss = PartitionLoss(
            wanted.topic,
            wanted.partition,
            wanted.start,
            start,
            f"the earliest available offset is {earliest}: retention deleted them",
        )
    else:
        loss = PartitionLoss(
            wanted.topic,
            wanted.partition,
            end,
            wanted.end,
            f"the latest offset is {latest}: the partition was truncated or re-created",
        )
    return clamped, loss


def offsets_behind(
    end: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
) -> dict[str, int]:
    """Per topic, the largest number of offsets a partition still has to read (≥ 0)."""
    behind: dict[str, int] = {}
    for (topic, partition), newest in latest.items():
        gap = max(0, newest - end.get((topic, partition), 0))
        behind[topic] = max(behind.get(topic, 0), gap)
    return behind
