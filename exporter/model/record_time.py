"""Lag seconds from record timestamps: which committed offsets to read, and how a read combines
with the offset-history estimate (exporter/model/lag_seconds.py). Pure logic, no I/O; the reads
are done by exporter/kafka/record_times.py. Method, costs and budget: docs/lag.md.

The age of a group's oldest unconsumed message is `now − timestamp` of the first record at or
after its committed offset `C`. That needs no history, so it is right on the exporter's first
collection, where interpolation over the exporter's own history cannot see further back than its
uptime. Reads are planned per collection:
- `plan_reads` picks, among the lagging group-partitions, the (topic, partition, C) not read yet
  (a record's timestamp never changes, so a read stays valid while C stays), skipping C below the
  earliest offset (deleted by retention: nothing to read). Those nothing else answers (no value or
  extrapolated at the previous collection: every one of them after a start) are all read, bounded
  only by the time left in the collection, so that every group-topic has its maximum within the
  first collections after a start however many partitions lag. The others, which the history
  answers, are refreshed within the partition budget: the oldest by the previous collection's
  value first, then the largest lag in messages. Offsets asked for and not answered at the last two
  reads are failing: they go last, within the budget, so that they neither starve the others nor
  hold every collection to its timeout.
- `merge_record_times` keeps the reads that are still wanted.
- `combine` gives each group-partition its value and the method that produced it.

A partition a live member of the group owns without a committed offset (docs/lag.md) counts as
lagging from its earliest offset, where a reader with nothing committed starts; it is answered
by a read only, never by the history, whose estimate that far back is an extrapolation over the
exporter's own uptime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from vigia.exporter.model.snapshot import ClusterSnapshot, RecordTime

RECORD: Final = "record"
INTERPOLATED: Final = "interpolated"
EXTRAPOLATED: Final = "extrapolated"
CAUGHT_UP: Final = "caught_up"
Method = Literal["record", "interpolated", "extrapolated", "caught_up"]
# What kafka_consumergroup_lag_seconds_partitions counts beside the methods of lagging
# partitions (record, interpolated, extrapolated): a partition with lag and no value.
UNKNOWN: Final = "unknown"

TPO = tuple[str, int, int]  # (topic, partition, committed offset)
GTP = tuple[str, str, int]  # (group, topic, partition)

DEFAULT_PARTITIONS = 200
DEFAULT_SECONDS = 2.0
# librdkafka `max.partition.fetch.bytes`: Kafka still returns a whole first record batch when it is
# larger (KIP-74), so each read is one batch, this size or the batch's.
PARTITION_BYTES = 16 * 1024
# librdkafka `fetch.max.bytes`: the most one Fetch response (one per leader broker) carries.
RESPONSE_BYTES = 1024 * 1024

METHODS_HELP = (
    "Partitions of the group with lag, by the method that produced their "
    "kafka_consumergroup_lag_seconds: record (timestamp of the oldest unconsumed record), "
    "interpolated or extrapolated (exporter's offset history), unknown (no value); no series "
    "for a method no partition has."
)


@dataclass(frozen=True, slots=True)
class RecordBudget:
    """What the record-times step may spend per collection (0 partitions: never read)."""

    partitions: int = DEFAULT_PARTITIONS
    seconds: float = DEFAULT_SECONDS

    def __post_init__(self) -> None:
        if self.partitions < 0:
            raise ValueError(f"partitions must be ≥ 0, got {self.partitions}")
        if self.seconds <= 0:
            raise ValueError(f"seconds must be > 0, got {self.seconds}")


class Lagging(NamedTuple):
    """A group-partition with lag in one snapshot (a named tuple: one per group-partition per
    collection, where a frozen dataclass's field-by-field `object.__setattr__` costs more)."""

    committed: int
    latest: int
    earliest: int | None


def lagging_partitions(snapshot: ClusterSnapshot) -> dict[GTP, Lagging]:
    """Group-partitions whose committed offset is below the latest offset, and those a live member
    owns without a commit and with records, from their earliest offset (module docstring)."""
    # Only the topics the groups read: most of a cluster's partitions may have no group.
    read = {c.topic for g in snapshot.groups for c in g.committed or ()}
    read.update(r.topic for g in snapshot.groups for m in g.members or () for r in m.assignment)
    ends = {
        (t.name, p.partition): (p.earliest_offset, p.latest_offset)
        for t in snapshot.topics
        if t.name in read
        for p in t.partitions
        if p.latest_offset is not None
    }
    found: dict[GTP, Lagging] = {}
    for g in snapshot.groups:
        if g.committed is None:
            continue  # where the group stands is unknown
        committed = {(c.topic, c.partition) for c in g.committed}
        for c in g.committed:
            end = ends.get((c.topic, c.partition))
            if end is not None and c.offset < end[1]:
                found[(g.group_id, c.topic, c.partition)] = Lagging(c.offset, end[1], end[0])
        for m in g.members or ():
            for r in m.assignment:
                end = ends.get((r.topic, r.partition))
                if (r.topic, r.partition) in committed or end is None or end[0] is None:
                    continue
                if end[0] < end[1]:
                    found[(g.group_id, r.topic, r.partition)] = Lagging(end[0], end[1], end[0])
    return found


def readable(item: Lagging) -> bool:
    """A committed offset below the earliest offset was deleted by retention: nothing to read."""
    return item.earliest is None or item.committed >= item.earliest


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """The reads of one collection: `first`, which nothing else answers, all of them; `refresh`,
    most useful first, within the partition budget."""

    first: tuple[TPO, ...]
    refresh: tuple[TPO, ...]

    @property
    def targets(self) -> list[TPO]:
        return [*self.first, *self.refresh]


def plan_reads(
    lagging: Mapping[GTP, Lagging],
    known: Mapping[TPO, RecordTime],
    previous_seconds: Mapping[GTP, float],
    previous_methods: Mapping[GTP, str],
    limit: int,
    failing: Set[TPO] = frozenset(),
) -> ReadPlan:
    """What to read this collection (module docstring); nothing with a `limit` of 0."""
    if limit == 0:
        return ReadPlan((), ())
    first: set[TPO] = set()
    ranks: dict[TPO, tuple[int, float, int]] = {}
    for key, item in lagging.items():
        _, topic, partition = key
        target = (topic, partition, item.committed)
        if target in known or not readable(item):
            continue
        method = previous_methods.get(key)
        if target not in failing and (method is None or method == EXTRAPOLATED):
            first.add(target)
            continue
        age = previous_seconds.get(key, 0.0)
        # Smaller sorts first: answered, then older, then more messages behind; failing last.
        rank = (int(target in failing), -age, -(item.latest - item.committed))
        ranks[target] = min(rank, ranks.get(target, rank))
    # An offset shared with a group nothing answers is read first anyway.
    refresh = sorted(ranks.keys() - first, key=lambda t: (ranks[t], t))[:limit]
    return ReadPlan(tuple(sorted(first)), tuple(refresh))


def merge_record_times(
    previous: Mapping[TPO, RecordTime],
    read: Iterable[RecordTime],
    lagging: Mapping[GTP, Lagging] | None,
) -> dict[TPO, RecordTime]:
    """Reads still useful: those of a readable lagging committed offset of this collection, or,
    when the collection did not see every group and offset (`lagging` None), all of them."""
    merged = dict(previous)
    merged.update(((r.topic, r.partition, r.offset), r) for r in read)
    if lagging is None:
        return merged
    wanted = {(t, p, item.committed) for (_, t, p), item in lagging.items() if readable(item)}
    return {k: v for k, v in merged.items() if k in wanted}


def combine(
    committed: int,
    latest: int,
    record: RecordTime | None,
    estimate: tuple[float, Method] | None,
    now: float,
) -> tuple[float, Method] | None:
    """Lag seconds of one group-partition and its method, from a read record (or None) and the
    history's estimate (or None); None when neither answers.

    - Lag 0: 0 s, caught_up.
    - A record read at C with a timestamp: `now − timestamp` (≥ 0; a producer clock ahead of the
      exporter's gives 0), record.
    - A record read past C (C is a transaction marker, an aborted or a compacted-away record): it is
      the oldest message the group will read, and `now − timestamp` is a lower bound of the age of
      C. The larger of it and the history's estimate, with the method of the larger.
    - No usable record (none read, no timestamp): the history's estimate.
    """
    if committed >= latest:
        return 0.0, CAUGHT_UP
    if record is None or record.timestamp_ms is None:
        return estimate
    age = max(0.0, now - record.timestamp_ms / 1000.0)
    if record.record_offset > committed and estimate is not None and estimate[0] > age:
        return estimate
    return age, RECORD


def method_counts(lagging: Iterable[GTP], methods: Mapping[GTP, str]) -> dict[tuple[str, str], int]:
    """(group, method) → partitions with lag, for the methods that have some: of the 4 counts a
    group could have, most are 0 (issue 24: 4 series per group, 3 of them zero)."""
    counts: dict[tuple[str, str], int] = {}
    for group, topic, partition in lagging:
        method = methods.get((group, topic, partition), UNKNOWN)
        counts[(group, method)] = counts.get((group, method), 0) + 1
    return counts
