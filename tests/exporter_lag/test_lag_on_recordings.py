"""Lag seconds and lag status on the real Kafka 4.0 recordings (five collections, 15–33 s apart)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from exporter.lag_seconds import OffsetHistory
from exporter.lag_status import GroupStatus, LagStatusTracker, Observation, PartitionStatus
from exporter.recording import load_snapshot
from tests.conftest import KAFKA_FIXTURES, SCENARIOS

# README timeline: the earlier recording pass (21:29–21:32 UTC) was reset, then the loader wrote
# `measure` again before the background producer started at 21:33:11.
LOADER_AFTER = 1795296720.0  # 2026-11-21 21:32:00 UTC
LOADER_BEFORE = 1795296791.0  # 21:33:11 UTC


@dataclass(frozen=True)
class Collection:
    collected_at: float
    latest: dict[tuple[str, int], int]
    observations: dict[tuple[str, str, int], Observation]


def collections() -> Iterator[Collection]:
    for scenario in SCENARIOS:
        snapshot = load_snapshot(KAFKA_FIXTURES / f"{scenario}.json")
        latest = {
            (t.name, p.partition): p.latest_offset
            for t in snapshot.topics
            for p in t.partitions
            if p.latest_offset is not None
        }
        observations = {}
        for group in snapshot.groups:
            owned = {(r.topic, r.partition) for m in group.members or () for r in m.assignment}
            for c in group.committed or ():
                observations[(group.group_id, c.topic, c.partition)] = Observation(
                    snapshot.collected_at,
                    c.offset,
                    latest[(c.topic, c.partition)],
                    (c.topic, c.partition) in owned,
                )
        yield Collection(snapshot.collected_at, latest, observations)


@pytest.mark.parametrize("tolerance", [0.0, 1.0])
def test_billing_lag_seconds_is_its_lag_at_the_latest_rate(tolerance: float) -> None:
    history = OffsetHistory(tolerance_seconds=tolerance)
    previous: Collection | None = None
    checked = 0
    for collection in collections():
        history.record(collection.collected_at, collection.latest)
        for (group, topic, partition), o in collection.observations.items():
            if group != "billing":
                continue
            seconds = history.lag_seconds(topic, partition, o.committed, o.latest, o.time)
            if previous is None:
                assert seconds is None  # first collection: nothing to interpolate from
                continue
            # The ~100–300 unread messages arrived after the previous collection: the estimate
            # is the lag divided by the partition's rate since then.
            rate = (o.latest - previous.latest[(topic, partition)]) / (
                collection.collected_at - previous.collected_at
            )
            assert seconds == pytest.approx(
                o.lag / rate, abs=1e-6 + tolerance
            )  # unix-time float rounding
            assert 0.1 < seconds < 1.0
            checked += 1
        previous = collection
    assert checked == 4 * 6


def test_stopped_vigia_ingest_ages_with_the_clock_and_dates_back_to_the_loader() -> None:
    history = OffsetHistory()
    ages: list[float] = []
    for collection in collections():
        history.record(collection.collected_at, collection.latest)
        seconds = history.lag_seconds(
            "measure", 0, 20040, collection.latest[("measure", 0)], collection.collected_at
        )
        if seconds is None:
            continue
        ages.append(seconds)
        # Committed offsets older than the recorded history: extrapolated at the history's rate.
        produced = collection.collected_at - seconds
        assert LOADER_AFTER <= produced <= LOADER_BEFORE
    assert len(ages) == 4
    assert ages == sorted(ages)


def test_lag_status_over_the_recordings() -> None:
    complete = LagStatusTracker(window_size=5)
    incomplete = LagStatusTracker(window_size=10)
    for collection in collections():
        complete.observe(collection.observations)
        incomplete.observe(collection.observations)

    report = complete.evaluate()
    assert {g: e.status for g, e in report.groups.items()} == {
        "billing": GroupStatus.OK,  # Stable member, lag goes up and down
        "events-reader": GroupStatus.OK,  # lag 0
        "verify-group-848": GroupStatus.OK,  # lag 0
        "vigia-ingest": GroupStatus.ERR,  # Empty, offsets frozen while 2,000 msg/s arrive
        "verify-group": GroupStatus.ERR,  # Empty, 2,000 unread messages on an idle topic
    }
    stopped = {k for k, e in report.partitions.items() if e.status is PartitionStatus.STOP}
    assert stopped == {("vigia-ingest", "measure", p) for p in range(6)} | {
        ("verify-group", "verify-6x3", p) for p in range(6)
    }
    assert all(e.complete == 1.0 for e in report.groups.values())

    waiting = incomplete.evaluate()
    assert {e.status for e in waiting.partitions.values()} == {PartitionStatus.OK}
    assert {e.complete for e in waiting.partitions.values()} == {0.5}
