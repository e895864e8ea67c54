"""One collection's answers from exporter/model/retention.py, for the collectors and the JSON API:
the snapshot's partitions, committed offsets and lag seconds turned into its plain inputs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from vigia.exporter.model.retention import (
    GT,
    GTP,
    TP,
    CatchUpEstimate,
    Loss,
    Margin,
    NoRetention,
    PartitionLog,
    Progress,
    Retention,
    RetentionTracker,
    at_risk,
    first_to_go,
    outage_budget,
    partition_margin,
    topic_retention,
)
from vigia.exporter.model.snapshot import ClusterSnapshot


class Committed(Protocol):
    """A group-partition with a commit, as the state computed it (its `PartitionLag`)."""

    @property
    def group(self) -> str: ...
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def committed(self) -> int: ...
    @property
    def lag(self) -> int | None: ...  # None when the partition's latest offset is unknown
    @property
    def key(self) -> GTP: ...  # (group, topic, partition)


@dataclass(frozen=True, slots=True)
class RetentionView:
    # Every topic in the snapshot: its limits, or why Kafka deletes none of its records by them.
    retention: Mapping[str, Retention | NoRetention]
    partition_margins: Mapping[GTP, Margin]
    # (group, topic) -> the smallest partition margin, only when every partition with a commit
    # has one (a minimum over part of them could hide the first to go).
    margins: Mapping[GT, Margin]
    catch_up: Mapping[GT, CatchUpEstimate]
    at_risk: Mapping[GT, bool]  # only where both a margin and a catch-up estimate are known
    losses: Mapping[GTP, Loss]
    outage_budgets: Mapping[str, Margin]


def retention_view(
    tracker: RetentionTracker,
    snapshot: ClusterSnapshot,
    committed: Iterable[Committed],
    lag_seconds: Mapping[GTP, float],
    lag_methods: Mapping[GTP, str],
    leader_sizes: Mapping[TP, int],
    *,
    complete: bool,
) -> RetentionView:
    """`lag_seconds` and `lag_methods`: the state's, per group-partition; `leader_sizes`: bytes of
    each partition's leader replica; `complete`: every phase the trackers read succeeded (a partial
    collection keeps their memory of what it did not see)."""
    at = snapshot.collected_at
    retention = {t.name: topic_retention(t.configs) for t in snapshot.topics}
    earliest = {
        (t.name, p.partition): p.earliest_offset
        for t in snapshot.topics
        for p in t.partitions
        if p.earliest_offset is not None
    }
    # Only a size limit needs a partition's growth and size: the window is kept for those alone.
    sized = {
        (t.name, p.partition): p.latest_offset
        for t in snapshot.topics
        if _size_limited(retention[t.name])
        for p in t.partitions
        if p.latest_offset is not None
    }
    rates = tracker.produced_per_second(at, sized, prune=complete)
    items = list(committed)
    # A partition's log is read for the groups' margins and, under a size limit, for the topic's
    # outage budget: most partitions of a large cluster need none.
    read = {item.topic for item in items}
    logs: dict[TP, PartitionLog] = {}
    for t in snapshot.topics:
        limits = retention[t.name]
        if isinstance(limits, Retention) and (limits.bytes is not None or t.name in read):
            for p in t.partitions:
                tp = (t.name, p.partition)
                if p.latest_offset is not None and tp in earliest:
                    size = leader_sizes.get(tp)
                    logs[tp] = PartitionLog(earliest[tp], p.latest_offset, size, rates.get(tp))

    partition_margins: dict[GTP, Margin] = {}
    unknown: set[GT] = set()
    for item in items:
        topic_limits = retention.get(item.topic)
        if not isinstance(topic_limits, Retention):
            continue
        log = logs.get((item.topic, item.partition))
        key = item.key
        margin = None
        if log is not None:
            age, method = lag_seconds.get(key), lag_methods.get(key)
            margin = partition_margin(topic_limits, log, item.committed, age, method)
        if margin is None:
            unknown.add(key[:2])
        else:
            partition_margins[key] = margin
    margins: dict[GT, Margin] = {}
    for (group, name, _), margin in partition_margins.items():
        held = margins.get((group, name))
        if (group, name) not in unknown and (
            held is None
            or margin.seconds < held.seconds
            # Equal seconds only: orders a deleted record first, without a tuple per margin.
            or (margin.seconds == held.seconds and first_to_go(margin) < first_to_go(held))
        ):
            margins[(group, name)] = margin

    backlogs: dict[GT, int] = {}
    offset_sums: dict[GT, int] = {}
    for item in items:
        if item.lag is not None:
            pair = (item.group, item.topic)
            backlogs[pair] = backlogs.get(pair, 0) + item.lag
            offset_sums[pair] = offset_sums.get(pair, 0) + item.committed
    progress = {
        pair: Progress(at, backlog, offset_sums[pair]) for pair, backlog in backlogs.items()
    }
    estimates = tracker.catch_up(progress, prune=complete)
    risk = {
        key: at_risk(margins[key], estimate, tracker.floor_seconds)
        for key, estimate in estimates.items()
        if key in margins
    }

    losses = tracker.losses({i.key: i.committed for i in items}, earliest, prune=complete)
    budgets: dict[str, Margin] = {}
    for topic in snapshot.topics:
        limits = retention[topic.name]
        if not isinstance(limits, Retention):
            continue
        topic_logs: list[PartitionLog] = []
        if limits.bytes is not None:
            topic_logs = [
                log for p in topic.partitions if (log := logs.get((topic.name, p.partition)))
            ]
            if len(topic_logs) < len(topic.partitions):
                continue  # a partition's offsets are unknown: which fills first is too
        if budget := outage_budget(limits, topic_logs):
            budgets[topic.name] = budget
    return RetentionView(
        retention=retention,
        partition_margins=partition_margins,
        margins=margins,
        catch_up=estimates,
        at_risk=risk,
        losses=losses,
        outage_budgets=budgets,
    )


def _size_limited(limits: Retention | NoRetention) -> bool:
    return isinstance(limits, Retention) and limits.bytes is not None
