"""Lag in seconds: exact on piecewise-linear histories, bounded on bursty ones, ends, resets."""

from __future__ import annotations

import random
from bisect import bisect_right

import pytest

from vigia.exporter.model.lag_seconds import (
    OffsetHistory,
    estimate_lag_seconds,
    max_lag_seconds_by_group_topic,
)

INTERVAL = 15.0
# (start time, messages per second) of each constant-rate piece; breaks fall on collection times.
PIECES = [(0.0, 10.0), (60.0, 0.0), (120.0, 50.0), (300.0, 3.0), (450.0, 200.0)]
END = 600.0


def latest_at(t: float) -> float:
    x = 0.0
    for (start, rate), (stop, _) in zip(PIECES, [*PIECES[1:], (END, 0.0)], strict=True):
        x += rate * (min(t, stop) - start) if t > start else 0.0
    return x


def last_time_latest_was(offset: float) -> float:
    """Exact sup{t : latest(t) ≤ offset} of the piecewise-linear curve."""
    lo, hi = 0.0, END
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if latest_at(mid) <= offset else (lo, mid)
    return lo


def recorded(history: OffsetHistory, times: list[float], latest: list[int], key=("t", 0)) -> None:
    for t, x in zip(times, latest, strict=True):
        history.record(t, {key: x})


@pytest.mark.parametrize("tolerance", [0.0, 1.0])
def test_exact_on_piecewise_linear_history(tolerance: float) -> None:
    history = OffsetHistory(tolerance_seconds=tolerance)
    times = [INTERVAL * i for i in range(int(END / INTERVAL) + 1)]
    recorded(history, times, [round(latest_at(t)) for t in times])
    latest = round(latest_at(END))
    for committed in range(0, latest, 97):
        expected = END - last_time_latest_was(committed)
        got = history.lag_seconds("t", 0, committed, latest, now=END)
        assert got == pytest.approx(expected, abs=1e-6 + tolerance), committed
    # The idle piece (60 s → 120 s at offset 600): its last moment counts.
    assert history.lag_seconds("t", 0, 600, latest, now=END) == pytest.approx(END - 120.0)


def test_simplification_keeps_breaks_and_drops_collinear_points() -> None:
    history = OffsetHistory(tolerance_seconds=0.0)
    times = [INTERVAL * i for i in range(int(END / INTERVAL) + 1)]
    recorded(history, times, [round(latest_at(t)) for t in times])
    assert history.samples("t", 0) == [
        (0.0, 0),
        (60.0, 600),
        (120.0, 600),
        (300.0, 9600),
        (450.0, 10050),
        (600.0, 40050),
    ]


