"""The arithmetic of `exporters_side_by_side.py`, kept apart from its processes and clusters so
that it is tested alone: CPU over a window, fresh views counted and priced, gaps, spreads, ratios.

Times are seconds (Unix time for the window and the views); CPU is utime+stime seconds.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

SCRAPE_INTERVAL = 15.0  # Prometheus's, and the unit of "per 15 s of wall time"


@dataclass(frozen=True)
class Spread:
    least: float
    median: float
    most: float


def spread(values: Sequence[float]) -> Spread:
    """min / median / max of the repetitions (NaN when there are none)."""
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return Spread(math.nan, math.nan, math.nan)
    return Spread(min(finite), statistics.median(finite), max(finite))


def stat_cpu_seconds(stat: str, ticks_per_second: int) -> float:
    """utime + stime of a /proc/PID/stat line: every thread of the process, C threads included.
    The command name may hold spaces and parentheses: fields count from the last `)`."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_second


def cpu_per_wall(cpu: float, window: float, per: float = SCRAPE_INTERVAL) -> float:
    """CPU seconds spent per `per` seconds of wall time over a window of `window` seconds."""
    if window <= 0:
        raise ValueError("the window must last")
    return cpu / window * per


def collections_seen(starts: Sequence[float], interval: float, duration: float) -> int:
    """Vigía's collections between the first and the last start its scrapes showed (each start is
    a scrape's last-collection timestamp minus the collection's total duration), the first not
    counted. Scraping every 15 s a loop that starts a collection every `interval` (or, when a
    collection takes longer, as soon as it ends) can see two collections as one: the number
    between two seen starts is the gap divided by the loop's period, `max(interval, duration)`."""
    period = max(interval, duration)
    distinct = sorted(set(starts))
    return sum(max(1, round((b - a) / period)) for a, b in itertools.pairwise(distinct))


def produced(ends: Sequence[float], period: float) -> list[float]:
    """When Vigía's collections ended, from the ends its scrapes showed: a collection that no
    scrape saw (two seen ends more than 1.5 periods apart) ended in between, at the loop's
    pace. A fresh value is produced when a collection ends, whether or not a scrape comes
    before the next one."""
    distinct = sorted(set(ends))
    times = distinct[:1]
    for a, b in itertools.pairwise(distinct):
        missed = max(1, round((b - a) / period))
        times.extend(a + (b - a) * k / missed for k in range(1, missed + 1))
    return times


def view_period(view_times: Sequence[float], views: int | None = None) -> float:
    """Mean seconds between fresh views: from the first to the last view time, over the views
    between them (`views`, when some were not seen one by one; else one per interval)."""
    distinct = sorted(set(view_times))
    if len(distinct) < 2:
        return math.nan
    count = views if views is not None else len(distinct) - 1
    return (distinct[-1] - distinct[0]) / count


def cpu_per_view(cpu: float, window: float, period: float) -> float:
    """CPU per fresh view: the window's CPU rate times the mean time between views. A rate, not
    CPU ÷ views counted inside the window, because a view that straddles the window's edge (a
    34-s scrape in a 150-s window) would otherwise count whole or not at all."""
    if math.isnan(period):
        return math.nan
    return cpu / window * period


def gaps(
    view_times: Sequence[float], start: float, end: float, step: float = SCRAPE_INTERVAL
) -> int:
    """Whole `step`-s intervals of [start, end), counted from `start`, in which no fresh view
    arrived."""
    intervals = int((end - start) // step)
    filled = {int((t - start) // step) for t in view_times if start <= t < start + intervals * step}
    return intervals - len(filled)


def intervals_in(start: float, end: float, step: float = SCRAPE_INTERVAL) -> int:
    return int((end - start) // step)


def worst_ratio(vigia: Sequence[float], anchor: Sequence[float]) -> float:
    """Vigía ÷ kafka_exporter per repetition (same window), the worst (highest) of them."""
    ratios = [v / a for v, a in zip(vigia, anchor, strict=True) if a > 0 and not math.isnan(v / a)]
    return max(ratios) if ratios else math.nan
