"""One collection's answers from exporter/model/retention.py, for the collectors and the JSON API:
the snapshot's partitions, committed offsets and lag seconds turned into its plain inputs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exporter.model.retention import (
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
    outage_budget,
    partition_margin,
    topic_retention,
)
from exporter.model.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class Committed:
    """A group-partition with a commit, as the state computed it."""

    group: str
    topic: str
    partition: int
    committed: int
    lag: int | None  # None when the partition's latest offset is unknown


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
    ages: Mapping[GTP, tuple[float, str]],
    leader_sizes: Mapping[TP, int],
    *,
    complete: bool,
) -> RetentionView:
    """`ages`: the lag seconds and their method per group-partition; `leader_sizes`: bytes of each
    partition's leader replica; `complete`: every phase the trackers read succeeded (a partial
    collection keeps their memory of what it did not see)."""
    at = snapshot.collected_at
    latest = {
        (t.name, p.partition): p.latest_offset
        for t in snapshot.topics
        for p in t.partitions
        if p.latest_offset is not None
    }
    earliest = {
        (t.name, p.partition): p.earliest_offset
        for t in snapshot.topics
        for p in t.partitions
        if p.earliest_offset is not None
    }
    rates = tracker.produced_per_second(at, latest, prune=complete)
    logs = {
        key: PartitionLog(earliest[key], end, leader_sizes.get(key), rates.get(key))
        for key, end in latest.items()
        if key in earliest
    }
    retention = {t.name: topic_retention(t.configs) for t in snapshot.topics}
    items = list(committed)

    partition_margins: dict[GTP, Margin] = {}
    unknown: set[GT] = set()
    for item in items:
        key = (item.group, item.topic, item.partition)
        limits, log = retention.get(item.topic), logs.get(key[1:])
        if not isinstance(limits, Retention):
            continue
        age = ages.get(key)
        margin = None
        if log is not None:
            margin = partition_margin(limits, log, item.committed, *(age or (None, None)))
        if margin is None:
            unknown.add(key[:2])
        else:
            partition_margins[key] = margin
    margins: dict[GT, Margin] = {}
    for (group, name, _), margin in partition_margins.items():
        held = margins.get((group, name))
        if (group, name) not in unknown and (held is None or margin.seconds < held.seconds):
            margins[(group, name)] = margin

    progress: dict[GT, Progress] = {}
    for item in items:
        if item.lag is None:
            continue
        pair = (item.group, item.topic)
        before = progress.get(pair, Progress(at, 0, 0))
        progress[pair] = Progress(at, before.backlog + item.lag, before.committed + item.committed)
    estimates = tracker.catch_up(progress, prune=complete)
    risk = {
        key: at_risk(margins[key], estimate, tracker.floor_seconds)
        for key, estimate in estimates.items()
        if key in margins
    }

    losses = tracker.losses(
        {(i.group, i.topic, i.partition): i.committed for i in items}, earliest, prune=complete
    )
    budgets: dict[str, Margin] = {}
    for topic in snapshot.topics:
        limits = retention[topic.name]
        topic_logs = [log for p in topic.partitions if (log := logs.get((topic.name, p.partition)))]
        if not isinstance(limits, Retention) or len(topic_logs) < len(topic.partitions):
            continue
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