def test_steady_traffic_for_a_day_costs_two_points() -> None:
    history = OffsetHistory(max_samples=16)
    rng = random.Random(7)
    for i in range(24 * 3600 // 15):
        t = 15.0 * i + rng.uniform(-0.2, 0.2)  # collection jitter
        history.record(t, {("t", 0): round(2000 * t)})
    assert len(history.samples("t", 0)) <= 3
    # Twelve hours behind, still interpolated (not extrapolated) and within the tolerance.
    now = 15.0 * (24 * 3600 // 15 - 1)
    committed = round(2000 * (now - 12 * 3600))
    seconds = history.lag_seconds("t", 0, committed, round(2000 * now), now=now)
    assert seconds == pytest.approx(12 * 3600, abs=1.0)


def bursty_arrivals(seconds: int, seed: int) -> list[float]:
    """Message arrival times: mostly quiet, with bursts of up to 3,000 messages in one second."""
    rng = random.Random(seed)
    arrivals: list[float] = []
    for s in range(seconds):
        if rng.random() < 0.1:
            arrivals.extend(sorted(s + rng.random() for _ in range(rng.randint(1, 3000))))
        elif rng.random() < 0.5:
            arrivals.extend(sorted(s + rng.random() for _ in range(rng.randint(0, 20))))
    return arrivals


@pytest.mark.parametrize(("seed", "tolerance"), [(1, 0.0), (2, 1.0), (3, 1.0)])
def test_bounded_error_on_bursty_traffic(seed: int, tolerance: float) -> None:
    arrivals = bursty_arrivals(900, seed)
    times = [INTERVAL * i for i in range(61)]
    latest = [bisect_right(arrivals, t) for t in times]  # offsets 0.., high watermark = count
    history = OffsetHistory(tolerance_seconds=tolerance)
    recorded(history, times, latest)
    now = times[-1]
    worst = 0.0
    for committed in range(latest[0], latest[-1], 37):
        got = history.lag_seconds("t", 0, committed, latest[-1], now=now)
        assert got is not None
        true_age = now - arrivals[committed]  # message `committed` is the oldest unconsumed one
        worst = max(worst, abs(got - true_age))
    # Bound: one collection interval (the message arrived between two collections) + tolerance.
    assert worst <= INTERVAL + tolerance
    assert worst > 0  # bursts really are between collections: the test can tell


def test_committed_older_than_the_history_is_extrapolated_from_the_average_rate() -> None:
    history = OffsetHistory()
    recorded(history, [1000.0, 1015.0, 1030.0], [100_000, 101_000, 103_000])
    # Average rate 3000 messages / 30 s = 100/s; offset 50,000 is 500 s before the oldest point.
    seconds = history.lag_seconds("t", 0, 50_000, 103_000, now=1030.0)
    assert seconds == pytest.approx(1030.0 - (1000.0 - 500.0))


def test_committed_between_the_last_sample_and_now_uses_the_current_latest_offset() -> None:
    history = OffsetHistory()
    recorded(history, [0.0, 15.0], [0, 1500])
    # Offsets read at 25 s without recording them: the current reading is the curve's last point.
    assert history.lag_seconds("t", 0, 2000, 2500, now=25.0) == pytest.approx(5.0)
    assert history.lag_seconds("t", 0, 1500, 2500, now=25.0) == pytest.approx(10.0)
    assert estimate_lag_seconds([0.0, 15.0], [0, 1500], 2000, 2500, 25.0) == pytest.approx(5.0)


def test_no_lag_is_zero_seconds_even_without_history() -> None:
    history = OffsetHistory()
    assert history.lag_seconds("t", 0, 500, 500, now=1.0) == 0.0
    assert history.lag_seconds("t", 0, 700, 500, now=1.0) == 0.0  # committed beyond latest
    assert history.lag_seconds("never-seen", 3, 1, 500, now=1.0) is None


def test_first_collection_cannot_estimate() -> None:
    history = OffsetHistory()
    history.record(100.0, {("t", 0): 500})
    assert history.lag_seconds("t", 0, 400, 500, now=100.0) is None
    history.record(115.0, {("t", 0): 650})
    assert history.lag_seconds("t", 0, 400, 650, now=115.0) == pytest.approx(25.0)


def test_no_traffic_gives_the_history_age_as_a_lower_bound() -> None:
    history = OffsetHistory()
    recorded(history, [0.0, 15.0, 30.0, 45.0, 60.0], [500] * 5)
    assert history.samples("t", 0) == [(0.0, 500), (60.0, 500)]
    assert history.lag_seconds("t", 0, 400, 500, now=60.0) == pytest.approx(60.0)


def test_traffic_after_an_idle_period_starts_at_its_end() -> None:
    history = OffsetHistory()
    recorded(history, [0.0, 15.0, 30.0, 45.0], [500, 500, 500, 800])
    # Offset 500 was the latest until 30 s, then 300 messages in 15 s: message 500 came at 30 s.
    assert history.lag_seconds("t", 0, 500, 800, now=45.0) == pytest.approx(15.0)
    assert history.lag_seconds("t", 0, 650, 800, now=45.0) == pytest.approx(7.5)


def test_offsets_reset_restarts_the_history() -> None:
    history = OffsetHistory()
    recorded(history, [0.0, 15.0, 30.0], [1000, 2000, 50])  # topic deleted and recreated
    assert history.samples("t", 0) == [(30.0, 50)]
    assert history.lag_seconds("t", 0, 10, 50, now=30.0) is None
    history.record(45.0, {("t", 0): 200})
    # 150 messages in 15 s = 10/s; offset 10 is 4 s before the first point.
    assert history.lag_seconds("t", 0, 10, 200, now=45.0) == pytest.approx(45.0 - 26.0)


def test_history_is_bounded_per_partition() -> None:
    history = OffsetHistory(max_samples=8, tolerance_seconds=0.0)
    rng = random.Random(5)
    x = 0
    for i in range(100):
        x += rng.choice([0, 1, 50, 3000])
        history.record(15.0 * i, {("t", 0): x, ("u", 0): x})
        assert len(history.samples("t", 0)) <= 8
    assert history.samples("t", 0)[-1] == (15.0 * 99, x)


def test_topics_appearing_and_disappearing() -> None:
    history = OffsetHistory()
    history.record(0.0, {("a", 0): 10, ("a", 1): 20})
    history.record(15.0, {("a", 0): 40, ("b", 0): 5})
    assert len(history) == 2
    assert history.samples("a", 1) == []
    history.record(30.0, {("a", 0): 70, ("a", 1): 30}, prune=False)  # partial collection
    assert len(history) == 3
    assert history.samples("b", 0) == [(15.0, 5)]
    assert history.samples("a", 1) == [(30.0, 30)]


def test_sample_not_newer_than_the_last_is_ignored() -> None:
    history = OffsetHistory()
    recorded(history, [0.0, 15.0, 15.0, 10.0], [0, 100, 200, 300])
    assert history.samples("t", 0) == [(0.0, 0), (15.0, 100)]


def test_invalid_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="max_samples"):
        OffsetHistory(max_samples=2)
    with pytest.raises(ValueError, match="tolerance_seconds"):
        OffsetHistory(tolerance_seconds=-1)


def test_max_over_partitions_per_group_and_topic() -> None:
    values = {
        ("billing", "measure", 0): 1.5,
        ("billing", "measure", 1): 7.0,
        ("billing", "events", 0): 0.0,
        ("etl", "measure", 0): 3.0,
    }
    assert max_lag_seconds_by_group_topic(values) == {
        ("billing", "measure"): 7.0,
        ("billing", "events"): 0.0,
        ("etl", "measure"): 3.0,
    }
