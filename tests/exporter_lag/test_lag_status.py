"""Burrow-style lag status: every rule, their order, group roll-up and the window store."""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import pairwise

import pytest

from vigia.exporter.model.lag_status import (
    GroupStatus,
    LagStatusTracker,
    Observation,
    PartitionStatus,
    evaluate_partition,
    group_status,
)

INTERVAL = 15.0


def window(
    committed: Sequence[int],
    latest: Sequence[int],
    *,
    assigned: bool = False,
    start: float = 1000.0,
) -> list[Observation]:
    assert len(committed) == len(latest)
    return [
        Observation(start + i * INTERVAL, c, x, assigned)
        for i, (c, x) in enumerate(zip(committed, latest, strict=True))
    ]


def status(committed: Sequence[int], latest: Sequence[int], **kwargs: bool) -> PartitionStatus:
    evaluation = evaluate_partition(window(committed, latest, **kwargs), window_size=len(committed))
    assert evaluation.complete == 1.0
    return evaluation.status


STEADY_TRAFFIC = [100 * i + 1000 for i in range(10)]


def test_caught_up_now_is_ok_whatever_came_before() -> None:
    # Rewound and stuck for nine collections, then caught up: rule 1 wins.
    committed = [900, 500, 500, 500, 500, 500, 500, 500, 500, 1900]
    assert status(committed, STEADY_TRAFFIC) is PartitionStatus.OK


def test_idle_topic_without_traffic_or_lag_stays_ok() -> None:
    assert status([500] * 10, [500] * 10) is PartitionStatus.OK


def test_idle_topic_committed_beyond_latest_is_ok() -> None:
    # A committed offset above the high watermark (topic recreated) clamps the lag at 0.
    assert status([800] * 10, [500] * 10) is PartitionStatus.OK


def test_stopped_consumer_while_producer_continues_is_stop() -> None:
    assert status([950] * 10, STEADY_TRAFFIC) is PartitionStatus.STOP


def test_stuck_consumer_with_a_live_member_is_stall() -> None:
    assert status([950] * 10, STEADY_TRAFFIC, assigned=True) is PartitionStatus.STALL


def test_stuck_idle_partition_with_lag_is_stop_or_stall() -> None:
    # No traffic but 100 messages nobody reads: Burrow calls this stopped/stalled too.
    assert status([400] * 10, [500] * 10) is PartitionStatus.STOP
    assert status([400] * 10, [500] * 10, assigned=True) is PartitionStatus.STALL


def test_stopped_but_caught_up_inside_the_window_is_ok() -> None:
    # The consumer reached the end, then the producer resumed: not STOP until the zero-lag
    # observation leaves the window (Burrow's "recent lag zero").
    latest = [950, 950, 950, 950, 1000, 1100, 1200, 1300, 1400, 1500]
    assert status([950] * 10, latest) is PartitionStatus.OK
    later = evaluate_partition(window([950] * 10, latest)[4:] + window([950] * 4, [1600] * 4))
    assert later.status is PartitionStatus.STOP


def test_committed_moving_once_in_the_window_is_not_stop() -> None:
    committed = [940] + [950] * 9
    assert status(committed, STEADY_TRAFFIC) is PartitionStatus.WARN


def test_rewind_is_reported() -> None:
    committed = [950, 1040, 1130, 1220, 600, 650, 700, 750, 800, 850]
    assert status(committed, STEADY_TRAFFIC) is PartitionStatus.REWIND


def test_rewind_after_a_zero_lag_period_is_rewind() -> None:
    # Caught up for five collections, then reset to an old offset: REWIND comes before "lag was 0".
    latest = [1000] * 10
    committed = [1000, 1000, 1000, 1000, 1000, 200, 250, 300, 350, 400]
    assert status(committed, latest) is PartitionStatus.REWIND


def test_rewind_that_has_recovered_is_judged_by_the_other_rules() -> None:
    latest = [2000] * 10
    committed = [1000, 1000, 400, 900, 1200, 1400, 1500, 1600, 1700, 1800]
    # Back above the pre-rewind peak (1000): not REWIND; the lag decreased, so OK.
    assert status(committed, latest) is PartitionStatus.OK


def test_rewind_wins_over_warn() -> None:
    committed = [1000, 1010, 1020, 500, 510, 520, 530, 540, 550, 560]
    latest = [2000 + 100 * i for i in range(10)]
    assert status(committed, latest) is PartitionStatus.REWIND


def test_lag_zero_somewhere_in_the_window_is_ok() -> None:
    # Lag grows at every step after a zero: WARN would apply, but rule 4 comes first.
    committed = [1000, 1010, 1020, 1030, 1040, 1050, 1060, 1070, 1080, 1090]
    latest = [1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900]
    assert status(committed, latest) is PartitionStatus.OK


