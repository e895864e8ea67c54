"""Completeness by deadline: which days are due, and the counters across a deadline and a
restart (a simulated clock; the state in a dict standing for the checkpoint)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from vigia.ingest.deadline import (
    MAX_CATCH_UP_DAYS,
    DeadlineRule,
    DeadlineState,
    due_days,
    first_judged_day,
)
from vigia.ingest.deadline_watch import STATE_FILE, DeadlineWatch, load_state

MONTEVIDEO = ZoneInfo("America/Montevideo")  # UTC-3
RULE = DeadlineRule(dt.time(6, 0), MONTEVIDEO)
D1, D2, D3 = dt.date(2026, 11, 20), dt.date(2026, 11, 21), dt.date(2026, 11, 22)


def at(day: dt.date, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour, minute), tzinfo=MONTEVIDEO)


def test_a_day_is_due_at_its_deadline_in_the_utilitys_zone() -> None:
    assert RULE.deadline(D1) == dt.datetime(2026, 11, 21, 9, 0, tzinfo=dt.UTC)
    assert due_days(RULE, at(D2, 5, 59), DeadlineState(), D1) == []
    assert due_days(RULE, at(D2, 6, 0), DeadlineState(), D1) == [D1]
    assert due_days(RULE, at(D3, 7), DeadlineState(), D1) == [D1, D2]
    assert due_days(RULE, at(D3, 7), DeadlineState(D1, 1, 1), D1) == [D2]


def test_nothing_before_the_first_day_run_through_nor_beyond_the_slo_window() -> None:
    started = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC).timestamp()
    assert first_judged_day(started) == D2
    assert first_judged_day(dt.datetime(2026, 11, 20, tzinfo=dt.UTC).timestamp()) == D1
    much_later = at(D1 + dt.timedelta(days=100), 7)
    due = due_days(RULE, much_later, DeadlineState(), D1)
    assert len(due) == MAX_CATCH_UP_DAYS


def test_state_round_trips_and_stored_is_capped_at_expected() -> None:
    state = DeadlineState().counted(D1, 100, 120).counted(D2, 100, 90)
    assert state == DeadlineState(D2, 200, 190)
    assert DeadlineState.from_json(state.to_json()) == state
    for broken in ("", "{}", '{"counted_through": null, "expected_total": 1, "stored_total": 2}'):
        with pytest.raises(ValueError):
            DeadlineState.from_json(broken)


class Checkpoint:
    """The checkpoint's text files."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def write_text(self, path: str, text: str) -> None:
        self.files[path] = text


class World:
    """The job's side of the watch: a clock, the HES's rows, what is stored by each deadline."""

    def __init__(self) -> None:
        self.now = at(D2, 5, 0)
        self.expected: dict[dt.date, int] = {D1: 384, D2: 384, D3: 384}
        self.stored: dict[dt.date, int] = {D1: 380, D2: 384, D3: 384}
        self.hes_up = True
        self.checkpoint = Checkpoint()
        self.published: list[tuple[DeadlineState, int]] = []

    def watch(self) -> DeadlineWatch:
        """A (re)started job's watch: its state read back from the checkpoint."""

        def expected(day: dt.date) -> int | None:
            if not self.hes_up:
                raise ConnectionError("HES unreachable")
            return self.expected[day]

        def save(state: DeadlineState) -> None:
            self.checkpoint.write_text(f"ckpt/{STATE_FILE}", state.to_json())

        return DeadlineWatch(
            RULE,
            D1,
            load_state(self.checkpoint, "ckpt"),
            expected,
            lambda day, deadline: self.stored[day],
            save,
            lambda state, overdue: self.published.append((state, overdue)),
            clock=lambda: self.now.timestamp(),
        )

    @property
    def last(self) -> tuple[DeadlineState, int]:
        return self.published[-1]


def test_the_counters_move_once_per_day_across_a_deadline_and_a_restart() -> None:
    world = World()
    watch = world.watch()
    watch.tick()
    assert world.last == (DeadlineState(), 0)  # served at 0 before the first deadline
    world.now = at(D2, 6, 0)
    watch.tick()
    assert world.last == (DeadlineState(D1, 384, 380), 0)
    watch.tick()
    assert world.last == (DeadlineState(D1, 384, 380), 0)  # counted once

    # The job stops before D2's deadline and starts again after D3's: both days are counted on
    # start, D1 is not counted again, and the counters go on from their totals.
    world.now = at(D1 + dt.timedelta(days=3), 8, 0)
    restarted = world.watch()
    restarted.tick()
    assert world.last == (DeadlineState(D3, 3 * 384, 380 + 2 * 384), 0)
    world.watch().tick()
    assert world.last == (DeadlineState(D3, 3 * 384, 380 + 2 * 384), 0)


def test_a_day_whose_expected_measures_cannot_be_read_waits_and_shows_as_overdue() -> None:
    world = World()
    world.hes_up = False
    world.now = at(D3, 7, 0)
    watch = world.watch()
    watch.tick()
    assert world.last == (DeadlineState(), 2)
    world.hes_up = True
    watch.tick()
    assert world.last == (DeadlineState(D2, 2 * 384, 380 + 384), 0)


def test_an_unreadable_state_starts_over() -> None:
    checkpoint = Checkpoint()
    checkpoint.write_text(f"ckpt/{STATE_FILE}", "not json")
    assert load_state(checkpoint, "ckpt") == DeadlineState()
