"""The side-by-side benchmark's arithmetic (benchmarks/side_by_side_stats.py)."""

from __future__ import annotations

import math

import pytest

from benchmarks import side_by_side_stats as stats


def test_cpu_comes_from_utime_and_stime_even_when_the_name_holds_a_parenthesis() -> None:
    # pid (comm) state ppid ... field 14 utime = 250, field 15 stime = 50 (ticks of 1/100 s)
    line = "4242 (kafka (exp) r) S 1 2 3 4 5 6 7 8 9 10 250 50 11 12 20 0 9 0 100 0 0"
    assert stats.stat_cpu_seconds(line, 100) == 3.0


def test_cpu_per_15_s_of_wall_time() -> None:
    assert stats.cpu_per_wall(cpu=6.0, window=150.0) == pytest.approx(0.6)
    with pytest.raises(ValueError):
        stats.cpu_per_wall(cpu=1.0, window=0.0)


def test_collections_a_15_s_scrape_saw_as_one_still_count() -> None:
    # Starts seen at 0, 15, 45 (the one at 30 seen by no scrape) and a repeat of 45.
    assert stats.collections_seen([0.0, 15.1, 45.0, 45.0], interval=15.0, duration=2.0) == 3


def test_overrunning_collections_are_counted_at_their_own_pace() -> None:
    # 20-s collections back to back: 40 s holds two of them, not three.
    assert stats.collections_seen([0.0, 40.0], interval=15.0, duration=20.0) == 2


def test_cpu_per_view_is_the_window_rate_times_the_period_between_views() -> None:
    period = stats.view_period([10.0, 44.0, 78.0, 112.0])
    assert period == pytest.approx(34.0)
    # 9 CPU-s over a 150-s window, a view every 34 s: 2.04 CPU-s per view.
    assert stats.cpu_per_view(9.0, 150.0, period) == pytest.approx(2.04)
    assert math.isnan(stats.cpu_per_view(9.0, 150.0, stats.view_period([10.0])))


def test_the_period_divides_by_the_collections_counted_not_the_ones_seen() -> None:
    assert stats.view_period([0.0, 15.0, 45.0], views=3) == pytest.approx(15.0)


def test_gaps_are_the_15_s_intervals_without_a_fresh_view() -> None:
    # A 150-s window (10 intervals) with views every 34 s: 5 intervals hold one.
    views = [100.0 + 34.0 * n for n in range(5)]
    assert stats.intervals_in(100.0, 250.0) == 10
    assert stats.gaps(views, 100.0, 250.0) == 5
    assert stats.gaps([100.0 + 15.0 * n + 1 for n in range(10)], 100.0, 250.0) == 0


def test_a_collection_no_scrape_saw_was_still_produced() -> None:
    # Scrapes saw collections ending at 101 and 131: the one at 116 was overwritten unseen.
    assert stats.produced([101.0, 131.0, 131.0, 146.0], 15.0) == [101.0, 116.0, 131.0, 146.0]
    assert stats.gaps(stats.produced([101.0, 131.0, 146.0], 15.0), 100.0, 145.0) == 0
    # An overrunning loop (30-s collections) produces every 30 s, with gaps.
    assert stats.produced([100.0, 130.0, 160.0], 30.0) == [100.0, 130.0, 160.0]
    assert stats.gaps([100.0, 130.0, 160.0], 100.0, 175.0) == 2


def test_views_outside_the_window_fill_no_interval() -> None:
    assert stats.gaps([99.0, 250.0, 260.0], 100.0, 250.0) == 10


def test_spread_is_min_median_max_and_ignores_what_could_not_be_measured() -> None:
    assert stats.spread([0.9, 0.59, math.nan, 0.775]) == stats.Spread(0.59, 0.775, 0.9)
    assert math.isnan(stats.spread([]).median)


def test_the_ratio_is_judged_at_the_worst_repetition() -> None:
    assert stats.worst_ratio([0.30, 0.36, 0.33], [1.8, 1.8, 2.2]) == pytest.approx(0.2)
    assert math.isnan(stats.worst_ratio([0.3], [0.0]))