def test_slow_consumer_whose_lag_grows_is_warn() -> None:
    committed = [950 + 80 * i for i in range(10)]  # reads 80 per interval, 100 arrive
    assert status(committed, STEADY_TRAFFIC) is PartitionStatus.WARN


def test_constant_nonzero_lag_is_warn_like_burrow() -> None:
    # Lag never decreased (it stayed equal): Burrow's rule 5 counts that as not decreasing.
    committed = [x - 50 for x in STEADY_TRAFFIC]
    assert status(committed, STEADY_TRAFFIC) is PartitionStatus.WARN


def test_lag_that_decreases_once_is_ok() -> None:
    committed = [950, 1030, 1110, 1190, 1300, 1380, 1460, 1540, 1620, 1700]
    assert status(committed, STEADY_TRAFFIC) is PartitionStatus.OK


def test_allowed_lag_counts_as_caught_up() -> None:
    committed = [x - 5 for x in STEADY_TRAFFIC]
    w = window(committed, STEADY_TRAFFIC)
    assert evaluate_partition(w).status is PartitionStatus.WARN
    assert evaluate_partition(w, allowed_lag=5).status is PartitionStatus.OK


def test_incomplete_window_is_ok_with_its_completeness() -> None:
    evaluation = evaluate_partition(window([950] * 4, STEADY_TRAFFIC[:4]), window_size=10)
    assert evaluation.status is PartitionStatus.OK
    assert evaluation.complete == pytest.approx(0.4)
    assert not evaluation.window_complete
    assert evaluation.lag == 1300 - 950
    empty = evaluate_partition([], window_size=10)
    assert (empty.status, empty.complete, empty.lag) == (PartitionStatus.OK, 0.0, 0)


def test_only_the_newest_window_size_observations_count() -> None:
    # A rewind 11 collections ago (not recovered: 800 < 1000) is out of a 10-observation window.
    committed = [1000, 300, *(350 + 50 * i for i in range(10))]
    latest = [2000 + 10 * i for i in range(12)]
    w = window(committed, latest)
    assert evaluate_partition(w, window_size=12).status is PartitionStatus.REWIND
    assert evaluate_partition(w, window_size=10).status is PartitionStatus.OK


def test_window_size_must_allow_a_comparison() -> None:
    with pytest.raises(ValueError, match="window_size"):
        evaluate_partition(window([1], [2]), window_size=1)
    with pytest.raises(ValueError, match="window_size"):
        LagStatusTracker(window_size=1)
    with pytest.raises(ValueError, match="allowed_lag"):
        LagStatusTracker(allowed_lag=-1)


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], GroupStatus.OK),
        ([PartitionStatus.OK, PartitionStatus.OK], GroupStatus.OK),
        ([PartitionStatus.OK, PartitionStatus.WARN], GroupStatus.WARN),
        ([PartitionStatus.WARN, PartitionStatus.STALL, PartitionStatus.OK], GroupStatus.ERR),
        ([PartitionStatus.STOP], GroupStatus.ERR),
        ([PartitionStatus.REWIND, PartitionStatus.WARN], GroupStatus.ERR),
    ],
)
def test_group_status_is_the_worst_partition(
    statuses: list[PartitionStatus], expected: GroupStatus
) -> None:
    assert group_status(statuses) is expected


def test_numeric_codes_match_the_metric_contract() -> None:
    assert [s.value for s in PartitionStatus] == [1, 2, 3, 4, 5]
    assert [s.name for s in PartitionStatus] == ["OK", "WARN", "STOP", "STALL", "REWIND"]
    assert [(s.name, s.value) for s in GroupStatus] == [("OK", 1), ("WARN", 2), ("ERR", 3)]


def feed(tracker: LagStatusTracker, collections: int, start: int = 0) -> None:
    """billing reads everything on measure-0; etl stopped on measure-1 while traffic continues."""
    for i in range(start, start + collections):
        t = 1000.0 + INTERVAL * i
        tracker.observe(
            {
                ("billing", "measure", 0): Observation(t, 100 * i, 100 * i, True),
                ("etl", "measure", 0): Observation(t, 100 * i - 30, 100 * i, True),
                ("etl", "measure", 1): Observation(t, 50, 150 + 100 * i, False),
            }
        )


