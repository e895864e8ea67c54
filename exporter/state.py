"""Pure cross-collection step: `derive(previous, snapshot) -> ExporterState`.

The collectors and the JSON API read only the latest `ExporterState`. Everything that needs more
than one collection (message rates, error counters) is carried from `previous` to the new state
here. Later work (ISR history, lag in seconds, lag status) adds its own fields to `ExporterState`,
computed in `derive` from `previous.<field>` and the snapshot, without touching the rest: a
history kept in a mutable tracker is handed on by reference and updated here, and what the
collectors read from it is stored as plain values. Because `recording.replay` runs `derive`,
replays then include that work too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

from exporter.snapshot import (
    COLLECTION_PHASE,
    PHASES,
    ClusterSnapshot,
    Topic,
    min_insync_replicas,
)

TP = tuple[str, int]  # (topic, partition)
GTP = tuple[str, str, int]  # (group, topic, partition)
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class OffsetSample(Generic[K]):
    """Offsets seen at one collection, the baseline for the next rate."""

    collected_at: float
    offsets: Mapping[K, int]


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    under_replicated: bool
    under_min_isr: bool
    offline: bool
    leader_is_preferred: bool


@dataclass(frozen=True, slots=True)
class BrokerCounts:
    leader: int = 0
    follower_in_sync: int = 0
    preferred_leader: int = 0


@dataclass(frozen=True, slots=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int
    latest: int | None  # None when the partition's latest offset is unknown (then no lag)
    lag: int | None  # latest - committed, clamped at 0


@dataclass(frozen=True, slots=True)
class ExporterState:
    snapshot: ClusterSnapshot
    collections_total: int
    # Collections in which each phase failed, since the exporter started.
    errors_total: Mapping[str, int]
    latest_sample: OffsetSample[TP] | None
    committed_sample: OffsetSample[GTP] | None
    # msgs/s between the baseline sample and this collection; absent on the first collection.
    topic_rates: Mapping[str, float]
    broker_topic_rates: Mapping[tuple[int, str], float]  # attributed to each partition's leader
    consumed_rates: Mapping[tuple[str, str], float]  # (group, topic)
    # Per-collection views, computed once for the collectors and the JSON API.
    min_isr: Mapping[str, int | None]
    partition_status: Mapping[TP, PartitionStatus]
    broker_counts: Mapping[int, BrokerCounts]  # every broker in metadata or holding a replica
    topic_broker_leaders: Mapping[tuple[str, int], int]  # (topic, broker) for replica holders
    replica_sizes: Mapping[tuple[str, int, int], int]  # (topic, partition, broker) -> bytes
    # Sums of the known replica sizes; a topic is absent when none of its sizes is known.
    topic_size_bytes: Mapping[str, int]
    topic_leader_size_bytes: Mapping[str, int]
    group_lags: tuple[PartitionLag, ...]

    @property
    def up(self) -> bool:
        return self.snapshot.ok


def _frozen(d: Mapping[K, V]) -> Mapping[K, V]:
    return MappingProxyType(dict(d))


def derive(previous: ExporterState | None, snapshot: ClusterSnapshot) -> ExporterState:
    errors_total = dict.fromkeys((*PHASES, COLLECTION_PHASE), 0)
    if previous is not None:
        errors_total.update(previous.errors_total)
    for phase in snapshot.failed_phases:
        errors_total[phase] = errors_total.get(phase, 0) + 1

    latest_now = _latest_offsets(snapshot)
    committed_now = _committed_offsets(snapshot)
    latest_before = previous.latest_sample if previous else None
    committed_before = previous.committed_sample if previous else None
    topic_rates, broker_topic_rates = _produce_rates(snapshot, latest_before, latest_now)
    consumed_rates = _consumed_rates(snapshot.collected_at, committed_before, committed_now)

    min_isr = {
        t.name: min_insync_replicas(t, snapshot.broker_min_insync_replicas) for t in snapshot.topics
    }
    replica_sizes = _replica_sizes(snapshot)
    topic_size, leader_size = _topic_sizes(snapshot.topics, replica_sizes)
    return ExporterState(
        snapshot=snapshot,
        collections_total=(previous.collections_total if previous else 0) + 1,
        errors_total=_frozen(errors_total),
        # A collection without offsets keeps the older baseline, so the next rate spans the gap.
        latest_sample=OffsetSample(snapshot.collected_at, _frozen(latest_now))
        if latest_now
        else latest_before,
        committed_sample=OffsetSample(snapshot.collected_at, _frozen(committed_now))
        if committed_now
        else committed_before,
        topic_rates=_frozen(topic_rates),
        broker_topic_rates=_frozen(broker_topic_rates),
        consumed_rates=_frozen(consumed_rates),
        min_isr=_frozen(min_isr),
        partition_status=_frozen(_partition_status(snapshot.topics, min_isr)),
        broker_counts=_frozen(_broker_counts(snapshot)),
        topic_broker_leaders=_frozen(_topic_broker_leaders(snapshot.topics)),
        replica_sizes=_frozen(replica_sizes),
        topic_size_bytes=_frozen(topic_size),
        topic_leader_size_bytes=_frozen(leader_size),
        group_lags=_group_lags(snapshot),
    )


def _latest_offsets(snapshot: ClusterSnapshot) -> dict[TP, int]:
    return {
        (t.name, p.partition): p.latest_offset
        for t in snapshot.topics
        for p in t.partitions
        if p.latest_offset is not None
    }


def _committed_offsets(snapshot: ClusterSnapshot) -> dict[GTP, int]:
    return {
        (g.group_id, c.topic, c.partition): c.offset
        for g in snapshot.groups
        if g.committed is not None
        for c in g.committed
    }


def _delta(before: OffsetSample[K], key: K, now: int) -> int | None:
    """Offsets added since the baseline; None when unknown or when the offset went backwards
    (topic recreated, group offsets reset), which is a restart, not negative traffic."""
    old = before.offsets.get(key)
    if old is None or now < old:
        return None
    return now - old


def _produce_rates(
    snapshot: ClusterSnapshot, before: OffsetSample[TP] | None, latest_now: Mapping[TP, int]
) -> tuple[dict[str, float], dict[tuple[int, str], float]]:
    if before is None or not latest_now:
        return {}, {}
    dt = snapshot.collected_at - before.collected_at
    if dt <= 0:
        return {}, {}
    per_topic: dict[str, float] = {}
    per_broker: dict[tuple[int, str], float] = defaultdict(float)
    for topic in snapshot.topics:
        counted = False
        total = 0
        for p in topic.partitions:
            key = (topic.name, p.partition)
            now = latest_now.get(key)
            delta = None if now is None else _delta(before, key, now)
            if delta is None:
                continue
            counted = True
            total += delta
            if p.leader >= 0:
                per_broker[(p.leader, topic.name)] += delta / dt
        if counted:
            per_topic[topic.name] = total / dt
    return per_topic, dict(per_broker)


def _consumed_rates(
    collected_at: float, before: OffsetSample[GTP] | None, committed_now: Mapping[GTP, int]
) -> dict[tuple[str, str], float]:
    if before is None or not committed_now:
        return {}
    dt = collected_at - before.collected_at
    if dt <= 0:
        return {}
    totals: dict[tuple[str, str], int] = {}
    for key, now in committed_now.items():
        delta = _delta(before, key, now)
        if delta is not None:
            group, topic, _ = key
            totals[(group, topic)] = totals.get((group, topic), 0) + delta
    return {k: v / dt for k, v in totals.items()}


def _partition_status(
    topics: tuple[Topic, ...], min_isr: Mapping[str, int | None]
) -> dict[TP, PartitionStatus]:
    status: dict[TP, PartitionStatus] = {}
    for t in topics:
        required = min_isr[t.name]
        for p in t.partitions:
            status[(t.name, p.partition)] = PartitionStatus(
                under_replicated=len(p.isr) < len(p.replicas),
                under_min_isr=required is not None and len(p.isr) < required,
                offline=p.leader < 0,
                leader_is_preferred=bool(p.replicas) and p.leader == p.replicas[0],
            )
    return status


def _broker_counts(snapshot: ClusterSnapshot) -> dict[int, BrokerCounts]:
    leader: dict[int, int] = defaultdict(int)
    follower: dict[int, int] = defaultdict(int)
    preferred: dict[int, int] = defaultdict(int)
    brokers = {b.id for b in snapshot.brokers}
    for t in snapshot.topics:
        for p in t.partitions:
            brokers.update(p.replicas)
            if p.leader >= 0:
                leader[p.leader] += 1
            if p.replicas:
                preferred[p.replicas[0]] += 1
            in_sync = set(p.isr)
            for r in p.replicas:
                if r != p.leader and r in in_sync:
                    follower[r] += 1
    return {b: BrokerCounts(leader[b], follower[b], preferred[b]) for b in sorted(brokers)}


def _topic_broker_leaders(topics: tuple[Topic, ...]) -> dict[tuple[str, int], int]:
    counts: dict[tuple[str, int], int] = {}
    for t in topics:
        for p in t.partitions:
            for r in p.replicas:
                counts.setdefault((t.name, r), 0)
            if p.leader >= 0:
                counts[(t.name, p.leader)] = counts.get((t.name, p.leader), 0) + 1
    return counts


def _replica_sizes(snapshot: ClusterSnapshot) -> dict[tuple[str, int, int], int]:
    """Current (not future, i.e. not being moved between log dirs) replica sizes per broker."""
    return {
        (p.topic, p.partition, b.broker): p.size_bytes
        for b in snapshot.log_dirs
        for d in b.log_dirs
        for p in d.partitions
        if not p.is_future
    }


def _topic_sizes(
    topics: tuple[Topic, ...], replica_sizes: Mapping[tuple[str, int, int], int]
) -> tuple[dict[str, int], dict[str, int]]:
    total: dict[str, int] = {}
    leader: dict[str, int] = {}
    for t in topics:
        for p in t.partitions:
            for r in p.replicas:
                size = replica_sizes.get((t.name, p.partition, r))
                if size is None:
                    continue
                total[t.name] = total.get(t.name, 0) + size
                if r == p.leader:
                    leader[t.name] = leader.get(t.name, 0) + size
    return total, leader


def _group_lags(snapshot: ClusterSnapshot) -> tuple[PartitionLag, ...]:
    latest = {(t.name, p.partition): p.latest_offset for t in snapshot.topics for p in t.partitions}
    lags: list[PartitionLag] = []
    for g in snapshot.groups:
        for c in g.committed or ():
            end = latest.get((c.topic, c.partition))
            lag = None if end is None else max(0, end - c.offset)
            lags.append(PartitionLag(g.group_id, c.topic, c.partition, c.offset, end, lag))
    return tuple(lags)
