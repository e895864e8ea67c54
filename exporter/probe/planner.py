"""Probe topic planning: one partition led by each broker, RF = min(3, brokers). Pure, no I/O.

`coverage` says which brokers lead a probe partition right now, and `preferred_elections` which
partitions to give back to their preferred leader when leadership has drifted (every broker restart
moves its leaders away; Kafka moves them back only with auto.leader.rebalance.enable, and only once
the broker's whole imbalance passes a threshold).

`plan_probe_topic(topic, broker_ids, topics)` takes the cluster's broker ids and the replica lists
of the topics in the metadata ({topic: {partition: replicas}}, first replica = preferred leader) and
returns the actions for the probe topic only; every other topic in `topics` is ignored:
- topic missing → `create_topic`: one partition per broker, partition i's preferred leader is the
  i-th broker (sorted ids), followers picked to keep replica counts per broker even;
- topic present → `new_partitions` (CreatePartitions, appended after the existing ones) for each
  broker that is the preferred leader of none of them, i.e. brokers added since the topic was made.
Existing partitions are never reassigned or removed (CreatePartitions cannot remove any, and the
exporter should not move replicas): a partition whose preferred leader left the cluster stays, and
is probed and attributed to whichever broker leads it at that moment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MAX_REPLICATION_FACTOR = 3

Assignment = tuple[tuple[int, ...], ...]
"""Replica lists of consecutive partitions, preferred leader first."""


@dataclass(frozen=True, slots=True)
class ProbeTopicPlan:
    topic: str
    replication_factor: int
    create_topic: Assignment | None = None
    """Replica assignment for CreateTopics (partition i gets element i); None: the topic exists."""
    new_partitions: Assignment = ()
    """Replica assignment of partitions to append with CreatePartitions."""
    total_partitions: int = 0
    """Partition count once the plan is applied."""

    @property
    def is_noop(self) -> bool:
        return self.create_topic is None and not self.new_partitions


def plan_probe_topic(
    topic: str, broker_ids: Iterable[int], topics: Mapping[str, Mapping[int, Sequence[int]]]
) -> ProbeTopicPlan:
    brokers = sorted(set(broker_ids))
    if not brokers:
        raise ValueError("no brokers in the cluster metadata: cannot plan the probe topic")
    rf = min(MAX_REPLICATION_FACTOR, len(brokers))
    existing = topics.get(topic)
    load = dict.fromkeys(brokers, 0)
    if existing is None:
        created = _assign(brokers, brokers, rf, load)
        return ProbeTopicPlan(topic, rf, create_topic=created, total_partitions=len(created))
    for replicas in existing.values():
        for broker in replicas:
            if broker in load:
                load[broker] += 1
    leaders = {replicas[0] for replicas in existing.values() if replicas}
    added = _assign([b for b in brokers if b not in leaders], brokers, rf, load)
    return ProbeTopicPlan(
        topic, rf, new_partitions=added, total_partitions=len(existing) + len(added)
    )


def _assign(
    leaders: Sequence[int], brokers: Sequence[int], rf: int, load: dict[int, int]
) -> Assignment:
    """One partition per leader; followers are the least-loaded other brokers (ring order after
    the leader among equals). Every leader's own replica is counted first, so that followers picked
    for early partitions do not pile onto brokers that lead later ones."""
    for leader in leaders:
        load[leader] += 1
    assignment = []
    for leader in leaders:
        start = brokers.index(leader)
        ring = [brokers[(start + k) % len(brokers)] for k in range(1, len(brokers))]
        followers = sorted(ring, key=lambda b: load[b])[: rf - 1]  # stable sort keeps ring order
        for broker in followers:
            load[broker] += 1
        assignment.append((leader, *followers))
    return tuple(assignment)


@dataclass(frozen=True, slots=True)
class ProbePartition:
    """A probe partition as the metadata shows it now."""

    partition: int
    leader: int
    """-1 while it has none."""
    replicas: tuple[int, ...]
    """Preferred leader first."""
    isr: tuple[int, ...]


def coverage(broker_ids: Iterable[int], partitions: Iterable[ProbePartition]) -> dict[int, bool]:
    """Broker → whether it leads a probe partition, for every live broker and every broker holding
    a probe replica (a stopped broker stays listed, uncovered, until its replicas move away)."""
    partitions = list(partitions)
    expected = set(broker_ids).union(*(p.replicas for p in partitions))
    leaders = {p.leader for p in partitions}
    return {broker: broker in leaders for broker in sorted(expected) if broker >= 0}


def preferred_elections(
    broker_ids: Iterable[int], partitions: Iterable[ProbePartition]
) -> tuple[int, ...]:
    """Probe partitions to hand back to their preferred leader, at most one per broker: the
    preferred leader is live, in the ISR (caught up, so the election is clean), and leads no probe
    partition now. After a rolling restart this brings back the one-partition-per-broker layout
    that each restart's leader failover took away."""
    live = set(broker_ids)
    partitions = sorted(partitions, key=lambda p: p.partition)
    leading = {p.leader for p in partitions}
    chosen: list[int] = []
    seen: set[int] = set()
    for p in partitions:
        preferred = p.replicas[0] if p.replicas else -1
        if (
            preferred == p.leader
            or preferred not in live
            or preferred not in p.isr
            or preferred in leading
            or preferred in seen
        ):
            continue
        seen.add(preferred)
        chosen.append(p.partition)
    return tuple(chosen)