def test_tracker_reports_partitions_and_groups() -> None:
    tracker = LagStatusTracker(window_size=10)
    feed(tracker, 9)
    report = tracker.evaluate()
    assert report.partitions[("etl", "measure", 1)].status is PartitionStatus.OK  # 9 of 10
    assert report.partitions[("etl", "measure", 1)].complete == pytest.approx(0.9)
    assert report.groups["etl"].status is GroupStatus.OK
    assert report.groups["etl"].complete == 0.0

    feed(tracker, 1, start=9)
    report = tracker.evaluate()
    assert report.partitions[("billing", "measure", 0)].status is PartitionStatus.OK
    assert report.partitions[("etl", "measure", 0)].status is PartitionStatus.WARN
    assert report.partitions[("etl", "measure", 1)].status is PartitionStatus.STOP
    assert report.partitions[("etl", "measure", 1)].lag == 1000
    assert report.groups["billing"].status is GroupStatus.OK
    assert report.groups["etl"].status is GroupStatus.ERR
    assert report.groups["etl"].complete == 1.0
    assert report.groups["etl"].partitions == 2


def test_tracker_window_is_bounded() -> None:
    tracker = LagStatusTracker(window_size=10)
    feed(tracker, 25)
    w = tracker.window(("etl", "measure", 1))
    assert len(w) == 10
    assert w[0].time == 1000.0 + 15 * INTERVAL


def test_tracker_forgets_vanished_keys_and_restarts_them() -> None:
    tracker = LagStatusTracker(window_size=3)
    feed(tracker, 5)
    assert len(tracker) == 3
    # etl deleted: the next collection only sees billing.
    tracker.observe({("billing", "measure", 0): Observation(2000.0, 500, 500, True)})
    assert len(tracker) == 1
    assert set(tracker.evaluate().groups) == {"billing"}
    # etl comes back (recreated group): a fresh, incomplete window.
    tracker.observe({("etl", "measure", 1): Observation(2015.0, 0, 10)}, prune=False)
    assert len(tracker) == 2
    assert tracker.evaluate().partitions[("etl", "measure", 1)].complete == pytest.approx(1 / 3)


def test_tracker_without_prune_keeps_windows_of_failed_groups() -> None:
    tracker = LagStatusTracker(window_size=3)
    feed(tracker, 3)
    tracker.observe({("billing", "measure", 0): Observation(5000.0, 1, 1)}, prune=False)
    assert len(tracker.window(("etl", "measure", 1))) == 3


def test_tracker_replaces_an_observation_that_is_not_newer() -> None:
    tracker = LagStatusTracker(window_size=3)
    key = ("g", "t", 0)
    tracker.observe({key: Observation(10.0, 1, 5)})
    tracker.observe({key: Observation(10.0, 2, 6)})
    assert tracker.window(key) == (Observation(10.0, 2, 6),)


@pytest.mark.parametrize("seed", range(40))
def test_the_trackers_rows_evaluate_as_the_windows_they_hold(seed: int) -> None:
    """The tracker's evaluation of each row equals evaluating the window it returns for that key
    afresh, over random runs of offsets that stay, move, rewind, repeat a collection's time, change
    owner and leave keys out (rows appended, replaced, shifted and pruned)."""
    rng = random.Random(seed)
    size = rng.choice((2, 3, 5, 10))
    tracker = LagStatusTracker(window_size=size, allowed_lag=rng.choice((0, 0, 3)))
    keys = [("g", "t", p) for p in range(4)]
    offsets = {key: (rng.randrange(20), rng.randrange(20, 40)) for key in keys}
    owned = dict.fromkeys(keys, False)
    t = 0.0
    for _ in range(60):
        t += rng.choice((15.0, 15.0, 15.0, 0.0))  # 0: the same collection fed again
        for key in keys:
            committed, latest = offsets[key]
            move = rng.random()
            if move < 0.15:
                committed = max(0, committed - rng.randrange(1, 5))
            elif move < 0.35:
                committed += rng.randrange(0, 3)
            if rng.random() < 0.2:
                latest += rng.randrange(0, 3)
            if rng.random() < 0.05:
                owned[key] = not owned[key]
            offsets[key] = (committed, latest)
        observed = rng.sample(keys, rng.randrange(1, len(keys) + 1))
        tracker.observe(
            {k: Observation(t, *offsets[k], owned[k]) for k in observed},
            prune=rng.random() < 0.9,
        )
        report = tracker.evaluate(keys)
        for key, evaluation in report.partitions.items():
            fresh = evaluate_partition(
                tracker.window(key), window_size=size, allowed_lag=tracker.allowed_lag
            )
            assert evaluation == fresh, (key, tracker.window(key))


