"""The series budget (docs/metrics.md, "Series budget"): the documented formulas count exactly the
series /metrics serves at each setting, and the defaults serve fewer than kafka_exporter 1.9.0 on
the cluster of issue 10."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

import pytest

from benchmarks.exporter_snapshot import (
    ISSUE_10_CLUSTER,
    Shape,
    _MeasuredProbe,
    shaped_snapshot,
    uniform_shape,
)
from tests.exporter.exposition import samples
from vigia.exporter.collectors import exposition
from vigia.exporter.model.granularity import DEFAULT, FULL, Granularity, Level, Replicas
from vigia.exporter.model.snapshot import PHASES, ClusterSnapshot
from vigia.exporter.model.state import ExporterState, derive

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"
SPARSE = Granularity(Level.TOPIC, Level.TOPIC, Level.TOPIC, Level.TOPIC, Replicas.OFF)


@dataclass(frozen=True)
class Counts:
    """The quantities the formulas are written in (docs/metrics.md)."""

    P: int  # the names docs/metrics.md uses
    R: int
    R_o: int
    T: int
    B: int
    D: int
    G: int
    GP: int
    GP_t: int
    GT: int
    BT_r: int
    BT_l: int
    # Retention (exporter/model/retention.py): (group, topic) pairs with a margin, pairs draining
    # or caught up, topics with an outage budget, group-partitions with a margin, with a loss.
    GT_m: int = 0
    GT_d: int = 0
    T_b: int = 0
    GP_m: int = 0
    GP_l: int = 0
    # (group, topic) pairs with a partition not committed; (group, method) pairs with a partition.
    GT_u: int = 0
    GM: int = 0


def counts(snap: ClusterSnapshot, state: ExporterState | None = None) -> Counts:
    partitions = [(t, p) for t in snap.topics for p in t.partitions]
    size_of = {t.name: len(t.partitions) for t in snap.topics}
    committed = {(g.group_id, c.topic, c.partition) for g in snap.groups for c in g.committed or ()}
    group_topics = {(g, t) for g, t, _ in committed}
    return Counts(
        P=len(partitions),
        R=sum(len(p.replicas) for _, p in partitions),
        R_o=sum(len(set(p.replicas) - set(p.isr)) for _, p in partitions),
        T=len(snap.topics),
        B=len(snap.brokers),
        D=sum(len(b.log_dirs) for b in snap.log_dirs),
        G=len(snap.groups),
        GP=len(committed),
        GP_t=sum(size_of[t] for _, t in group_topics),
        GT=len(group_topics),
        BT_r=len({(t.name, r) for t, p in partitions for r in p.replicas}),
        BT_l=len({(t.name, p.leader) for t, p in partitions if p.leader >= 0}),
        **({} if state is None else _retention_counts(state)),
    )


def _retention_counts(state: ExporterState) -> dict[str, int]:
    view = state.retention
    return {
        "GT_m": len(view.margins),
        "GT_d": sum(e.seconds is not None for e in view.catch_up.values()),
        "T_b": len(view.outage_budgets),
        "GP_m": len(view.partition_margins),
        "GP_l": sum(loss.missing > 0 for loss in view.losses.values()),
        "GT_u": len({(u.group, u.topic) for u in state.uncommitted}),
        "GM": len(state.lag_method_counts),
    }


def ours(c: Counts, g: Granularity) -> int:
    """docs/metrics.md's formula, steady state, probe running."""
    # kafka_broker_up: B; the synthetic snapshots know no capabilities (C = 0).
    always = 9 * c.T + c.BT_r + c.BT_l + 9 * c.GT + c.GT_u + 3 * c.G + 7 * c.B + 3 * c.D + 26
    retention = 2 * c.GT_m + c.GT_d + c.T_b + c.GP_l
    probe = 52 * c.B + 1
    detail = {Replicas.ALL: 3 * c.R, Replicas.OUT_OF_SYNC: 3 * c.R_o, Replicas.OFF: 0}
    return (
        always
        + retention
        + probe
        + (2 * c.P if g.topic_offsets is Level.PARTITION else 0)
        + (7 * c.P if g.partition_state is Level.PARTITION else 0)
        + (2 * c.GP if g.group_offsets is Level.PARTITION else 0)
        + (2 * c.GP + c.GP_m + c.GM if g.group_lag is Level.PARTITION else 0)
        + detail[g.replicas]
    )


