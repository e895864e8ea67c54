"""The pipeline's promises (SLOs) as the dashboard reads them: PromQL over the raw SLI series, and
the arithmetic of error budgets. Pure.

The SLOs are those of the SLO file (prometheus/slo/slos.yml, read by `vigia.common.slo`): their
names, good and total counters and objectives (a dashboard setting may override an objective).
Each is judged over `SLO_WINDOW` (28 days).

An error ratio is ``1 − good ÷ all`` over a window; a burn rate is that ratio ÷ the budget
(1 − objective): 1 spends the budget exactly over the SLO window. A window with no event has no
ratio (0 ÷ 0 is NaN in PromQL): it reads "no data", never a perfect score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from vigia.common.slo import spec

SLO_WINDOW: Final = "28d"
SLO_WINDOW_SECONDS: Final = 28 * 86400
BURN_WINDOWS: Final = ("5m", "1h", "6h", "1d", "3d")


@dataclass(frozen=True)
class Slo:
    key: str  # the SLO file's name, in the page's element ids
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


def slos(
    specs: Sequence[spec.Slo], objectives: Mapping[str, float] | None = None
) -> tuple[Slo, ...]:
    """The SLO file's SLOs, in its order; ``objectives`` (by SLO name) override its targets."""
    chosen = objectives or {}
    return tuple(
        Slo(
            s.name,
            s.display_name,
            s.description,
            chosen.get(s.name, float(s.target)),
            s.good,
            s.total,
        )
        for s in specs
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
