"""Cross-collection step: `derive(previous, snapshot, history) -> ExporterState`.

The collectors and the JSON API read only the latest `ExporterState`. Everything that needs more
than one collection is computed here: message rates and error counters from `previous`, and from
`History` (the mutable trackers one exporter keeps for its whole life) the ISR history, lag in
seconds and lag status. `derive` updates the trackers and stores what the collectors read from
them as plain values. Nothing reads a clock: times come from `snapshot.collected_at`, so feeding
the same snapshots in the same order (as `recording.replay` does) gives the same states.

A phase that failed leaves the trackers' memory of what it did not see intact (`prune=False`), so
one partial collection does not reset lag-status windows or offset history; the families of what
was not seen are left out of that state as usual.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Generic, NamedTuple, TypeVar

from vigia.exporter.model.isr_history import IsrTracker
from vigia.exporter.model.lag_seconds import OffsetHistory, max_lag_seconds_by_group_topic
from vigia.exporter.model.lag_status import (
    DEFAULT_WINDOW_SIZE,
    GroupEvaluation,
    LagStatusTracker,
    PartitionEvaluation,
)
from vigia.exporter.model.record_time import (
    EXTRAPOLATED,
    INTERPOLATED,
    TPO,
    Lagging,
    Method,
    combine,
    lagging_partitions,
    merge_record_times,
    method_counts,
)
from vigia.exporter.model.retention import (
    DEFAULT_FLOOR_SECONDS,
    DEFAULT_WINDOW_SECONDS,
    RetentionTracker,
)
from vigia.exporter.model.retention_view import RetentionView, retention_view
from vigia.exporter.model.snapshot import (
    COLLECTION_PHASE,
    PHASES,
    ClusterSnapshot,
    RecordTime,
    Topic,
    min_insync_replicas,
)

TP = tuple[str, int]  # (topic, partition)
GTP = tuple[str, str, int]  # (group, topic, partition)
K = TypeVar("K")
V = TypeVar("V")
# A broker back in the metadata still loads its groups' coordinators, answers slowly and takes
# its partitions' leaders back for a while after its ISRs are whole: the timeouts and leader or
# coordinator errors of that while are its motion. A minute covers a rejoin on a loaded machine.
# Leaders moving between brokers that all stay up (the controller's preferred-leader election,
# every 5 minutes by default, or a reassignment) unload and load coordinators the same way.
BROKER_SETTLE_SECONDS = 60.0


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


# The 16 possible statuses, shared by every partition: building one per partition and collection
# was the largest step of `derive` at 2,000 partitions and 50 groups.
_STATUSES = {flags: PartitionStatus(*flags) for flags in itertools.product((False, True), repeat=4)}


@dataclass(frozen=True, slots=True)
class BrokerCounts:
    leader: int = 0
    follower_in_sync: int = 0
    preferred_leader: int = 0


class PartitionLag(NamedTuple):
    """A group-partition with a commit. A named tuple, not a frozen dataclass: built for every
    group-partition at every collection, a dataclass's field-by-field `object.__setattr__` was
    several times the cost of the tuple."""

    group: str
    topic: str
    partition: int
    committed: int
    latest: int | None  # None when the partition's latest offset is unknown (then no lag)
    lag: int | None  # latest - committed, clamped at 0
    # (group, topic, partition), built once: the state's maps keyed by group-partition share it
    # instead of each building its own (five tuples were ≈3 MB a state at 12,000, issue 24 §4).
    key: GTP


@dataclass(frozen=True, slots=True)
class UncommittedPartition:
    """A partition of a topic the group consumes (it committed another partition of the topic,
    or a live member is assigned one) for which the group has no committed offset."""

    group: str
    topic: str
    partition: int
    owned: bool  # a live member of the group is assigned it (False when membership is unknown)
    backlog: int | None  # latest - earliest offset: all it has left to read; None when unknown


@dataclass(slots=True)
class History:
    """The trackers one exporter (or one replay) keeps across collections; mutable, updated by
    `derive` and handed from state to state by reference."""

    offsets: OffsetHistory = field(default_factory=OffsetHistory)
    lag_status: LagStatusTracker = field(default_factory=LagStatusTracker)
    isr: IsrTracker = field(default_factory=IsrTracker)
    retention: RetentionTracker = field(default_factory=RetentionTracker)

    @classmethod
    def create(
        cls,
        lag_status_window: int = DEFAULT_WINDOW_SIZE,
        catch_up_window: float = DEFAULT_WINDOW_SECONDS,
        retention_floor: float = DEFAULT_FLOOR_SECONDS,
    ) -> History:
        return cls(
            lag_status=LagStatusTracker(window_size=lag_status_window),
            retention=RetentionTracker(catch_up_window, retention_floor),
        )


# Weakly referenced by the web app's per-state caches (exporter/web/app.py).
@dataclass(frozen=True, slots=True, weakref_slot=True)
class ExporterState:
    snapshot: ClusterSnapshot
    collections_total: int
    # Collections in which each phase failed, since the exporter started.
    errors_total: Mapping[str, int]
    # Collections in which one broker's own answer for a phase could not be had, by (broker,
    # phase): a fact about that broker (it is starting, or just back), not a failed collection.
    broker_errors_total: Mapping[tuple[int, str], int]
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
    # Every broker the cluster expects -> whether it is in the metadata; empty without metadata.
    broker_up: Mapping[int, bool]
    # Broker -> when (collection time) it last left or rejoined the metadata or gained or lost a
    # partition's leadership, for the last BROKER_SETTLE_SECONDS: its partitions' leaders and its
    # groups' coordinators are still moving.
    brokers_moved_at: Mapping[int, float]
    topic_broker_leaders: Mapping[tuple[str, int], int]  # (topic, broker) for replica holders
    replica_sizes: Mapping[tuple[str, int, int], int]  # (topic, partition, broker) -> bytes
    # Sums of the known replica sizes; a topic is absent when none of its sizes is known.
    topic_size_bytes: Mapping[str, int]
    topic_leader_size_bytes: Mapping[str, int]
    group_lags: tuple[PartitionLag, ...]
    uncommitted: tuple[UncommittedPartition, ...]  # docs/lag.md: how they count
    # From the history. A key is absent when its value is unknown (see docs/lag.md).
    lag_seconds: Mapping[GTP, float]
    # How each lag_seconds value was obtained (exporter/model/record_time.py), and per group the
    # number of partitions with lag by method ("unknown": no value), for the methods with some.
    lag_seconds_methods: Mapping[GTP, Method]
    lag_method_counts: Mapping[tuple[str, str], int]  # (group, method)
    max_lag_seconds: Mapping[tuple[str, str], float]  # (group, topic)
    lag_status: Mapping[GTP, PartitionEvaluation]
    group_status: Mapping[str, GroupEvaluation]
    # (topic, partition, broker) -> seconds, for the replicas out of the ISR only: every other
    # replica in the snapshot's metadata is in sync (0 s).
    out_of_sync_seconds: Mapping[tuple[str, int, int], float]
    isr_shrinks: Mapping[int, int]  # broker -> replicas seen leaving an ISR since start
    isr_expands: Mapping[int, int]
    # Records read at committed offsets, kept while those offsets stay (a timestamp never changes).
    record_times: Mapping[TPO, RecordTime]
    # Retention margins, catch-up, records deleted unread, outage budgets (docs/lag.md#retention).
    retention: RetentionView
    history: History = field(compare=False, repr=False)

    @property
    def up(self) -> bool:
        """Whether the exporter did its job. While a broker is stopping, down or coming back
        (out of some ISR it belongs to, absent from the metadata the cluster expects it in, in or
        out of it, gaining or losing leaders or answering that its leadership is moving for less
        than BROKER_SETTLE_SECONDS, or failing its per-broker requests), what that causes
        elsewhere in the collection (a request that waited for it, a leader or coordinator
        moving) is the cluster's state, reported as such, not the exporter's failure."""
        if self.snapshot.ok:
            return True
        return self._brokers_moving() and self.snapshot.ok_but_for_moving_brokers

    def _brokers_moving(self) -> bool:
        snapshot = self.snapshot
        return (
            bool(snapshot.broker_failures)
            or bool(self.brokers_moved_at)
            or not all(self.broker_up.values())
            or any(len(p.isr) < len(p.replicas) for t in snapshot.topics for p in t.partitions)
        )


def _frozen(d: dict[K, V]) -> Mapping[K, V]:
    """A dict `derive` built for this state, read-only. Wrapped, not copied: nothing else holds
    it, and a copy of each would double the state's maps while it is built (issue 24 §4)."""
    return MappingProxyType(d)


