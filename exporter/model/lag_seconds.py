"""Consumer lag in seconds from a bounded history of (collection time, latest offset) per partition.

Pure logic, no I/O. The age of a group's oldest unconsumed message is `now − T(C)`, where `C` is
the committed offset (the next offset the group will read) and `T(C)` is the last time `C` was the
partition's latest offset (high watermark), i.e. just before the message at offset `C` was appended.

Method
- `OffsetHistory.record` keeps per partition a piecewise-linear curve of the latest offset over
  time, one point per collection, simplified on the fly: a point is dropped when every point dropped
  since the previous kept point lies within `tolerance_seconds` (along the time axis, at its own
  offset) of the straight line between the kept neighbours. Constant-rate traffic and idle periods
  therefore cost a few points however long they last; bursty traffic keeps more.
- `T(C)` is interpolated linearly between the last point with offset ≤ C and the next one. When C is
  older than the oldest point, `T(C)` is extrapolated backwards from the oldest point using the
  average rate over the whole history (and is the oldest point's time when that rate is 0: a
  lower bound of the age). The newest end needs no extrapolation: the current (now, latest offset)
  is always known and serves as the last point, so a C between the last recorded point and `now`
  is interpolated towards it. Lag 0 messages ⇒ 0 s.

Error bounds (t_j ≤ true T(C) ≤ t_j+1 for the two collections bracketing offset C)
- Exact (up to float rounding) when the producer rate is constant between collections (any
  piecewise-linear history with breaks at collection times) and `tolerance_seconds` is 0; within
  `tolerance_seconds` of exact with simplification (collinear points are dropped without error).
- Otherwise |error| ≤ (t_j+1 − t_j) + tolerance_seconds: at most one collection interval (messages
  arrived somewhere between the two collections) plus the simplification tolerance.
- Extrapolated values (C older than the whole history) are only as good as the assumption that the
  rate before the history equals the history's average rate; no bound.

Memory bound: at most `max_samples` points per partition (default 256; 16 bytes each, so ≤ 4 KiB
plus ~200 bytes per partition, ≤ 45 MB for 10,000 partitions in the worst case). The oldest point is
dropped first. Partitions absent from a pruning `record` call are forgotten (deleted topics);
a latest offset that goes backwards (topic deleted and recreated, or truncated) restarts that
partition's history.

Use from the collection loop (one history for the life of the process)::

    history = OffsetHistory()
    # every collection, after ListOffsets:
    history.record(collected_at, {(topic, partition): latest_offset, ...}, prune=offsets_phase_ok)
    # for each group-partition with a committed offset:
    seconds = history.lag_seconds(topic, partition, committed, latest, now=collected_at)  # or None
    per_topic = max_lag_seconds_by_group_topic({(group, topic, partition): seconds, ...})
"""

from __future__ import annotations

import logging
import math
from array import array
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

DEFAULT_MAX_SAMPLES = 256
DEFAULT_TOLERANCE_SECONDS = 1.0

LAG_SECONDS_HELP = (
    "Age in seconds of the group's oldest unconsumed message: now minus the timestamp of the "
    "record at the committed offset where it was read (method record, see "
    "kafka_consumergroup_lag_seconds_partitions); otherwise now minus the time the committed "
    "offset was the partition's latest offset, interpolated between the exporter's recorded "
    "(time, latest offset) samples, or extrapolated from the recorded average rate when the "
    "committed offset is older than the recorded history. 0 when the lag is 0 messages. Error ≤ "
    "one collection interval (+1 s history simplification) when interpolated."
)
MAX_LAG_SECONDS_HELP = (
    "Maximum over the topic's partitions of kafka_consumergroup_lag_seconds (record timestamps "
    "where read, else interpolated from recorded offset history, extrapolated beyond it)."
)


@dataclass(slots=True)
class _Curve:
    """Simplified (time, offset) points of one partition, oldest first, and simplification state."""

    times: array[float] = field(default_factory=lambda: array("d"))
    offsets: array[int] = field(default_factory=lambda: array("q"))
    # Slopes (seconds per message) from the anchor (second-to-last point) that keep every point
    # dropped since the anchor within the tolerance.
    slope_low: float = -math.inf
    slope_high: float = math.inf

    def reset(self) -> None:
        del self.times[:]
        del self.offsets[:]
        self.slope_low, self.slope_high = -math.inf, math.inf

    def add(self, t: float, x: int, tolerance: float, max_points: int) -> None:
        if self.offsets and x < self.offsets[-1]:
            logger.debug(
                "latest offset went back from %d to %d: history restarted", self.offsets[-1], x
            )
            self.reset()
        if self.times and t <= self.times[-1]:
            logger.debug("sample at %.3f not newer than %.3f: ignored", t, self.times[-1])
            return
        if len(self.times) >= 2 and self._can_replace_last(t, x, tolerance):
            self.times[-1] = t
            self.offsets[-1] = x
            return
        self.times.append(t)
        self.offsets.append(x)
        self.slope_low, self.slope_high = -math.inf, math.inf
        if len(self.times) > max_points:
            del self.times[0]
            del self.offsets[0]

    def _can_replace_last(self, t: float, x: int, tolerance: float) -> bool:
        t_a, x_a = self.times[-2], self.offsets[-2]
        t_p, x_p = self.times[-1], self.offsets[-1]
        if x_a == x_p:
            # Inside a flat (idle) run only its last point matters: T(C) takes the last time C was
            # the latest offset. The run's first point stays as the end of the rising segment.
            return x == x_p
        # Rising segment anchor → pending point: drop the pending point when the line anchor → new
        # point passes within the tolerance of it and of every point dropped before it.
        low = max(self.slope_low, (t_p - tolerance - t_a) / (x_p - x_a))
        high = min(self.slope_high, (t_p + tolerance - t_a) / (x_p - x_a))
        slope = (t - t_a) / (x - x_a)
        if low <= slope <= high:
            self.slope_low, self.slope_high = low, high
            return True
        return False


