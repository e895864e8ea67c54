"""Lag seconds from record timestamps: the pure planning and combining
(exporter/model/record_time.py), and `derive` using them, on hand-made snapshots."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from types import MappingProxyType

import pytest

from tests.exporter.exposition import samples, value
from vigia.exporter.collectors import render
from vigia.exporter.kafka.record_times import RecordTimeReader
from vigia.exporter.model.granularity import FULL
from vigia.exporter.model.record_time import (
    CAUGHT_UP,
    EXTRAPOLATED,
    INTERPOLATED,
    RECORD,
    Lagging,
    RecordBudget,
    combine,
    lagging_partitions,
    merge_record_times,
    method_counts,
    plan_reads,
)
from vigia.exporter.model.snapshot import (
    Broker,
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    Partition,
    PhaseError,
    RecordTime,
    Topic,
)
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.service import CollectionService
from vigia.exporter.web import api

NOW = 1_800_000_000.0


def _record(offset: int, ts_s: float | None, *, read_at: int | None = None) -> RecordTime:
    ts = None if ts_s is None else round(ts_s * 1000)
    return RecordTime("t", 0, offset, offset if read_at is None else read_at, ts)


# -- combine -----------------------------------------------------------------------------------


def test_lag_0_is_0_seconds_caught_up_whatever_was_read() -> None:
    assert combine(100, 100, _record(100, NOW - 60), (5.0, INTERPOLATED), NOW) == (0.0, CAUGHT_UP)
    assert combine(120, 100, None, None, NOW) == (0.0, CAUGHT_UP)


def test_a_record_at_the_committed_offset_gives_its_age_whatever_the_history_says() -> None:
    # 45 minutes old, while the history (10 minutes of uptime) extrapolates 600 s.
    assert combine(50, 100, _record(50, NOW - 2700), (600.0, EXTRAPOLATED), NOW) == (
        pytest.approx(2700.0),
        RECORD,
    )
    assert combine(50, 100, _record(50, NOW - 2700), None, NOW) == (pytest.approx(2700.0), RECORD)


def test_a_producer_clock_ahead_of_the_exporter_gives_0_not_a_negative_age() -> None:
    assert combine(50, 100, _record(50, NOW + 30), None, NOW) == (0.0, RECORD)


def test_a_record_without_timestamp_falls_back_to_the_history() -> None:
    assert combine(50, 100, _record(50, None), (12.0, INTERPOLATED), NOW) == (12.0, INTERPOLATED)
    assert combine(50, 100, _record(50, None), None, NOW) is None
    assert combine(50, 100, None, (12.0, EXTRAPOLATED), NOW) == (12.0, EXTRAPOLATED)
    assert combine(50, 100, None, None, NOW) is None


def test_a_record_past_the_committed_offset_is_a_lower_bound_combined_by_max() -> None:
    # C itself is a transaction marker or compacted away: the next record is 40 s old.
    past = _record(50, NOW - 40, read_at=57)
    assert combine(50, 100, past, (55.0, INTERPOLATED), NOW) == (55.0, INTERPOLATED)
    assert combine(50, 100, past, (30.0, EXTRAPOLATED), NOW) == (pytest.approx(40.0), RECORD)
    assert combine(50, 100, past, None, NOW) == (pytest.approx(40.0), RECORD)


# -- plan_reads and merge_record_times ---------------------------------------------------------


def test_plan_reads_skips_what_is_known_or_deleted_and_reads_a_shared_offset_once() -> None:
    lagging = {
        ("a", "t", 0): Lagging(10, 100, 0),
        ("b", "t", 0): Lagging(10, 100, 0),  # same offset as group a: one read
        ("a", "t", 1): Lagging(20, 100, 0),  # already read at this offset
        ("a", "t", 2): Lagging(5, 100, 8),  # below the earliest offset: deleted by retention
        ("a", "u", 0): Lagging(30, 100, None),  # earliest unknown: try
    }
    known = {("t", 1, 20): RecordTime("t", 1, 20, 20, 1)}
    assert sorted(plan_reads(lagging, known, {}, {}, 10).targets) == [("t", 0, 10), ("u", 0, 30)]


def test_plan_reads_reads_all_that_nothing_answers_and_refreshes_the_oldest_within_the_budget() -> (
    None
):
    lagging = {
        ("g", "t", 0): Lagging(0, 10, None),  # interpolated 50 s at the previous collection
        ("g", "t", 1): Lagging(0, 10, None),  # interpolated 500 s
        ("g", "t", 2): Lagging(0, 10, None),  # extrapolated 20 s
        ("g", "t", 3): Lagging(0, 10, None),  # no value
        ("g", "t", 4): Lagging(0, 99, None),  # no value, more messages behind
        ("g", "t", 5): Lagging(0, 10, None),  # read before at another offset: record 9 s
        ("g", "t", 6): Lagging(0, 20, None),  # interpolated 50 s, more messages behind than 0
    }
    seconds = {("g", "t", 0): 50.0, ("g", "t", 1): 500.0, ("g", "t", 2): 20.0}
    seconds[("g", "t", 5)] = 9.0
    seconds[("g", "t", 6)] = 50.0
    methods = {
        ("g", "t", 0): INTERPOLATED,
        ("g", "t", 1): INTERPOLATED,
        ("g", "t", 2): EXTRAPOLATED,
        ("g", "t", 5): RECORD,
        ("g", "t", 6): INTERPOLATED,
    }
    plan = plan_reads(lagging, {}, seconds, methods, 10)
    assert [p for _, p, _ in plan.first] == [2, 3, 4]
    assert [p for _, p, _ in plan.refresh] == [1, 6, 0, 5]
    # The budget bounds the refreshes only: what nothing answers is read whatever its size.
    small = plan_reads(lagging, {}, seconds, methods, 1)
    assert [p for _, p, _ in small.targets] == [2, 3, 4, 1]
    assert plan_reads(lagging, {}, seconds, methods, 0).targets == []


def test_after_a_start_every_lagging_offset_is_read_at_the_first_collection() -> None:
    lagging = {(f"g{g}", "t", p): Lagging(g, 100, 0) for g in range(50) for p in range(100)}
    plan = plan_reads(lagging, {}, {}, {}, 200)
    assert len(plan.first) == 5_000
    assert plan.refresh == ()


def test_plan_reads_puts_what_failed_twice_last_within_the_budget() -> None:
    lagging = {("g", "t", p): Lagging(0, 10 * (p + 1), None) for p in range(3)}
    assert [p for _, p, _ in plan_reads(lagging, {}, {}, {}, 3).first] == [0, 1, 2]
    failing = {("t", 2, 0), ("t", 1, 0)}
    plan = plan_reads(lagging, {}, {}, {}, 1, failing)
    assert [p for _, p, _ in plan.first] == [0]
    assert [p for _, p, _ in plan.refresh] == [2]  # the most messages behind of the two


def test_merge_keeps_reads_while_their_offset_is_committed_and_readable() -> None:
    old = {("t", 0, 10): RecordTime("t", 0, 10, 10, 5), ("t", 1, 3): RecordTime("t", 1, 3, 3, 6)}
    new = [RecordTime("t", 2, 7, 7, 8)]
    lagging = {
        ("g", "t", 0): Lagging(10, 50, 0),  # still committed there: kept
        ("g", "t", 1): Lagging(4, 50, 0),  # moved on: the read at 3 is dropped
        ("g", "t", 2): Lagging(7, 50, 0),
    }
    assert set(merge_record_times(old, new, lagging)) == {("t", 0, 10), ("t", 2, 7)}
    deleted = {**lagging, ("g", "t", 0): Lagging(10, 50, 20)}  # retention passed it
    assert set(merge_record_times(old, new, deleted)) == {("t", 2, 7)}
    # A partial collection did not see every group: nothing is forgotten.
    assert set(merge_record_times(old, new, None)) == {("t", 0, 10), ("t", 1, 3), ("t", 2, 7)}


def test_method_counts_count_only_the_methods_some_lagging_partition_has() -> None:
    lagging = [("a", "t", 0), ("a", "t", 1), ("a", "t", 2), ("b", "t", 0)]
    methods = {("a", "t", 0): RECORD, ("a", "t", 1): RECORD, ("b", "t", 0): INTERPOLATED}
    assert method_counts(lagging, methods) == {
        ("a", "record"): 2,
        ("a", "unknown"): 1,
        ("b", "interpolated"): 1,
    }


def test_budget_rejects_negative_partitions_and_no_time() -> None:
    with pytest.raises(ValueError):
        RecordBudget(-1, 1.0)
    with pytest.raises(ValueError):
        RecordBudget(10, 0.0)


# -- derive ------------------------------------------------------------------------------------


def _snap(
    at: float,
    latest: int,
    committed: int,
    *,
    earliest: int = 0,
    reads: tuple[RecordTime, ...] = (),
    errors: tuple[PhaseError, ...] = (),
) -> ClusterSnapshot:
    return ClusterSnapshot(
        collected_at=at,
        cluster_id="c",
        controller_id=1,
        controller_source="quorum",
        brokers=(Broker(1, "127.0.0.1", 9091),),
        topics=(Topic("t", False, (Partition(0, 1, (1,), (1,), (), earliest, latest),)),),
        log_dirs=(),
        groups=(
            ConsumerGroup(
                "g", "EMPTY", "CLASSIC", "", 1, (), (CommittedOffset("t", 0, committed),)
            ),
        ),
        errors=errors,
        record_times=reads,
    )


def _chain(*snapshots: ClusterSnapshot) -> list[ExporterState]:
    history = History()
    states: list[ExporterState] = []
    for s in snapshots:
        states.append(derive(states[-1] if states else None, s, history))
    return states


KEY = ("g", "t", 0)


def test_a_read_record_gives_the_age_on_the_first_collection_and_stays_without_rereading() -> None:
    read = (_record(50, NOW - 2700),)
    first, second, moved = _chain(
        _snap(NOW, 100, 50, reads=read),
        _snap(NOW + 15, 130, 50),  # nothing read: the earlier read still holds for offset 50
        _snap(NOW + 30, 160, 140),  # the group moved on: back to the history
    )
    assert first.lag_seconds == {KEY: pytest.approx(2700.0)}
    assert first.lag_seconds_methods == {KEY: RECORD}
    assert first.max_lag_seconds == {("g", "t"): pytest.approx(2700.0)}
    assert second.lag_seconds == {KEY: pytest.approx(2715.0)}
    assert second.lag_seconds_methods == {KEY: RECORD}
    assert moved.lag_seconds == {KEY: pytest.approx(10.0)}  # 140 was latest at NOW + 20
    assert moved.lag_seconds_methods == {KEY: INTERPOLATED}
    assert moved.record_times == {}

    found = samples(render(first, FULL))
    counts = {
        m: value(found, "kafka_consumergroup_lag_seconds_partitions", consumergroup="g", method=m)
        for m in ("record", "interpolated", "extrapolated", "unknown")
    }
    assert counts == {"record": 1, "interpolated": None, "extrapolated": None, "unknown": None}
    (group,) = api.state_json(first)["groups"]
    assert group["partitions"][0]["lag_seconds_method"] == "record"
    assert group["topics"][0]["max_lag_seconds_method"] == "record"


def test_without_a_read_the_first_collection_has_no_value_and_later_ones_use_the_history() -> None:
    first, second = _chain(_snap(NOW, 100, 50), _snap(NOW + 15, 130, 50))
    assert first.lag_seconds == {} and first.lag_seconds_methods == {}
    assert first.lag_method_counts[("g", "unknown")] == 1
    assert second.lag_seconds_methods == {KEY: EXTRAPOLATED}  # 50 is older than the history
    (group,) = api.state_json(first)["groups"]
    assert group["partitions"][0]["lag_seconds_method"] is None
    assert group["topics"][0]["max_lag_seconds_method"] is None


def test_a_read_offset_deleted_by_retention_falls_back_and_is_forgotten() -> None:
    first, second = _chain(
        _snap(NOW, 100, 50, reads=(_record(50, NOW - 2700),)),
        _snap(NOW + 15, 130, 50, earliest=60),
    )
    assert first.lag_seconds_methods == {KEY: RECORD}
    assert second.lag_seconds_methods == {KEY: EXTRAPOLATED}
    assert second.record_times == {}


def test_a_partial_collection_keeps_the_reads() -> None:
    partial = replace(
        _snap(NOW + 15, 130, 50), groups=(), errors=(PhaseError("group_offsets", "timed out"),)
    )
    first, second, third = _chain(
        _snap(NOW, 100, 50, reads=(_record(50, NOW - 2700),)), partial, _snap(NOW + 30, 160, 50)
    )
    assert second.record_times == first.record_times
    assert third.lag_seconds == {KEY: pytest.approx(2730.0)}
    assert third.lag_seconds_methods == {KEY: RECORD}


def test_lagging_partitions_are_those_below_the_latest_offset_with_known_ends() -> None:
    snap = _snap(NOW, 100, 50, earliest=3)
    assert lagging_partitions(snap) == {KEY: Lagging(50, 100, 3)}
    assert lagging_partitions(_snap(NOW, 50, 50)) == {}


# -- the step in the collection loop ----------------------------------------------------------


class _Reader(RecordTimeReader):
    """The real step (planning, budget, bookkeeping) with `read` answering from a table."""

    def __init__(self, budget: RecordBudget, table: dict[tuple[str, int, int], float]) -> None:
        super().__init__("unused:9092", {}, budget)
        self.table = table
        self.asked: list[list[tuple[str, int, int]]] = []
        self.timeouts: list[float] = []

    def read(
        self, targets: Sequence[tuple[str, int, int]], timeout: float
    ) -> tuple[tuple[RecordTime, ...], list[str]]:
        self.asked.append(list(targets))
        self.timeouts.append(timeout)
        found = [
            RecordTime(t, p, o, o, round(self.table[(t, p, o)] * 1000))
            for t, p, o in targets
            if (t, p, o) in self.table
        ]
        return tuple(found), [] if found else ["t-0: KafkaError TOPIC_AUTHORIZATION_FAILED"]


def test_the_step_reads_once_per_offset_and_times_itself() -> None:
    reader = _Reader(RecordBudget(), {("t", 0, 50): NOW - 2700})
    service = CollectionService(
        lambda _: replace(_snap(NOW, 100, 50), durations=MappingProxyType({"total": 0.5})),
        interval=15,
        timeout=10,
        enrich=reader,
    )
    first = service.collect_once()
    second = service.collect_once()
    assert reader.asked == [[("t", 0, 50)]]  # the second collection reuses the read
    assert first.lag_seconds_methods == second.lag_seconds_methods == {KEY: RECORD}
    assert first.lag_seconds == {KEY: pytest.approx(2700.0)}
    assert "record_times" in first.snapshot.durations
    assert first.snapshot.durations["total"] >= 0.5 + first.snapshot.durations["record_times"]


def test_the_step_reads_nothing_with_no_budget_or_no_time_and_logs_only_changes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    snap = _snap(NOW, 100, 50)
    none = _Reader(RecordBudget(partitions=0), {})
    assert none(snap, None, 10.0) is snap and none.asked == []
    reader = _Reader(RecordBudget(), {})
    with caplog.at_level(logging.INFO, "vigia.exporter.kafka.record_times"):
        for _ in range(2):  # less than 0.1 s left of the collection
            unread = reader(snap, None, 0.05)
            assert (unread.record_times, unread.durations["record_times"]) == ((), 0.0)
        assert reader.asked == []
        reader.table[("t", 0, 50)] = NOW - 60
        assert reader(snap, None, 5.0).record_times == (_record(50, NOW - 60),)
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]
    assert "no time left" in caplog.records[0].getMessage()


def test_first_reads_may_use_the_rest_of_the_collection_and_refreshes_their_budget() -> None:
    reader = _Reader(RecordBudget(seconds=2.0), {("t", 0, 50): NOW - 60})
    snap = _snap(NOW, 100, 50)
    reader(snap, None, 8.0)  # after a start nothing answers offset 50 but its record
    (state,) = _chain(replace(snap, record_times=()))  # the history answers from now on
    moved = _snap(NOW + 15, 130, 60)
    reader.table[("t", 0, 60)] = NOW - 30
    reader(moved, replace(state, lag_seconds_methods={KEY: INTERPOLATED}), 8.0)
    assert reader.timeouts == [pytest.approx(7.5), 2.0]


def test_an_offset_missed_twice_in_a_row_is_failing_and_read_within_the_budget_only() -> None:
    reader = _Reader(RecordBudget(partitions=1), {})
    snap = _snap(NOW, 100, 50)
    for _ in range(3):
        reader(snap, None, 8.0)
    assert reader.asked == [[("t", 0, 50)]] * 3
    assert reader.timeouts == [pytest.approx(7.5), pytest.approx(7.5), 2.0]


def test_a_failing_offset_stays_failing_while_the_budget_leaves_it_unasked() -> None:
    reader = _Reader(RecordBudget(partitions=1), {})
    snap = replace(
        _snap(NOW, 100, 50),
        groups=(
            ConsumerGroup(
                "g",
                "EMPTY",
                "CLASSIC",
                "",
                1,
                (),
                (CommittedOffset("t", 0, 50), CommittedOffset("u", 0, 50)),
            ),
        ),
        topics=(
            Topic("t", False, (Partition(0, 1, (1,), (1,), (), 0, 100),)),
            Topic("u", False, (Partition(0, 1, (1,), (1,), (), 0, 100),)),
        ),
    )
    for _ in range(5):
        reader(snap, None, 8.0)
    # Twice all as first reads, then one a collection within the budget of 1, never again both.
    assert [len(asked) for asked in reader.asked] == [2, 2, 1, 1, 1]


def test_a_failing_step_keeps_the_collection() -> None:
    def broken(snapshot: ClusterSnapshot, previous: object, left: float) -> ClusterSnapshot:
        raise RuntimeError("bug")

    service = CollectionService(lambda _: _snap(NOW, 100, 50), 15, 10, enrich=broken)
    state = service.collect_once()
    assert state.up and state.group_lags[0].lag == 50
