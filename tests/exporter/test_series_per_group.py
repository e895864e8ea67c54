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

from benchmarks.exporter_snapshot import Shape, shaped_snapshot
from exporter.collectors import exposition
from exporter.model.granularity import DEFAULT
from exporter.model.snapshot import PHASES, CommittedOffset
from exporter.model.state import ExporterState, derive
from tests.exporter.exposition import samples
from tests.exporter.test_exporter_series_budget import DEFAULT_RETENTION

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


def per_group(backlog: tuple[int, int], configs: Mapping[str, str] | None) -> Counter[str]:
    """Series per family that one group adds at the default granularity."""
    without, with_one = (
        Counter(name for name, _ in samples(exposition(_state(n, backlog, configs), None, DEFAULT)))
        for n in (0, 1)
    )
    return with_one - without


GROUP_TOPIC = {
    "kafka_consumergroup_current_offset": PARTITIONS,
    "kafka_consumergroup_lag": PARTITIONS,
    "kafka_consumergroup_current_offset_sum": 1,
    "kafka_consumergroup_lag_sum": 1,
    "kafka_consumergroup_uncommitted_partitions": 1,
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
    "kafka_consumergroup_lag_seconds_partitions": 4,
}
RETENTION = {
    "kafka_consumergroup_min_retention_margin_seconds": 1,
    "kafka_consumergroup_retention_at_risk": 1,
}


@pytest.mark.parametrize("configs", [None, DEFAULT_RETENTION], ids=["no-retention", "retention"])
@pytest.mark.parametrize("backlog", BACKLOGS.values(), ids=BACKLOGS.keys())
def test_what_one_group_on_a_6_partition_topic_costs(
    backlog: tuple[int, int], configs: Mapping[str, str] | None
) -> None:
    expected = {**GROUP_TOPIC, **GROUP, **(RETENTION if configs else {})}
    if backlog != BACKLOGS["holding"]:  # time to catch up: while draining, 0 once caught up
        expected["kafka_consumergroup_catchup_seconds"] = 1
    assert per_group(backlog, configs) == expected
