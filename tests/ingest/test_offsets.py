"""Offset arithmetic of the Kafka source, without Kafka or Spark."""

from __future__ import annotations

import itertools

import pytest

from vigia.ingest.kafka_source.offsets import (
    OffsetRange,
    OffsetSpecError,
    StartingOffsets,
    clamp_to_available,
    from_json,
    limit_end,
    next_end,
    offsets_behind,
    plan_ranges,
    to_json,
)

T = "measure"


def tps(*offsets: int, topic: str = T) -> dict[tuple[str, int], int]:
    return {(topic, p): o for p, o in enumerate(offsets)}


def test_checkpoint_json_round_trip_with_string_partition_keys() -> None:
    offsets = {("measure", 1): 87, ("measure", 0): 120, ("events", 0): 5}
    data = to_json(offsets)
    assert data == {"events": {"0": 5}, "measure": {"0": 120, "1": 87}}
    assert list(data) == ["events", "measure"]  # sorted: equal positions serialise identically
    assert from_json(data) == offsets


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("earliest", tps(10, 0, 7)),
        ("LATEST", tps(50, 40, 7)),
        ('{"measure": {"0": 20, "2": -1}}', tps(20, 0, 7)),  # missing → earliest, -1 → latest
        ('{"measure": {"0": -2, "1": 35}}', tps(10, 35, 7)),
    ],
)
def test_starting_offsets_resolve(spec: str, expected: dict[tuple[str, int], int]) -> None:
    earliest, latest = tps(10, 0, 7), tps(50, 40, 7)
    assert StartingOffsets.parse(spec).resolve(earliest, latest) == expected


@pytest.mark.parametrize("spec", ["newest", "{not json", '["measure"]', '{"measure": {"0": -3}}'])
def test_starting_offsets_rejects_garbage(spec: str) -> None:
    with pytest.raises(OffsetSpecError):
        StartingOffsets.parse(spec)


def test_limit_end_reads_everything_when_under_the_limit() -> None:
    assert limit_end(tps(0, 0), tps(3, 4), 10) == tps(3, 4)


def test_limit_end_shares_the_limit_in_proportion_to_backlog() -> None:
    end = limit_end(tps(0, 100, 0, 5), tps(600, 400, 300, 5), 600)
    # backlogs 600, 300, 300, 0 of 1200: exactly half of each.
    assert end == tps(300, 250, 150, 5)


def test_limit_end_never_exceeds_the_limit_and_always_progresses() -> None:
    # Many small partitions: rounding shares up (Spark's way) would read 10 offsets, not 3.
    start = tps(*([0] * 10))
    available = tps(*([1] * 10))
    end = limit_end(start, available, 3)
    assert sum(end[tp] - start[tp] for tp in start) == 3
    assert end == limit_end(start, available, 3)  # deterministic


@pytest.mark.parametrize("limit", [1, 2, 7, 99, 1000, 4321])
def test_limit_end_is_exact_and_within_each_partition(limit: int) -> None:
    start = tps(0, 17, 300, 5000, 9)
    available = tps(1000, 17, 1301, 5003, 2000)
    end = limit_end(start, available, limit)
    total = sum(end[tp] - start[tp] for tp in start)
    assert total == min(limit, sum(available[tp] - start[tp] for tp in start))
    assert all(start[tp] <= end[tp] <= available[tp] for tp in start)


def test_repeated_limited_batches_drain_the_backlog_in_bounded_steps() -> None:
    start, latest = tps(0, 0, 0, 0), tps(12_345, 10, 7_000, 0)
    sizes = []
    for _ in itertools.count():
        end, losses = next_end(start, latest, tps(0, 0, 0, 0), max_rows=4_000)
        assert not losses
        size = sum(end[tp] - start[tp] for tp in end)
        if size == 0:
            break
        sizes.append(size)
        start = end
    assert start == latest
    assert sum(sizes) == 19_355
    assert max(sizes) == 4_000 and all(s <= 4_000 for s in sizes)


def test_next_end_new_partition_starts_at_zero() -> None:
    end, losses = next_end(tps(5, 5), tps(9, 9, 3), tps(0, 0, 0), max_rows=None)
    assert end == tps(9, 9, 3)
    assert not losses
    assert plan_ranges(tps(5, 5), end)[-1] == OffsetRange(T, 2, 0, 3)


def test_next_end_caps_to_the_available_now_target() -> None:
    end, _ = next_end(tps(0, 0), tps(100, 100, 50), tps(0, 0, 0), None, target=tps(60, 80))
    assert end == tps(60, 80)  # partition 2 appeared after the run began: next run


def test_next_end_reports_a_deleted_partition_and_a_recreated_one() -> None:
    start = {(T, 0): 50, (T, 1): 70, ("gone", 0): 3}
    end, losses = next_end(start, tps(80, 10), tps(0, 0), max_rows=None)
    assert [(loss.topic, loss.partition) for loss in losses] == [("gone", 0), (T, 1)]
    assert "no longer exists" in losses[0].describe()
    assert "[10, 70)" in losses[1].describe()
    # The re-created partition restarts at its earliest offset; nothing is planned backwards.
    assert end == tps(80, 0)
    assert plan_ranges(start, end) == [OffsetRange(T, 0, 50, 80)]


def test_plan_ranges_skips_empty_partitions() -> None:
    assert plan_ranges(tps(5, 9, 0), tps(8, 9, 0)) == [OffsetRange(T, 0, 5, 8)]


def test_clamp_to_available_inside_the_watermarks_is_untouched() -> None:
    wanted = OffsetRange(T, 0, 10, 20)
    assert clamp_to_available(wanted, earliest=0, latest=30) == (wanted, None)


def test_clamp_to_available_retention_deleted_the_start() -> None:
    clamped, loss = clamp_to_available(OffsetRange(T, 0, 10, 20), earliest=15, latest=30)
    assert clamped == OffsetRange(T, 0, 15, 20)
    assert loss is not None and (loss.lost_from, loss.lost_to) == (10, 15)
    assert "retention" in loss.describe()


def test_clamp_to_available_whole_range_deleted() -> None:
    clamped, loss = clamp_to_available(OffsetRange(T, 0, 10, 20), earliest=25, latest=30)
    assert clamped.size == 0
    assert loss is not None and (loss.lost_from, loss.lost_to) == (10, 20)


def test_clamp_to_available_partition_truncated() -> None:
    clamped, loss = clamp_to_available(OffsetRange(T, 0, 10, 20), earliest=0, latest=12)
    assert clamped == OffsetRange(T, 0, 10, 12)
    assert loss is not None and (loss.lost_from, loss.lost_to) == (12, 20)


def test_offsets_behind_is_the_worst_partition_per_topic() -> None:
    end = {(T, 0): 100, (T, 1): 90, ("e", 0): 5}
    latest = {(T, 0): 130, (T, 1): 95, ("e", 0): 5, (T, 2): 7}
    assert offsets_behind(end, latest) == {T: 30, "e": 0}
