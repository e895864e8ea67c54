"""Synthetic collections of a cluster with many consumer groups, for the derive/render and memory
benchmarks (`exporter_groups_cpu.py`, `exporter_memory.py`): no Kafka, snapshots built as the
adapter would return them, one every 15 s of simulated time.

The cluster is that of `exporter_cost_curve.py` (docs/performance.md): a base of 2,000 partitions
(40 topics of 50, RF 3) a producer writes into, so every end offset moves; and consumer groups
that each committed every partition of one 6-partition topic at an offset of their own, with lag.
Where `exporter_cost_curve.py` puts every group on one topic with a trickle (every group-partition's
end offset moves at every collection), here the groups are spread over `topics` topics, of which
the first `busy` share is written to and consumed (end and committed offsets move) and the rest
are idle (neither moves): the case in which nothing a group-partition's values depend on changes
but the time. `busy=1.0` is the cost curve's load. Ten groups have a live member. The record-times
step is played as `exporter/kafka/record_times.py` plans it, every planned read answered.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType

from benchmarks.exporter_snapshot import healthy_snapshot
from vigia.exporter.model.record_time import DEFAULT_PARTITIONS, lagging_partitions, plan_reads
from vigia.exporter.model.snapshot import (
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    GroupMember,
    LogDirPartition,
    Partition,
    RecordTime,
    Topic,
    TopicPartitionRef,
)
from vigia.exporter.model.state import ExporterState

START = 1_800_000_000.0
INTERVAL = 15.0
BROKERS = 3
_CONFIGS = MappingProxyType(
    {"min.insync.replicas": "2", "retention.ms": "604800000", "cleanup.policy": "delete"}
)


@dataclass(frozen=True)
class GroupLoad:
    groups: int = 2000
    partitions: int = 6  # per group topic
    topics: int = 20  # group topics the groups are spread over
    busy: float = 0.25  # share of the group topics written to and consumed
    base_partitions: int = 2000
    live_groups: int = 10

    def busy_topics(self) -> int:
        return round(self.topics * self.busy)


def _replicas(n: int) -> tuple[int, ...]:
    return tuple((n + r) % BROKERS + 1 for r in range(BROKERS))


def snapshot(load: GroupLoad, i: int, record_times: tuple[RecordTime, ...] = ()) -> ClusterSnapshot:
    """Collection `i` (0-based): base end offsets grow by 5 + p % 7 a collection; a busy group
    topic's by 150, its groups' commits by 140 (they fall behind slowly); idle ones stay."""
    at = START + INTERVAL * i
    topics: list[Topic] = []
    sizes: dict[int, list[LogDirPartition]] = {b: [] for b in range(1, BROKERS + 1)}
    made = 0

    def add(name: str, ends: list[int]) -> None:
        nonlocal made
        parts = []
        for p, end in enumerate(ends):
            replicas = _replicas(made + p)
            parts.append(Partition(p, replicas[0], replicas, replicas, (), 0, end))
            for b in replicas:
                sizes[b].append(LogDirPartition(name, p, end * 200, 0, False))
        made += len(ends)
        topics.append(Topic(name, False, tuple(parts), _CONFIGS))

    for t in range(-(-load.base_partitions // 50)):
        add(f"base-{t:03d}", [10_000 + (5 + p % 7) * i for p in range(50)])
    busy = load.busy_topics()
    for t in range(load.topics):
        moving = i if t < busy else 0
        add(f"orders-{t:02d}", [20_000 + 150 * moving] * load.partitions)
    groups = []
    for g in range(load.groups):
        t = g % load.topics
        name = f"orders-{t:02d}"
        moving = i if t < busy else 0
        committed = tuple(
            CommittedOffset(name, p, 20_000 - 1 - (g * 7 + p) % 5_000 + 140 * moving)
            for p in range(load.partitions)
        )
        members: tuple[GroupMember, ...] = ()
        state = "EMPTY"
        if g < load.live_groups:
            state = "STABLE"
            refs = tuple(TopicPartitionRef(name, p) for p in range(load.partitions))
            members = (GroupMember(f"member-{g}", f"client-{g}", "/10.0.0.1", refs),)
        groups.append(
            ConsumerGroup(f"group-{g:05d}", state, "CLASSIC", "range", 1, members, committed)
        )
    return healthy_snapshot(at, topics, sizes, groups, record_times)


def with_record_times(snap: ClusterSnapshot, previous: ExporterState | None) -> ClusterSnapshot:
    """The record-times step: what `plan_reads` asks for, each read answered with a record whose
    timestamp is a minute before the offset's (simulated) production."""
    if previous is None:
        return snap
    plan = plan_reads(
        lagging_partitions(snap),
        previous.record_times,
        previous.lag_seconds,
        previous.lag_seconds_methods,
        DEFAULT_PARTITIONS,
    )
    read = tuple(
        RecordTime(t, p, offset, offset, int((START - 60 - (20_000 - offset)) * 1000))
        for t, p, offset in plan.targets
    )
    return replace(snap, record_times=read)
