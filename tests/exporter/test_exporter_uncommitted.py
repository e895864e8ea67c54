"""Partitions a group has not committed (issue 10 §3, docs/lag.md): a live member's partition
counts its whole backlog as lag; without a live member it is only reported as uncommitted."""

from __future__ import annotations

from dataclasses import replace

from tests.exporter.exposition import samples, value
from tests.exporter.recorded import snapshot
from vigia.exporter.collectors import render
from vigia.exporter.model.granularity import FULL
from vigia.exporter.model.snapshot import ClusterSnapshot
from vigia.exporter.model.state import UncommittedPartition, derive
from vigia.exporter.web import api

# In the healthy recording `billing` (Stable, one member owning all six `measure` partitions)
# and `vigia-ingest` (Empty) committed every partition of `measure`.
UNCOMMITTED = 5


def _without_commit(recorded: ClusterSnapshot, group: str, partition: int) -> ClusterSnapshot:
    groups = tuple(
        replace(
            g,
            committed=tuple(
                c for c in g.committed or () if (c.topic, c.partition) != ("measure", partition)
            ),
        )
        if g.group_id == group
        else g
        for g in recorded.groups
    )
    return replace(recorded, groups=groups)


def _measure(recorded: ClusterSnapshot, partition: int) -> tuple[int, int]:
    topic = next(t for t in recorded.topics if t.name == "measure")
    p = topic.partitions[partition]
    assert p.earliest_offset is not None and p.latest_offset is not None
    return p.earliest_offset, p.latest_offset


def _lag_sum(found: dict, group: str) -> float | None:  # type: ignore[type-arg]
    return value(found, "kafka_consumergroup_lag_sum", consumergroup=group, topic="measure")


def test_a_partition_a_live_member_owns_counts_its_whole_backlog() -> None:
    recorded = snapshot("healthy")
    before = samples(render(derive(None, recorded), FULL))
    earliest, latest = _measure(recorded, UNCOMMITTED)
    changed = _without_commit(recorded, "billing", UNCOMMITTED)
    state = derive(None, changed)
    assert state.uncommitted == (
        UncommittedPartition("billing", "measure", UNCOMMITTED, True, latest - earliest),
    )
    found = samples(render(state, FULL))
    labels = {"consumergroup": "billing", "topic": "measure"}
    committed_lag = value(before, "kafka_consumergroup_lag", partition=str(UNCOMMITTED), **labels)
    assert committed_lag is not None
    assert _lag_sum(found, "billing") == _lag_sum(before, "billing") - committed_lag + latest
    assert value(found, "kafka_consumergroup_lag", partition=str(UNCOMMITTED), **labels) == latest
    assert value(found, "kafka_consumergroup_uncommitted_partitions", **labels) == 1
    # Nothing committed: no committed offset, in the sum either.
    assert value(found, "kafka_consumergroup_current_offset", partition="5", **labels) is None
    (group,) = [g for g in api.cluster_json(state)["groups"] if g["group_id"] == "billing"]
    (topic,) = group["topics"]
    assert (topic["lag"], topic["uncommitted_partitions"]) == (_lag_sum(found, "billing"), 1)
    entry = group["partitions"][UNCOMMITTED]
    assert (entry["committed_offset"], entry["owned"], entry["lag"]) == (None, True, latest)


def test_a_partition_without_a_live_member_is_reported_separately() -> None:
    recorded = snapshot("healthy")
    before = samples(render(derive(None, recorded), FULL))
    changed = _without_commit(recorded, "vigia-ingest", UNCOMMITTED)
    found = samples(render(derive(None, changed), FULL))
    labels = {"consumergroup": "vigia-ingest", "topic": "measure"}
    committed_lag = value(before, "kafka_consumergroup_lag", partition=str(UNCOMMITTED), **labels)
    assert committed_lag is not None
    # Empty group: nothing says where it will start, so it adds no lag, and it is counted.
    assert _lag_sum(found, "vigia-ingest") == _lag_sum(before, "vigia-ingest") - committed_lag
    assert value(found, "kafka_consumergroup_lag", partition=str(UNCOMMITTED), **labels) is None
    assert value(found, "kafka_consumergroup_uncommitted_partitions", **labels) == 1


def test_every_partition_committed_reports_no_uncommitted_and_unknown_offsets_nothing() -> None:
    state = derive(None, snapshot("healthy"))
    assert state.uncommitted == ()
    found = samples(render(state))
    assert not [name for name, _ in found if name == "kafka_consumergroup_uncommitted_partitions"]
    (group,) = [g for g in api.cluster_json(state)["groups"] if g["group_id"] == "billing"]
    assert group["topics"][0]["uncommitted_partitions"] == 0
    # Committed offsets unread (OffsetFetch failed): nothing can be said about what is missing.
    failed = replace(
        snapshot("healthy"),
        groups=tuple(replace(g, committed=None) for g in snapshot("healthy").groups),
    )
    assert derive(None, failed).uncommitted == ()
