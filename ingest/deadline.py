"""Completeness by deadline, the daily SLI: which days are due, and the running totals. Pure.

A measure date D is due once its deadline passes: ``at`` (06:00 by default) on D + 1 in the
utility's time zone. A due day adds, once, its expected measures and the measures stored by the
deadline to two counters (`vigia_ingest_deadline_measures_{expected,stored}_total`), so an SLO
reads ``stored ÷ expected`` over any window from their increases.

Exactly once across restarts: the totals and the last day counted live in a small JSON file in
the job's checkpoint (`DeadlineState`, written before the counters move). A restart resumes the
counters from the file (they never go back, so Prometheus sees no reset) and counts every day that
fell due while the job was down, oldest first; a day already in the file is never counted again.
The first day ever judged is the first the job ran through from its first second
(`ingest.metrics.judged_days`' rule), and nothing older than `MAX_CATCH_UP_DAYS` is counted: a
day beyond the SLO's window would only move counters that no window reads any more.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Final
from zoneinfo import ZoneInfo

MAX_CATCH_UP_DAYS: Final = 28
UTC: Final = ZoneInfo("UTC")


@dataclass(frozen=True)
class DeadlineRule:
    """A day's measures are due by ``at`` on the next day in ``zone``."""

    at: dt.time = dt.time(6, 0)
    zone: ZoneInfo = UTC

    def deadline(self, day: dt.date) -> dt.datetime:
        return dt.datetime.combine(day + dt.timedelta(days=1), self.at, tzinfo=self.zone)


def first_judged_day(running_since: float) -> dt.date:
    """The first day the job ran through whole (a day started at midnight UTC counts)."""
    start = dt.datetime.fromtimestamp(running_since, dt.UTC)
    return start.date() if start.time() == dt.time(0) else start.date() + dt.timedelta(days=1)


@dataclass(frozen=True)
class DeadlineState:
    """What the counters have counted: their totals and the last day in them."""

    counted_through: dt.date | None = None
    expected_total: int = 0
    stored_total: int = 0

    def to_json(self) -> str:
        through = self.counted_through.isoformat() if self.counted_through else None
        return (
            json.dumps(
                {
                    "counted_through": through,
                    "expected_total": self.expected_total,
                    "stored_total": self.stored_total,
                }
            )
            + "\n"
        )

    @staticmethod
    def from_json(text: str) -> DeadlineState:
        """Raises ValueError on anything but `to_json`'s output."""
        try:
            data = json.loads(text)
            through = data["counted_through"]
            state = DeadlineState(
                dt.date.fromisoformat(through) if through is not None else None,
                int(data["expected_total"]),
                int(data["stored_total"]),
            )
        except (TypeError, KeyError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a deadline state: {exc}") from exc
        if state.expected_total < 0 or not 0 <= state.stored_total <= state.expected_total:
            raise ValueError("not a deadline state: totals out of range")
        return state

    def counted(self, day: dt.date, expected: int, stored: int) -> DeadlineState:
        """The state once ``day`` is counted: stored measures beyond the expected ones (keys the
        HES no longer holds) do not make up for missing ones elsewhere."""
        return DeadlineState(
            day,
            self.expected_total + expected,
            self.stored_total + min(stored, expected),
        )


def due_days(
    rule: DeadlineRule, now: dt.datetime, state: DeadlineState, first: dt.date
) -> list[dt.date]:
    """Days not counted yet whose deadline has passed at ``now``, oldest first, from ``first``
    (`first_judged_day`) and within `MAX_CATCH_UP_DAYS` of ``now``."""
    start = max(first, now.date() - dt.timedelta(days=MAX_CATCH_UP_DAYS))
    if state.counted_through is not None:
        start = max(start, state.counted_through + dt.timedelta(days=1))
    days = []
    day = start
    while rule.deadline(day) <= now:
        days.append(day)
        day += dt.timedelta(days=1)
    return days
