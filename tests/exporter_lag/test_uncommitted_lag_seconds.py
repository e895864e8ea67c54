"""Lag seconds of partitions a live member owns without a commit (issue 20 §2, a KIP-848 group
right after it joined): read from the record at the earliest offset, never extrapolated from the
exporter's uptime; nothing, and the group-topic's maximum withheld with its reason, until read."""

from __future__ import annotations

import pytest

from vigia.exporter.model.record_time import RECORD, Lagging, lagging_partitions
from vigia.exporter.model.snapshot import (
    Broker,
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    GroupMember,
    Partition,
    RecordTime,
    Topic,
    TopicPartitionRef,
)
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.web import api

NOW = 1_800_000_000.0
HOUR = 3600.0


def _snap(at: float, *, reads: tuple[RecordTime, ...] = ()) -> ClusterSnapshot:
    """Topic t: partition 0 committed at 90 of 100; partitions 1 and 2 owned by the member and
    never committed, records 20..100 (an hour old at 20)."""
    partitions = tuple(Partition(p, 1, (1,), (1,), (), 20, 100) for p in range(3))
    member = GroupMember("m", "c", "h", tuple(TopicPartitionRef("t", p) for p in range(3)))
    group = ConsumerGroup(
        "g", "STABLE", "CONSUMER", "", 1, (member,), (CommittedOffset("t", 0, 90),)
    )
    return ClusterSnapshot(
        collected_at=at,
        cluster_id="c",
        controller_id=1,
        controller_source="quorum",
        brokers=(Broker(1, "127.0.0.1", 9091),),
        topics=(Topic("t", False, partitions),),
        log_dirs=(),
        groups=(group,),
        errors=(),
        record_times=reads,
    )


def _read(partition: int, offset: int, age: float) -> RecordTime:
    return RecordTime("t", partition, offset, offset, round((NOW - age) * 1000))


def _chain(*snapshots: ClusterSnapshot) -> list[ExporterState]:
    history = History()
    states: list[ExporterState] = []
    for s in snapshots:
        states.append(derive(states[-1] if states else None, s, history))
    return states


def test_owned_uncommitted_partitions_lag_from_their_earliest_offset() -> None:
    assert lagging_partitions(_snap(NOW)) == {
        ("g", "t", 0): Lagging(90, 100, 20),
        ("g", "t", 1): Lagging(20, 100, 20),
        ("g", "t", 2): Lagging(20, 100, 20),
    }


def test_their_age_is_the_earliest_records_and_the_maximum_waits_for_every_one() -> None:
    reads = (_read(0, 90, 60.0), _read(1, 20, HOUR))
    (state,) = _chain(_snap(NOW, reads=reads))
    assert state.lag_seconds[("g", "t", 1)] == pytest.approx(HOUR)
    assert state.lag_seconds_methods[("g", "t", 1)] == RECORD
    assert ("g", "t", 2) not in state.lag_seconds  # not read: nothing, not the uptime
    assert ("g", "t") not in state.max_lag_seconds
    (topic,) = api.state_json(state)["groups"][0]["topics"]
    assert topic["max_lag_seconds"] is None
    assert topic["max_lag_seconds_withheld"] == (
        "1 of 3 partitions with lag have no lag seconds yet (record not read, history too short)"
    )
    by_partition = {p["partition"]: p for p in api.state_json(state)["groups"][0]["partitions"]}
    assert by_partition[1]["lag_seconds"] == pytest.approx(HOUR)
    assert by_partition[1]["lag_seconds_method"] == "record"
    assert by_partition[2]["lag_seconds"] is None


def test_later_collections_never_extrapolate_them_from_the_exporters_history() -> None:
    # Two collections without any read: the history would extrapolate offset 20 from 2 minutes.
    _, second = _chain(_snap(NOW), _snap(NOW + 120))
    assert ("g", "t", 1) not in second.lag_seconds
    assert ("g", "t") not in second.max_lag_seconds
    assert second.lag_method_counts[("g", "unknown")] == 2


def test_once_all_are_read_the_maximum_is_the_oldest_with_its_method() -> None:
    reads = (_read(0, 90, 60.0), _read(1, 20, HOUR), _read(2, 20, HOUR - 5))
    (state,) = _chain(_snap(NOW, reads=reads))
    assert state.max_lag_seconds[("g", "t")] == pytest.approx(HOUR)
    (topic,) = api.state_json(state)["groups"][0]["topics"]
    assert topic["max_lag_seconds_method"] == "record"
    assert topic["max_lag_seconds_withheld"] is None
