"""ISR history on synthetic sequences and on the real Kafka 4.0 recordings (broker 1 stopped)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from tests.conftest import KAFKA_FIXTURES, SCENARIOS
from vigia.exporter.model.isr_history import IsrTracker
from vigia.exporter.recording import load_snapshot

Partitions = Mapping[tuple[str, int], tuple[Sequence[int], Sequence[int]]]


def load(scenario: str) -> tuple[float, Partitions]:
    snapshot = load_snapshot(KAFKA_FIXTURES / f"{scenario}.json")
    partitions = {
        (topic.name, p.partition): (p.replicas, p.isr)
        for topic in snapshot.topics
        for p in topic.partitions
    }
    return snapshot.collected_at, partitions


def test_real_recordings_broker_1_leaves_and_rejoins() -> None:
    tracker = IsrTracker()
    times: dict[str, float] = {}
    seconds: dict[str, dict[tuple[str, int, int], float]] = {}
    for scenario in SCENARIOS:
        collected_at, partitions = load(scenario)
        times[scenario] = collected_at
        tracker.update(collected_at, partitions)
        seconds[scenario] = tracker.out_of_sync_seconds(now=collected_at)
        if scenario == "healthy-later":
            assert tracker.shrinks == {} and tracker.expands == {}

    assert len(tracker) == 68  # 50 __consumer_offsets + 18 user partitions
    for scenario in ("healthy", "healthy-later", "broker-back-imbalanced", "rebalanced"):
        assert set(seconds[scenario].values()) == {0.0}, scenario
    assert len(seconds["healthy"]) == 3 * 67  # every broker holds 67 replicas

    down = {key: s for key, s in seconds["broker-down"].items() if s > 0}
    assert len(down) == 67
    assert {broker for (_, _, broker) in down} == {1}
    # Left between healthy-later (21:33:38.4) and broker-down (21:34:11.4): midpoint estimate.
    expected = (times["broker-down"] - times["healthy-later"]) / 2
    assert all(value == pytest.approx(expected) for value in down.values())
    assert expected == pytest.approx(16.49, abs=0.01)
    # Node 1 really was stopped at 21:33:51–56 (README timeline), 15–20 s before broker-down.
    assert 15.0 <= expected <= 20.5

    assert tracker.shrinks == {1: 67}
    assert tracker.expands == {1: 67}


def test_replica_leaving_and_coming_back() -> None:
    tracker = IsrTracker()
    key = ("measure", 0)
    tracker.update(100.0, {key: ([1, 2, 3], [1, 2, 3])})
    tracker.update(115.0, {key: ([1, 2, 3], [1, 3])})
    assert tracker.out_of_sync_since("measure", 0, 2) == pytest.approx(107.5)
    tracker.update(130.0, {key: ([1, 2, 3], [1, 3])})
    assert tracker.out_of_sync_seconds(now=130.0) == {
        ("measure", 0, 1): 0.0,
        ("measure", 0, 2): pytest.approx(22.5),
        ("measure", 0, 3): 0.0,
    }
    assert tracker.shrinks == {2: 1}
    tracker.update(145.0, {key: ([1, 2, 3], [1, 2, 3])})
    assert tracker.out_of_sync_since("measure", 0, 2) is None
    assert set(tracker.out_of_sync_seconds(now=145.0).values()) == {0.0}
    assert tracker.expands == {2: 1}
    # Leaves again: a second shrink, timed from the new leave.
    tracker.update(160.0, {key: ([1, 2, 3], [1, 3])})
    assert tracker.shrinks == {2: 2}
    assert tracker.out_of_sync_seconds(now=160.0)[("measure", 0, 2)] == pytest.approx(7.5)


def test_out_of_sync_at_first_sight_counts_from_then_without_a_shrink() -> None:
    tracker = IsrTracker()
    tracker.update(100.0, {("t", 0): ([1, 2], [1])})
    assert tracker.out_of_sync_seconds(now=100.0)[("t", 0, 2)] == 0.0
    tracker.update(115.0, {("t", 0): ([1, 2], [1])})
    assert tracker.out_of_sync_seconds(now=115.0)[("t", 0, 2)] == pytest.approx(15.0)
    assert tracker.shrinks == {}
    tracker.update(130.0, {("t", 0): ([1, 2], [1, 2])})
    assert tracker.expands == {2: 1}


def test_reassignment_adds_a_catching_up_replica_and_drops_an_old_one() -> None:
    tracker = IsrTracker()
    tracker.update(0.0, {("t", 0): ([1, 2], [1, 2])})
    tracker.update(15.0, {("t", 0): ([1, 2, 3], [1, 2])})  # 3 added, catching up
    assert tracker.shrinks == {}
    assert tracker.out_of_sync_since("t", 0, 3) == 15.0
    tracker.update(30.0, {("t", 0): ([3, 1], [3, 1])})  # 3 in sync, 2 removed
    assert tracker.expands == {3: 1}
    assert set(tracker.out_of_sync_seconds(now=30.0)) == {("t", 0, 3), ("t", 0, 1)}


def test_several_replicas_leave_at_once_count_one_shrink_each() -> None:
    tracker = IsrTracker()
    tracker.update(0.0, {("t", 0): ([1, 2, 3], [1, 2, 3])})
    tracker.update(10.0, {("t", 0): ([1, 2, 3], [1])})
    assert tracker.shrinks == {2: 1, 3: 1}


def test_deleted_partitions_are_forgotten_but_counters_stay() -> None:
    tracker = IsrTracker()
    tracker.update(0.0, {("t", 0): ([1, 2], [1, 2]), ("u", 0): ([2], [2])})
    tracker.update(10.0, {("t", 0): ([1, 2], [1]), ("u", 0): ([2], [2])})
    tracker.update(20.0, {("u", 0): ([2], [2])})  # topic t deleted
    assert len(tracker) == 1
    assert tracker.out_of_sync_since("t", 0, 2) is None
    assert tracker.shrinks == {2: 1}
    # A partial collection (prune=False) keeps what it did not see.
    tracker.update(30.0, {("t", 0): ([1, 2], [1]), ("u", 0): ([2], [2])})
    tracker.update(40.0, {("v", 0): ([1], [1])}, prune=False)
    assert len(tracker) == 3
    # Recreated t starts fresh: its replica 2 counts from its first sight, no shrink.
    assert tracker.out_of_sync_since("t", 0, 2) == 30.0
    assert tracker.shrinks == {2: 1}