def estimate_lag_seconds(
    times: Sequence[float], offsets: Sequence[int], committed: int, latest: int, now: float
) -> float | None:
    """Lag seconds of `committed` from recorded points (oldest first, offsets non-decreasing) and
    the current reading (`now`, `latest`), which is the curve's last point.

    None when there is lag but no recorded point before `now` to estimate from.
    """
    if committed >= latest:
        return 0.0
    # Recorded points at or after `now`, or above `latest`, give way to the current reading.
    n = len(times)
    while n and (times[n - 1] >= now or offsets[n - 1] > latest):
        n -= 1
    if n == 0:
        return None
    # T(C): the last time C was the latest offset, on the curve points[:n] + (now, latest).
    i = bisect_right(offsets, committed, 0, n) - 1
    if i >= 0:
        t0, x0 = times[i], offsets[i]
        t1, x1 = (times[i + 1], offsets[i + 1]) if i + 1 < n else (now, latest)
        produced = t0 + (committed - x0) * (t1 - t0) / (x1 - x0)
    else:
        # Older than the history: back from its oldest point at its average rate.
        span, messages = now - times[0], latest - offsets[0]
        produced = times[0]
        if span > 0 and messages > 0:
            produced -= (offsets[0] - committed) * span / messages
    return max(0.0, now - produced)


class OffsetHistory:
    """Bounded, simplified (time, latest offset) history per (topic, partition)."""

    def __init__(
        self,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
    ) -> None:
        if max_samples < 3:
            raise ValueError(f"max_samples must be at least 3, got {max_samples}")
        if tolerance_seconds < 0:
            raise ValueError(f"tolerance_seconds must be ≥ 0, got {tolerance_seconds}")
        self.max_samples = max_samples
        self.tolerance_seconds = tolerance_seconds
        self._curves: dict[tuple[str, int], _Curve] = {}

    def __len__(self) -> int:
        return len(self._curves)

    def record(
        self,
        collected_at: float,
        latest_offsets: Mapping[tuple[str, int], int],
        *,
        prune: bool = True,
    ) -> None:
        """Add one collection's latest offsets; with `prune`, forget partitions absent from it."""
        for key, offset in latest_offsets.items():
            curve = self._curves.get(key)
            if curve is None:
                curve = self._curves[key] = _Curve()
            curve.add(collected_at, offset, self.tolerance_seconds, self.max_samples)
        if prune:
            for key in self._curves.keys() - latest_offsets.keys():
                del self._curves[key]

    def samples(self, topic: str, partition: int) -> list[tuple[float, int]]:
        curve = self._curves.get((topic, partition))
        return [] if curve is None else list(zip(curve.times, curve.offsets, strict=True))

    def covers(self, topic: str, partition: int, offset: int) -> bool:
        """Whether an estimate for `offset` is interpolated, not extrapolated beyond the history."""
        curve = self._curves.get((topic, partition))
        return curve is not None and bool(curve.offsets) and curve.offsets[0] <= offset

    def lag_seconds(
        self, topic: str, partition: int, committed: int, latest: int, now: float
    ) -> float | None:
        """Age of the oldest unconsumed message; None without history before `now`."""
        if committed >= latest:
            return 0.0
        curve = self._curves.get((topic, partition))
        if curve is None:
            return None
        return estimate_lag_seconds(curve.times, curve.offsets, committed, latest, now)


def max_lag_seconds_by_group_topic(
    lag_seconds: Mapping[tuple[str, str, int], float],
) -> dict[tuple[str, str], float]:
    """Max over partitions of {(group, topic, partition): seconds} → {(group, topic): seconds}."""
    result: dict[tuple[str, str], float] = {}
    for (group, topic, _), seconds in lag_seconds.items():
        key = (group, topic)
        result[key] = max(result.get(key, seconds), seconds)
    return result