def derive(
    previous: ExporterState | None, snapshot: ClusterSnapshot, history: History | None = None
) -> ExporterState:
    """The state after `snapshot`. `history` defaults to the one `previous` carries (a new one
    for the first collection): pass the exporter's own to choose its settings."""
    if history is None:
        history = previous.history if previous is not None else History()
    errors_total = dict.fromkeys((*PHASES, COLLECTION_PHASE), 0)
    if previous is not None:
        errors_total.update(previous.errors_total)
    for phase in snapshot.failed_phases:
        errors_total[phase] = errors_total.get(phase, 0) + 1
    broker_errors_total = dict(previous.broker_errors_total) if previous is not None else {}
    for broker in snapshot.broker_failures:
        broker_errors_total[broker] = broker_errors_total.get(broker, 0) + 1

    latest_now = _latest_offsets(snapshot)
    group_lags = _group_lags(snapshot)
    committed_now = {item.key: item.committed for item in group_lags}
    latest_before = previous.latest_sample if previous else None
    committed_before = previous.committed_sample if previous else None
    topic_rates, broker_topic_rates = _produce_rates(snapshot, latest_before, latest_now)
    consumed_rates = _consumed_rates(snapshot.collected_at, committed_before, committed_now)

    min_isr = {
        t.name: min_insync_replicas(t, snapshot.broker_min_insync_replicas) for t in snapshot.topics
    }
    replica_sizes = _replica_sizes(snapshot)
    topic_size, leader_size = _topic_sizes(snapshot.topics, replica_sizes)
    broker_counts = _broker_counts(snapshot)
    out_of_sync, shrinks, expands = _isr_history(history.isr, snapshot, broker_counts.keys())
    # Recorded before estimating: the estimate uses the current (time, latest offset) as the
    # curve's newest point either way.
    history.offsets.record(
        snapshot.collected_at,
        latest_now,
        prune=snapshot.has_metadata and "offsets" not in snapshot.failed_phases,
    )
    complete = snapshot.has_metadata and not snapshot.failed_phases & {
        "offsets",
        "groups",
        "group_offsets",
    }
    lagging = lagging_partitions(snapshot)
    record_times = merge_record_times(
        previous.record_times if previous else {},
        snapshot.record_times,
        lagging if complete else None,
    )
    lag_seconds, methods = _lag_seconds(
        history.offsets, snapshot.collected_at, group_lags, lagging, record_times
    )
    lag_status, group_status = _lag_status(history.lag_status, snapshot, group_lags)
    broker_up = _broker_up(snapshot)
    retention = retention_view(
        history.retention,
        snapshot,
        group_lags,
        lag_seconds,
        methods,
        _leader_sizes(snapshot.topics, replica_sizes),
        complete=complete,
    )
    return ExporterState(
        snapshot=snapshot,
        collections_total=(previous.collections_total if previous else 0) + 1,
        errors_total=_frozen(errors_total),
        broker_errors_total=_frozen(broker_errors_total),
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
        broker_counts=_frozen(broker_counts),
        broker_up=_frozen(broker_up),
        brokers_moved_at=_frozen(_moved_at(previous, broker_up, snapshot)),
        topic_broker_leaders=_frozen(_topic_broker_leaders(snapshot.topics)),
        replica_sizes=_frozen(replica_sizes),
        topic_size_bytes=_frozen(topic_size),
        topic_leader_size_bytes=_frozen(leader_size),
        group_lags=group_lags,
        uncommitted=_uncommitted(snapshot),
        lag_seconds=_frozen(lag_seconds),
        lag_seconds_methods=_frozen(methods),
        lag_method_counts=_frozen(method_counts(lagging, methods)),
        max_lag_seconds=_frozen(_max_lag_seconds(lagging, lag_seconds)),
        lag_status=_frozen(lag_status),
        group_status=_frozen(group_status),
        out_of_sync_seconds=_frozen(out_of_sync),
        isr_shrinks=_frozen(shrinks),
        isr_expands=_frozen(expands),
        record_times=_frozen(record_times),
        retention=retention,
        history=history,
    )


