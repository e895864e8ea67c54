"""The arithmetic of `exporter_group_churn.py`, kept apart from its processes and cluster so that
it is tested alone: the consumer groups an exposition names, and whether memory grows over a run.

Times are minutes since the churn began; memory is MB (RSS).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# A sample's label pairs, read pair by pair: a value may hold `"`, `\\`, `,`, `{` or `}`, escaped
# as the exposition format says.
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def _group(line: str) -> str | None:
    """The `consumergroup` label value of one sample line (both exporters name it so), if any."""
    if not line or line.startswith("#"):
        return None
    at = line.find("{")
    if at < 0:
        return None
    pos = at + 1
    while (pair := _PAIR.match(line, pos)) is not None:
        if pair[1] == "consumergroup":
            return pair[2]
        pos = pair.end()
    return None


def group_labels(exposition: str) -> set[str]:
    """The distinct `consumergroup` label values of an exposition's samples."""
    return {g for line in exposition.splitlines() if (g := _group(line)) is not None}


def group_series(exposition: str) -> int:
    """Samples that carry a `consumergroup` label."""
    return sum(1 for line in exposition.splitlines() if _group(line) is not None)


def slope_per_hour(samples: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (minute, MB) samples, in MB per hour (NaN under two minutes)."""
    if len({t for t, _ in samples}) < 2:
        return math.nan
    mean_t = sum(t for t, _ in samples) / len(samples)
    mean_v = sum(v for _, v in samples) / len(samples)
    covariance = sum((t - mean_t) * (v - mean_v) for t, v in samples)
    variance = sum((t - mean_t) ** 2 for t, _ in samples)
    return covariance / variance * 60


@dataclass(frozen=True)
class Growth:
    after_warm_up: float  # MB at the first sample at or after the warm-up
    tail_max: float  # the highest MB over the last `tail` minutes
    slope_mb_per_hour: float  # over the samples from the warm-up on
    samples: int  # from the warm-up on


def growth(samples: Sequence[tuple[float, float]], warm_up: float, tail: float) -> Growth:
    """RSS after the warm-up against the last minutes' highest, and the trend between them."""
    settled = sorted(s for s in samples if s[0] >= warm_up)
    if not settled:
        return Growth(math.nan, math.nan, math.nan, 0)
    end = settled[-1][0]
    return Growth(
        settled[0][1],
        max(v for t, v in settled if t >= end - tail),
        slope_per_hour(settled),
        len(settled),
    )


def warm_up_and_tail(minutes: float, warm_up: float, tail: float) -> tuple[float, float]:
    """The warm-up and the tail, each at most a third of a short run (a smoke run of 3 minutes
    still has settled samples to fit)."""
    return min(warm_up, minutes / 3), min(tail, minutes / 3)
