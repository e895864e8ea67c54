"""The pure core on small hand-made snapshots: rates, lag rules, min ISR, vanishing series."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from benchmarks.exporter_snapshot import synthetic_snapshot
from tests.conftest import SCENARIOS
from tests.exporter.exposition import family_names, samples, value
from tests.exporter.recorded import state
from vigia.exporter.collectors import collectors, render
from vigia.exporter.model.granularity import FULL
from vigia.exporter.model.snapshot import (
    COLLECTION_PHASE,
    Broker,
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    Partition,
    PhaseError,
    Topic,
    empty_snapshot,
)
from vigia.exporter.model.state import ExporterState, derive


def _snap(
    at: float,
    topics: dict[str, list[tuple[int, int]]],  # name -> [(leader, latest offset)]
    groups: dict[str, dict[tuple[str, int], int]] | None = None,
    *,
    isr: tuple[int, ...] = (1, 2, 3),
    configs: dict[str, str] | None = None,
    broker_min_isr: int | None = None,
    errors: tuple[PhaseError, ...] = (),
) -> ClusterSnapshot:
    return ClusterSnapshot(
        collected_at=at,
        cluster_id="c",
        controller_id=1,
        controller_source="quorum",
        brokers=tuple(Broker(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)),
        topics=tuple(
            Topic(
                name,
                False,
                tuple(
                    Partition(i, leader, (1, 2, 3), isr, (), 0, latest)
                    for i, (leader, latest) in enumerate(parts)
                ),
                MappingProxyType(configs or {}),
            )
            for name, parts in sorted(topics.items())
        ),
        log_dirs=(),
        groups=tuple(
            ConsumerGroup(
                gid,
                "EMPTY",
                "CLASSIC",
                "",
                1,
                (),
                tuple(CommittedOffset(t, p, o) for (t, p), o in sorted(committed.items())),
            )
            for gid, committed in sorted((groups or {}).items())
        ),
        broker_min_insync_replicas=broker_min_isr,
        errors=errors,
    )


def _chain(*snapshots: ClusterSnapshot) -> ExporterState:
    current: ExporterState | None = None
    for s in snapshots:
        current = derive(current, s)
    assert current is not None
    return current


def test_rates_need_two_collections_and_attribute_to_leaders() -> None:
    first = _snap(100.0, {"t": [(1, 1000), (2, 500)]}, {"g": {("t", 0): 900, ("t", 1): 500}})
    second = _snap(110.0, {"t": [(1, 1500), (3, 700)]}, {"g": {("t", 0): 1400, ("t", 1): 500}})
    assert derive(None, first).topic_rates == {}
    s = _chain(first, second)
    assert s.topic_rates == {"t": 70.0}
    # Partition 1 moved to leader 3: its messages count for its leader at this collection.
    assert dict(s.broker_topic_rates) == {(1, "t"): 50.0, (3, "t"): 20.0}
    assert dict(s.consumed_rates) == {("g", "t"): 50.0}


def test_offsets_going_backwards_are_a_restart_not_negative_traffic() -> None:
    first = _snap(0.0, {"t": [(1, 1000), (1, 1000)]}, {"g": {("t", 0): 900}})
    recreated = _snap(10.0, {"t": [(1, 50), (1, 1100)]}, {"g": {("t", 0): 10}})
    s = _chain(first, recreated)
    assert s.topic_rates == {"t": 10.0}  # only partition 1 counts
    assert dict(s.consumed_rates) == {}


def test_a_collection_without_offsets_keeps_the_rate_baseline() -> None:
    first = _snap(0.0, {"t": [(1, 0)]})
    failed = empty_snapshot(10.0, (PhaseError(COLLECTION_PHASE, "timed out"),))
    third = _snap(20.0, {"t": [(1, 400)]})
    s = _chain(first, failed, third)
    assert s.topic_rates == {"t": 20.0}  # 400 messages over the 20 s since the last offsets
    assert s.errors_total[COLLECTION_PHASE] == 1
    assert s.collections_total == 3


def test_lag_is_clamped_and_absent_without_a_commit_or_a_latest_offset() -> None:
    s = derive(
        None,
        _snap(
            0.0,
            {"t": [(1, 100), (1, 200), (1, 300)]},
            {"g": {("t", 0): 150, ("t", 1): 50, ("gone", 0): 7}},
        ),
    )
    found = samples(render(s, FULL))

    def series(name: str) -> dict[tuple[str, str], float]:
        return {(k["topic"], k["partition"]): v for (n, k), v in found.items() if n == name}

    assert series("kafka_consumergroup_lag") == {("t", "0"): 0, ("t", "1"): 150}
    assert series("kafka_consumergroup_current_offset") == {
        ("gone", "0"): 7,
        ("t", "0"): 150,
        ("t", "1"): 50,
    }
    assert value(found, "kafka_consumergroup_lag_sum", consumergroup="g", topic="t") == 150
    assert value(found, "kafka_consumergroup_lag_sum", consumergroup="g", topic="gone") is None
    assert all(v >= 0 for (n, _), v in found.items() if n.startswith("kafka_consumergroup_lag"))


@pytest.mark.parametrize(
    ("configs", "broker_default", "isr", "expected"),
    [
        ({"min.insync.replicas": "2"}, None, (1, 2), 0),
        ({"min.insync.replicas": "3"}, 1, (1, 2), 1),  # the topic's own value wins
        ({}, 2, (1,), 1),  # the broker default applies when the topic has none
        ({}, None, (1,), None),  # unknown: no series rather than a guess
    ],
)
def test_under_min_isr_uses_the_topic_value_then_the_broker_default(
    configs: dict[str, str], broker_default: int | None, isr: tuple[int, ...], expected: int | None
) -> None:
    s = derive(
        None, _snap(0.0, {"t": [(1, 0)]}, isr=isr, configs=configs, broker_min_isr=broker_default)
    )
    found = samples(render(s, FULL))
    assert value(found, "kafka_topic_partition_under_min_isr", topic="t", partition="0") == expected
    assert (
        value(found, "kafka_topic_partition_under_replicated_partition", topic="t", partition="0")
        == 1
    )


def test_deleted_topics_and_groups_vanish_at_the_next_collection() -> None:
    before = _snap(
        0.0,
        {"old": [(1, 5)], "kept": [(2, 9)]},
        {"old-group": {("old", 0): 5}, "g": {("kept", 0): 1}},
    )
    after = _snap(15.0, {"kept": [(2, 12)]}, {"g": {("kept", 0): 2}})
    first = render(derive(None, before))
    assert 'topic="old"' in first and 'consumergroup="old-group"' in first
    text = render(_chain(before, after))
    assert 'topic="old"' not in text and "old-group" not in text
    assert (
        value(samples(text), "kafka_topic_partition_current_offset", topic="kept", partition="0")
        == 12
    )


def test_failed_metadata_drops_every_kafka_family_and_sets_up_to_0() -> None:
    good = _snap(0.0, {"t": [(1, 5)]})
    bad = empty_snapshot(15.0, (PhaseError("metadata", "KafkaError _TRANSPORT: down"),))
    s = _chain(good, bad)
    found = samples(render(s, FULL))
    assert {n for n, _ in found if n.startswith("kafka_")} == set()
    assert value(found, "vigia_exporter_up") == 0
    assert value(found, "vigia_exporter_collection_errors_total", phase="metadata") == 1
    assert value(found, "vigia_exporter_collection_errors_total", phase="offsets") == 0


def test_health_before_the_first_collection() -> None:
    found = samples(render(None, FULL))
    assert value(found, "vigia_exporter_up") == 0
    assert {n for n, _ in found} == {"vigia_exporter_up", "vigia_exporter_build_info"}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fast_exposition_is_byte_identical_to_prometheus_client(scenario: str) -> None:
    _assert_same_as_generate_latest(state(scenario))


def test_fast_exposition_escapes_label_values_like_prometheus_client() -> None:
    odd = replace(
        synthetic_snapshot(3, 20, 3, 2),
        groups=(ConsumerGroup('we"ird\\group\nname', "EMPTY", "CLASSIC", "", 1, (), ()),),
    )
    _assert_same_as_generate_latest(derive(None, odd))
    assert 'we\\"ird\\\\group\\nname' in render(derive(None, odd))


def _assert_same_as_generate_latest(s: ExporterState) -> None:
    registry = CollectorRegistry(auto_describe=False)
    for c in collectors(lambda: s, granularity=FULL):
        registry.register(c)
    assert render(s, FULL) == generate_latest(registry).decode("utf-8")
    assert family_names(render(s, FULL))
