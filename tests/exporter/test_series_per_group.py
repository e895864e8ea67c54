"""What one consumer group costs in series at the default granularity (issue 24): a group
committing on one 6-partition topic, the shape of the cluster the issue measured, where
kafka_exporter 1.9.0 serves 6 · 2 per-partition series, 2 sums and `members`: 15.

The cost is the difference between the same cluster with and without the group, through the
real derive and collectors, in the healthy states a group goes through: lagging with a backlog
that holds, drains or is gone, on a topic with and without a retention margin."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

import pytest

from benchmarks.exporter_snapshot import Shape, _MeasuredProbe, shaped_snapshot
from tests.exporter.exposition import samples
from tests.exporter.test_exporter_series_budget import (
    DEFAULT_RETENTION,
    DOC,
    counts,
    kafka_exporter,
    ours,
    steady_state,
)
from vigia.exporter.collectors import exposition
from vigia.exporter.model.granularity import DEFAULT, Granularity, Level
from vigia.exporter.model.snapshot import PHASES, CommittedOffset
from vigia.exporter.model.state import ExporterState, derive

PARTITIONS = 6
KAFKA_EXPORTER_PER_GROUP = 2 * PARTITIONS + 2 + 1
TOPIC = ("orders", PARTITIONS, 3)
# Backlog per partition at the first and at the second collection.
BACKLOGS = {"holding": (500, 500), "draining": (500, 250), "caught-up": (0, 0)}


def _state(
    groups: int, backlog: tuple[int, int], configs: Mapping[str, str] | None
) -> ExporterState:
    shape = Shape(3, (TOPIC,), tuple((f"g{n}", (TOPIC[0],)) for n in range(groups)))
    state: ExporterState | None = None
    for i, behind in enumerate(backlog):
        snap = shaped_snapshot(
            shape, collected_at=1_800_000_000.0 + 15 * i, offset_base=1_000_000 + 30_000 * i
        )
        latest = {p.partition: p.latest_offset or 0 for p in snap.topics[0].partitions}
        snap = replace(
            snap,
            topics=tuple(replace(t, configs=configs or MappingProxyType({})) for t in snap.topics),
            groups=tuple(
                replace(
                    g,
                    committed=tuple(
                        CommittedOffset(c.topic, c.partition, latest[c.partition] - behind)
                        for c in g.committed or ()
                    ),
                )
                for g in snap.groups
            ),
            durations=MappingProxyType({**dict.fromkeys(PHASES, 0.01), "total": 0.1}),
        )
        state = derive(state, snap)
    assert state is not None
    return state


def per_group(
    backlog: tuple[int, int],
    configs: Mapping[str, str] | None,
    granularity: Granularity = DEFAULT,
) -> Counter[str]:
    """Series per family that one group adds."""
    without, with_one = (
        Counter(
            name for name, _ in samples(exposition(_state(n, backlog, configs), None, granularity))
        )
        for n in (0, 1)
    )
    return with_one - without


# At most 15 (docs/metrics.md, "Series budget": 3 + 12 per topic in a healthy state).
GROUP_TOPIC = {
    "kafka_consumergroup_current_offset_sum": 1,
    "kafka_consumergroup_lag_sum": 1,
    "kafka_consumergroup_messages_consumed_per_second": 1,
    "kafka_consumergroup_max_lag_seconds": 1,
    "kafka_consumergroup_topic_status": 1,
    "kafka_consumergroup_catchup_state": 1,
    "kafka_consumergroup_backlog_drain_messages_per_second": 1,
    "kafka_consumergroup_lost_messages_sum": 1,
    "kafka_consumergroup_lost_messages_detected_total": 1,
}
GROUP = {
    "kafka_consumergroup_members": 1,
    "kafka_consumergroup_info": 1,
    "kafka_consumergroup_status": 1,
}
RETENTION = {
    "kafka_consumergroup_min_retention_margin_seconds": 1,
    "kafka_consumergroup_retention_at_risk": 1,
}


@pytest.mark.parametrize("configs", [None, DEFAULT_RETENTION], ids=["no-retention", "retention"])
@pytest.mark.parametrize("backlog", BACKLOGS.values(), ids=BACKLOGS.keys())
def test_one_group_on_a_6_partition_topic_costs_no_more_than_in_kafka_exporter(
    backlog: tuple[int, int], configs: Mapping[str, str] | None
) -> None:
    expected = {**GROUP_TOPIC, **GROUP, **(RETENTION if configs else {})}
    if backlog != BACKLOGS["holding"]:  # time to catch up: while draining, 0 once caught up
        expected["kafka_consumergroup_catchup_seconds"] = 1
    cost = per_group(backlog, configs)
    assert cost == expected
    assert sum(cost.values()) <= KAFKA_EXPORTER_PER_GROUP


def test_kafka_exporters_per_partition_series_are_served_on_request() -> None:
    offsets = replace(DEFAULT, group_offsets=Level.PARTITION)
    cost = per_group(BACKLOGS["draining"], DEFAULT_RETENTION, offsets)
    assert cost - per_group(BACKLOGS["draining"], DEFAULT_RETENTION) == {
        "kafka_consumergroup_current_offset": PARTITIONS,
        "kafka_consumergroup_lag": PARTITIONS,
    }


def issue_24_cluster(groups: int) -> Shape:
    """2,100 partitions on 3 brokers, as on the cluster issue 24 measured, and `groups` groups
    each committing on one 6-partition topic."""
    topics = (TOPIC, *((f"t{i:02d}", 100, 3) for i in range(20)), ("t20", 94, 3))
    return Shape(3, topics, tuple((f"g{n:04d}", (TOPIC[0],)) for n in range(groups)))


@pytest.mark.parametrize(
    ("groups", "total", "of_groups", "theirs"),
    [(51, 5_479, 714, 15_492), (551, 12_479, 7_714, 22_992), (2_051, 33_479, 28_714, 45_492)],
)
def test_the_clusters_of_issue_24_serve_fewer_series_than_kafka_exporter(
    groups: int, total: int, of_groups: int, theirs: int
) -> None:
    state = steady_state(issue_24_cluster(groups), configs=DEFAULT_RETENTION)
    c = counts(state.snapshot, state)
    assert c.P == 2_100
    found = samples(exposition(state, _MeasuredProbe(c.B), DEFAULT))
    by_groups = sum(1 for _, labels in found if "consumergroup" in labels)
    assert (len(found), by_groups, kafka_exporter(c)) == (total, of_groups, theirs)
    assert total == ours(c, DEFAULT) and of_groups <= KAFKA_EXPORTER_PER_GROUP * groups
    # The numbers docs/metrics.md quotes for these clusters.
    row = f"| {groups:,} | "
    (line,) = [
        line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith(row)
    ]
    assert f"| {total:,} | {of_groups:,}" in line and f"| {theirs:,} |" in line, line