def kafka_exporter(c: Counts) -> int:
    """kafka_exporter 1.9.0 with its defaults (kafka_exporter.go: seven families per partition;
    per group `members`, and for every partition of each topic it committed in `current_offset`
    and `lag`, plus their two sums; `kafka_brokers`, `kafka_broker_info`, build info), without the
    Go runtime's own series (which only add to its count). Checked against kafka_exporter's own
    answer on a real cluster by tests/integration/test_series_budget_real_cluster.py."""
    return 1 + c.B + c.T + 7 * c.P + c.G + 2 * c.GT + 2 * c.GP_t + 1


# What DescribeConfigs answers for a topic left at Kafka's defaults.
DEFAULT_RETENTION = MappingProxyType(
    {"retention.ms": "604800000", "retention.bytes": "-1", "cleanup.policy": "delete"}
)


def steady_state(
    shape: Shape, out_of_sync_topics: int = 0, configs: Mapping[str, str] | None = None
) -> ExporterState:
    """The second collection of a live exporter (timings per phase, rates, lag seconds), with
    the last broker out of the ISR of every partition of the first `out_of_sync_topics` topics,
    and `configs` on every topic (the synthetic snapshot has none)."""
    states: list[ExporterState] = []
    for i in range(2):
        snap = shaped_snapshot(
            shape, collected_at=1_800_000_000.0 + 15 * i, offset_base=1_000_000 + 30_000 * i
        )
        topics = tuple(
            replace(
                t,
                partitions=tuple(
                    replace(p, isr=tuple(r for r in p.isr if r != shape.brokers))
                    for p in t.partitions
                ),
            )
            if n < out_of_sync_topics
            else t
            for n, t in enumerate(snap.topics)
        )
        if configs is not None:
            topics = tuple(replace(t, configs=configs) for t in topics)
        timed = MappingProxyType({**dict.fromkeys(PHASES, 0.01), "total": 0.1})
        snap = replace(snap, topics=topics, durations=timed)
        states.append(derive(states[-1] if states else None, snap))
    return states[-1]


def served(state: ExporterState, g: Granularity) -> int:
    return len(samples(exposition(state, _MeasuredProbe(len(state.snapshot.brokers)), g)))


@pytest.mark.parametrize("granularity", [DEFAULT, FULL, SPARSE], ids=["default", "full", "sparse"])
@pytest.mark.parametrize("out_of_sync_topics", [0, 2])
@pytest.mark.parametrize("configs", [None, DEFAULT_RETENTION], ids=["no-configs", "retention"])
def test_the_documented_formula_counts_the_served_series(
    granularity: Granularity, out_of_sync_topics: int, configs: Mapping[str, str] | None
) -> None:
    shape = replace(
        uniform_shape(4, 700, 3, 12, partitions_per_topic=50),
        groups=(
            *uniform_shape(4, 700, 3, 12, partitions_per_topic=50).groups,
            ("two-topics", ("topic-00001", "topic-00002")),
        ),
    )
    state = steady_state(shape, out_of_sync_topics, configs)
    c = counts(state.snapshot, state)
    assert (c.R_o > 0) == (out_of_sync_topics > 0)
    assert (c.T_b > 0) == (configs is not None)
    assert served(state, granularity) == ours(c, granularity)


def test_defaults_serve_fewer_series_than_kafka_exporter_on_the_issue_10_cluster() -> None:
    state = steady_state(ISSUE_10_CLUSTER, configs=DEFAULT_RETENTION)
    c = counts(state.snapshot, state)
    assert (c.P, c.R, c.G, c.GP, c.GT, c.T) == (2090, 6231, 55, 5018, 102, 45)
    default, full, theirs = served(state, DEFAULT), served(state, FULL), kafka_exporter(c)
    assert (default, full) == (ours(c, DEFAULT), ours(c, FULL))
    assert default <= theirs
    # The numbers docs/metrics.md quotes for this cluster.
    doc = DOC.read_text(encoding="utf-8")
    for n in (default, full, theirs):
        assert f"{n:,}" in doc, n


def test_replica_series_out_of_sync_serves_exactly_the_replicas_outside_the_isr() -> None:
    state = steady_state(uniform_shape(3, 200, 3, 2, partitions_per_topic=50), 1)
    found = samples(exposition(state, None, DEFAULT))
    replicas = {
        (labels["topic"], labels["partition"], labels["broker"])
        for (name, labels), _ in found.items()
        if name == "kafka_partition_replica_in_sync"
    }
    assert replicas == {("topic-00000", str(p), "3") for p in range(50)}
    assert all(
        v == 0 for (name, _), v in found.items() if name == "kafka_partition_replica_in_sync"
    )
    urp = {
        labels["topic"]: v
        for (name, labels), v in found.items()
        if name == "kafka_topic_under_replicated_partitions"
    }
    assert urp == {"topic-00000": 50, "topic-00001": 0, "topic-00002": 0, "topic-00003": 0}