@pytest.mark.parametrize("seed", range(20))
def test_observe_at_keeps_the_same_windows_as_observations(seed: int) -> None:
    """The exporter's path (`observe_at`: one time, offsets per key) and `observe` (an
    `Observation` per key) hold the same windows and evaluate to the same partitions and groups,
    over random runs that move, rewind, repeat a collection's time and drop keys."""
    rng = random.Random(seed)
    size = rng.choice((2, 3, 10))
    by_observation = LagStatusTracker(window_size=size)
    by_offsets = LagStatusTracker(window_size=size)
    keys = [(g, "t", p) for g in ("a", "b", "c") for p in range(3)]
    t = 0.0
    for _ in range(30):
        t += rng.choice((15.0, 15.0, 0.0))
        observed = rng.sample(keys, rng.randrange(1, len(keys) + 1))
        offsets = {
            k: (rng.randrange(0, 50), rng.randrange(20, 60), rng.random() < 0.3) for k in observed
        }
        prune = rng.random() < 0.8
        by_observation.observe(
            {k: Observation(t, c, x, a) for k, (c, x, a) in offsets.items()}, prune=prune
        )
        by_offsets.observe_at(t, offsets, prune=prune)
        assert len(by_offsets) == len(by_observation)
        for key in keys:
            assert by_offsets.window(key) == by_observation.window(key)
        assert by_offsets.evaluate(observed) == by_observation.evaluate(observed)


@pytest.mark.parametrize("seed", range(20))
def test_tracker_groups_roll_up_their_partitions(seed: int) -> None:
    """Each group's evaluation is `group_status` of its partitions, the share of them with a
    complete window, and their number."""
    rng = random.Random(seed)
    tracker = LagStatusTracker(window_size=3)
    keys = [(g, "t", p) for g in ("a", "b", "c", "d") for p in range(rng.randrange(1, 4))]
    for i in range(rng.randrange(1, 6)):
        observed = rng.sample(keys, rng.randrange(1, len(keys) + 1))
        tracker.observe_at(
            15.0 * i,
            {k: (rng.randrange(0, 5), rng.randrange(3, 9), rng.random() < 0.5) for k in observed},
            prune=False,
        )
    report = tracker.evaluate()
    groups = {key[0] for key in report.partitions}
    assert set(report.groups) == groups
    for group in groups:
        mine = [e for key, e in report.partitions.items() if key[0] == group]
        rolled = report.groups[group]
        assert rolled.status is group_status(e.status for e in mine)
        assert rolled.complete == sum(e.window_complete for e in mine) / len(mine)
        assert rolled.partitions == len(mine)


def rules_one_by_one(
    committed: list[int], latest: list[int], assigned: bool, allowed: int
) -> PartitionStatus:
    """The module docstring's rules read literally, one complete window at a time: the oracle the
    tracker's evaluation of every window at once is held to."""
    lags = [max(0, x - c) for c, x in zip(committed, latest, strict=True)]
    never_moved = len(set(committed)) == 1
    caught_up_once = any(lag <= allowed for lag in lags)
    if lags[-1] <= allowed:
        return PartitionStatus.OK
    if never_moved and not assigned and not caught_up_once:
        return PartitionStatus.STOP
    went_back = any(b < a for a, b in pairwise(committed))
    if went_back and committed[-1] < max(committed):
        return PartitionStatus.REWIND
    if caught_up_once:
        return PartitionStatus.OK
    if never_moved:
        return PartitionStatus.STALL
    if all(b >= a for a, b in pairwise(lags)):
        return PartitionStatus.WARN
    return PartitionStatus.OK


@pytest.mark.parametrize("seed", range(10))
def test_every_window_at_once_follows_the_rules_one_by_one(seed: int) -> None:
    """500 windows of random shapes (still, moving, rewinding, caught up, latest below committed)
    evaluated in one call give, each, the status of the rules applied to it alone."""
    rng = random.Random(seed)
    size, allowed = rng.choice((2, 3, 10)), rng.choice((0, 0, 5))
    tracker = LagStatusTracker(window_size=size, allowed_lag=allowed)
    windows: dict[tuple[str, str, int], tuple[list[int], list[int], bool]] = {}
    for p in range(500):
        committed = [rng.randrange(100)]
        latest = [committed[0] + rng.randrange(-3, 30)]
        steps = (0,) if rng.random() < 0.3 else (0, 0, 1, 5, -4)
        for _ in range(size - 1):
            committed.append(max(0, committed[-1] + rng.choice(steps)))
            latest.append(latest[-1] + rng.choice((0, 0, 2, 7)))
        windows[("g", "t", p)] = (committed, latest, rng.random() < 0.5)
    for i in range(size):
        tracker.observe_at(100.0 + 15 * i, {k: (c[i], x[i], a) for k, (c, x, a) in windows.items()})
    report = tracker.evaluate()
    for key, (committed, latest, assigned) in windows.items():
        expected = rules_one_by_one(committed, latest, assigned, allowed)
        assert report.partitions[key].status is expected, (committed, latest, assigned)
    statuses = {report.partitions[key].status for key in windows}
    assert len(statuses) >= 5, statuses  # the shapes reached most rules