def _latest_offsets(snapshot: ClusterSnapshot) -> dict[TP, int]:
    return {
        (t.name, p.partition): p.latest_offset
        for t in snapshot.topics
        for p in t.partitions
        if p.latest_offset is not None
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
            status[(t.name, p.partition)] = _STATUSES[
                len(p.isr) < len(p.replicas),
                required is not None and len(p.isr) < required,
                p.leader < 0,
                bool(p.replicas) and p.leader == p.replicas[0],
            ]
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


def _broker_up(snapshot: ClusterSnapshot) -> dict[int, bool]:
    """The brokers the cluster expects: those in the metadata, those holding a replica, and the
    KRaft voters when the quorum runs on the brokers (combined mode: some voter is a broker in
    the metadata; dedicated controllers are not brokers and are left out)."""
    if not snapshot.has_metadata:
        return {}
    live = {b.id for b in snapshot.brokers}
    expected = set(live)
    for t in snapshot.topics:
        for p in t.partitions:
            expected.update(p.replicas)
    if snapshot.quorum is not None:
        voters = {v.id for v in snapshot.quorum.voters}
        if voters & live:
            expected |= voters
    return {b: b in live for b in sorted(expected)}


def _moved_at(
    previous: ExporterState | None, now: Mapping[int, bool], snapshot: ClusterSnapshot
) -> dict[int, float]:
    """The brokers that left or rejoined the metadata, led a partition they did not lead or no
    longer led it, or answered for a partition they lead that its leadership is moving, in the
    last BROKER_SETTLE_SECONDS, and when. The first collection has only the answers to go by."""
    collected_at = snapshot.collected_at
    answered = dict.fromkeys(_leaders_answering_motion(snapshot), collected_at)
    if previous is None:
        return answered
    moved = {
        b: t
        for b, t in previous.brokers_moved_at.items()
        if collected_at - t < BROKER_SETTLE_SECONDS
    }
    moved.update(answered)
    before = previous.broker_up
    if before and now:
        for b in before.keys() | now.keys():
            if before.get(b) != now.get(b):
                moved[b] = collected_at
    for b in _leadership_changed(previous.snapshot.topics, snapshot.topics):
        moved[b] = collected_at
    return moved


def _leaders_answering_motion(snapshot: ClusterSnapshot) -> set[int]:
    """The leaders, in this collection's metadata, of the partitions whose leader answered that
    the leadership is moving."""
    if not snapshot.leaders_moving:
        return set()
    return {
        p.leader
        for t in snapshot.topics
        for p in t.partitions
        if (t.name, p.partition) in snapshot.leaders_moving and p.leader >= 0
    }


def _leadership_changed(before: tuple[Topic, ...], now: tuple[Topic, ...]) -> set[int]:
    """The brokers that gained or lost the leadership of a partition seen in both collections
    (a collection without metadata has no topics, hence nothing to compare)."""
    previous = {t.name: t.partitions for t in before}
    changed: set[int] = set()
    for t in now:
        for old, new in zip(previous.get(t.name, ()), t.partitions, strict=False):
            if old.partition == new.partition and old.leader != new.leader:
                changed.update(b for b in (old.leader, new.leader) if b >= 0)
    return changed


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


def _leader_sizes(
    topics: tuple[Topic, ...], replica_sizes: Mapping[tuple[str, int, int], int]
) -> dict[TP, int]:
    return {
        (t.name, p.partition): size
        for t in topics
        for p in t.partitions
        if (size := replica_sizes.get((t.name, p.partition, p.leader))) is not None
    }


def _group_lags(snapshot: ClusterSnapshot) -> tuple[PartitionLag, ...]:
    latest = {(t.name, p.partition): p.latest_offset for t in snapshot.topics for p in t.partitions}
    lags: list[PartitionLag] = []
    for g in snapshot.groups:
        for c in g.committed or ():
            end = latest.get((c.topic, c.partition))
            lag = None if end is None else max(0, end - c.offset)
            key = (g.group_id, c.topic, c.partition)
            lags.append(PartitionLag(g.group_id, c.topic, c.partition, c.offset, end, lag, key))
    return tuple(lags)


def _uncommitted(snapshot: ClusterSnapshot) -> tuple[UncommittedPartition, ...]:
    """Only for groups whose committed offsets were read, and topics in the snapshot."""
    topics = {t.name: t for t in snapshot.topics}
    found: list[UncommittedPartition] = []
    for g in snapshot.groups:
        if g.committed is None:
            continue
        committed = {(c.topic, c.partition) for c in g.committed}
        owned = {(r.topic, r.partition) for m in g.members or () for r in m.assignment}
        for name in sorted({t for t, _ in committed | owned} & topics.keys()):
            for p in topics[name].partitions:
                key = (name, p.partition)
                if key in committed:
                    continue
                backlog = None
                if p.latest_offset is not None and p.earliest_offset is not None:
                    backlog = max(0, p.latest_offset - p.earliest_offset)
                found.append(
                    UncommittedPartition(g.group_id, name, p.partition, key in owned, backlog)
                )
    return tuple(found)


def _isr_history(
    tracker: IsrTracker, snapshot: ClusterSnapshot, brokers: Iterable[int]
) -> tuple[dict[tuple[str, int, int], float], dict[int, int], dict[int, int]]:
    """Seconds out of the ISR of the replicas out of it in this collection's metadata (nothing
    without metadata), and the shrink/expand counters of every broker seen (0 until the first
    change, so that rate() sees the first one)."""
    out_of_sync: dict[tuple[str, int, int], float] = {}
    if snapshot.has_metadata:
        now = snapshot.collected_at
        partitions = {
            (t.name, p.partition): (p.replicas, p.isr)
            for t in snapshot.topics
            for p in t.partitions
        }
        tracker.update(now, partitions, prune=True)
        for (topic, partition), (replicas, isr) in partitions.items():
            if len(isr) == len(replicas):
                continue
            for broker in set(replicas).difference(isr):
                since = tracker.out_of_sync_since(topic, partition, broker)
                if since is not None:
                    out_of_sync[(topic, partition, broker)] = max(0.0, now - since)
    shrinks, expands = tracker.shrinks, tracker.expands
    seen = sorted({*brokers, *shrinks, *expands})
    return out_of_sync, {b: shrinks.get(b, 0) for b in seen}, {b: expands.get(b, 0) for b in seen}


def _lag_seconds(
    offsets: OffsetHistory,
    now: float,
    group_lags: Iterable[PartitionLag],
    lagging: Mapping[GTP, Lagging],
    records: Mapping[TPO, RecordTime],
) -> tuple[dict[GTP, float], dict[GTP, Method]]:
    seconds: dict[GTP, float] = {}
    methods: dict[GTP, Method] = {}
    committed_keys: set[GTP] = set()
    for item in group_lags:
        if item.latest is None:
            continue
        topic, partition, committed = item.topic, item.partition, item.committed
        key = item.key
        committed_keys.add(key)
        estimate: tuple[float, Method] | None = None
        # Caught up, `combine` answers 0 s without an estimate: most partitions of a large cluster.
        if committed < item.latest:
            value = offsets.lag_seconds(topic, partition, committed, item.latest, now)
            if value is not None:
                covered = offsets.covers(topic, partition, committed)
                estimate = (value, INTERPOLATED if covered else EXTRAPOLATED)
        result = combine(
            committed, item.latest, records.get((topic, partition, committed)), estimate, now
        )
        if result is not None:
            seconds[key], methods[key] = result
    # Owned without a commit: from its earliest offset, by a read only (record_time's docstring).
    for key, owned in lagging.items():
        if key in committed_keys:
            continue
        _, topic, partition = key
        record = records.get((topic, partition, owned.committed))
        result = combine(owned.committed, owned.latest, record, None, now)
        if result is not None:
            seconds[key], methods[key] = result
    return seconds, methods


def _max_lag_seconds(
    lagging: Mapping[GTP, Lagging], lag_seconds: Mapping[GTP, float]
) -> dict[tuple[str, str], float]:
    """Only for (group, topic)s where every lagging partition (a live member's uncommitted ones
    included) has an estimate: a maximum over part of them could understate the worst one (e.g.
    on a partition's first collection). A partition caught up always has its 0."""
    unknown = {(g, t) for g, t, p in lagging if (g, t, p) not in lag_seconds}
    return {
        key: value
        for key, value in max_lag_seconds_by_group_topic(lag_seconds).items()
        if key not in unknown
    }


def _lag_status(
    tracker: LagStatusTracker, snapshot: ClusterSnapshot, group_lags: Iterable[PartitionLag]
) -> tuple[dict[GTP, PartitionEvaluation], dict[str, GroupEvaluation]]:
    """One observation per group-partition with a commit and a latest offset; evaluated over the
    keys observed now, so a partition missing from a partial collection reports nothing."""
    owned: dict[str, frozenset[TP] | None] = {
        g.group_id: None
        if g.members is None
        else frozenset((r.topic, r.partition) for m in g.members for r in m.assignment)
        for g in snapshot.groups
    }
    observations: dict[GTP, tuple[int, int, bool]] = {}
    for item in group_lags:
        if item.latest is None:
            continue
        key = item.key
        assignment = owned.get(item.group)
        if assignment is None:
            # DescribeGroups failed for this group: keep the last known membership rather than
            # calling a live consumer stopped.
            assigned = tracker.last_assigned(key)
        else:
            assigned = (item.topic, item.partition) in assignment
        observations[key] = (item.committed, item.latest, assigned)
    complete = snapshot.has_metadata and not snapshot.failed_phases & {
        "offsets",
        "groups",
        "group_offsets",
    }
    tracker.observe_at(snapshot.collected_at, observations, prune=complete)
    report = tracker.evaluate(observations.keys())
    return dict(report.partitions), dict(report.groups)
