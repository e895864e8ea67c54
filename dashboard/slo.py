"""The pipeline's promises (SLOs) as the dashboard reads them: PromQL over the raw SLI series, and
the arithmetic of error budgets. Pure.

Two SLOs over `SLO_WINDOW` (28 days), objectives from the dashboard's settings:
- freshness: live measures stored within `FRESHNESS_THRESHOLD` s of their HES timestamp
  (vigia_ingest_measure_freshness_seconds, cohort="live", the ``le`` bucket of the threshold);
- completeness by deadline: measures of each day stored by its deadline
  (vigia_ingest_deadline_measures_{stored,expected}_total).

An error ratio is ``1 − good ÷ all`` over a window; a burn rate is that ratio ÷ the budget
(1 − objective): 1 spends the budget exactly over the SLO window. A window with no event has no
ratio (0 ÷ 0 is NaN in PromQL): it reads "no data", never a perfect score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

SLO_WINDOW: Final = "28d"
SLO_WINDOW_SECONDS: Final = 28 * 86400
BURN_WINDOWS: Final = ("5m", "1h", "6h", "1d", "3d")
FRESHNESS_THRESHOLD: Final = 1800
_FRESH: Final = "vigia_ingest_measure_freshness_seconds"
_DEADLINE: Final = "vigia_ingest_deadline_measures"


@dataclass(frozen=True)
class Slo:
    key: str
    title: str
    promise: str
    objective: float
    good: str  # PromQL selector of a counter of good events ({window} in the range)
    total: str  # … of all events

    @property
    def budget(self) -> float:
        return 1 - self.objective

    def error_ratio(self, window: str) -> str:
        good = f"sum(increase({self.good}[{window}]))"
        total = f"sum(increase({self.total}[{window}]))"
        return f"1 - {good} / {total}"

    def burn_rate(self, window: str) -> str:
        return f"({self.error_ratio(window)}) / {self.budget:.6g}"


def slos(freshness_objective: float = 0.99, deadline_objective: float = 0.999) -> tuple[Slo, ...]:
    return (
        Slo(
            "freshness",
            "Freshness",
            f"live measures stored within {FRESHNESS_THRESHOLD // 60} minutes of their HES "
            "timestamp",
            freshness_objective,
            f'{_FRESH}_bucket{{cohort="live",le="{FRESHNESS_THRESHOLD}"}}',
            f'{_FRESH}_count{{cohort="live"}}',
        ),
        Slo(
            "deadline",
            "Completeness by deadline",
            "each day's measures stored by the next morning's deadline",
            deadline_objective,
            f"{_DEADLINE}_stored_total",
            f"{_DEADLINE}_expected_total",
        ),
    )


def budget_left(error_ratio: float | None, budget: float) -> float | None:
    """Share of the window's error budget not spent (negative once overspent); None: no data."""
    if error_ratio is None:
        return None
    return 1 - error_ratio / budget


@dataclass(frozen=True)
class Incident:
    """A run of points whose burn rate exceeded 1."""

    start: float
    end: float
    peak_burn: float
    budget_spent: float  # share of the SLO window's budget the run spent


def incidents(times: Sequence[float], burns: Sequence[float | None], step: float) -> list[Incident]:
    """Runs of consecutive points with a burn rate above 1, most budget spent first; each point
    stands for the ``step`` seconds before it (the range query's increase window is the step)."""
    found: list[Incident] = []
    run: list[tuple[float, float]] = []

    def close() -> None:
        if run:
            found.append(
                Incident(
                    run[0][0] - step,
                    run[-1][0],
                    max(b for _, b in run),
                    sum(b for _, b in run) * step / SLO_WINDOW_SECONDS,
                )
            )
            run.clear()

    for t, burn in zip(times, burns, strict=True):
        if burn is not None and burn > 1:
            if run and t - run[-1][0] > step * 1.5:
                close()
            run.append((t, burn))
        else:
            close()
    close()
    return sorted(found, key=lambda i: (-i.budget_spent, i.start))
