"""Promises: each SLO's compliance over 28 days, budget left, burn rates, and the incidents that
spent the budget (see dashboard/slo.py for the arithmetic)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from dash import html

from vigia.common.slo import spec
from vigia.common.slo.cli import SPEC, load
from vigia.dashboard.data import Plan, Unreachable, scalar
from vigia.dashboard.slo import (
    BURN_WINDOWS,
    SLO_WINDOW,
    Slo,
    budget_left,
    incidents,
    slos,
)
from vigia.dashboard.views.common import (
    PageContext,
    card,
    fmt_seconds,
    graph,
    line_figure,
    matrix_traces,
    note,
    simple_table,
)

_SLOS: list[tuple[Slo, ...]] = [slos(load(SPEC))]
MIN_RATE_WINDOW = 300.0  # increases over less than a few scrapes are mostly noise


def use_slos(specs: Sequence[spec.Slo], objectives: Mapping[str, float]) -> None:
    """The SLO file's SLOs, with the objectives of the dashboard's settings by SLO name (called
    once, when the app is built)."""
    _SLOS[0] = slos(specs, objectives)


def current() -> tuple[Slo, ...]:
    return _SLOS[0]


def rate_window(step: float) -> str:
    return f"{int(max(step, MIN_RATE_WINDOW))}s"


def plan(step: float) -> Plan:
    instant: dict[str, str] = {}
    ranged: dict[str, str] = {}
    for slo in current():
        for window in (*BURN_WINDOWS, SLO_WINDOW):
            instant[f"{slo.key}:{window}"] = slo.error_ratio(window)
        ranged[f"{slo.key}:burn"] = slo.burn_rate(rate_window(step))
    return Plan(instant=instant, ranged=ranged)


def fmt_percent(value: float | None, digits: int = 2) -> str:
    return "no data" if value is None else f"{value * 100:.{digits}f} %"


def fmt_burn(value: float | None) -> str:
    return "no data" if value is None else f"{value:.2f}×"


def _time(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# What a demo of minutes lacks for a promise that a real deployment judges.
DEMO_NEEDS = {
    "ingest-completeness": "a day is judged at its next morning's deadline, which a demo of "
    "minutes does not reach",
}


def headline(slo: Slo, ratio: float | None, demo: bool = False) -> html.Div:
    """Compliance and budget left over the SLO window, or plainly no data."""
    if ratio is None:
        nodata = (
            f"No data over {SLO_WINDOW}: the SLI's series are missing or counted nothing, so "
            "the promise cannot be judged (this is not a perfect score)."
        )
        if demo and slo.key in DEMO_NEEDS:
            nodata += f" In the demo: {DEMO_NEEDS[slo.key]}."
        return html.Div(nodata, className="card error", id=f"slo-{slo.key}-nodata")
    left = budget_left(ratio, slo.budget)
    state = "ok" if left is not None and left > 0 else "spent"
    return html.Div(
        [
            html.Span(f"{fmt_percent(1 - ratio, 3)} over {SLO_WINDOW}", className="slo-big"),
            html.Span(
                f" · objective {fmt_percent(slo.objective, 1)} · budget left "
                f"{fmt_percent(left, 1)}" + (" (overspent)" if state == "spent" else ""),
            ),
        ],
        id=f"slo-{slo.key}-headline",
        className=f"slo-headline slo-{state}",
    )


def slo_card(ctx: PageContext, slo: Slo) -> html.Div:
    ratios = {w: scalar(ctx.instant(f"{slo.key}:{w}")) for w in (*BURN_WINDOWS, SLO_WINDOW)}
    burn_rows = [
        [w, fmt_burn(None if ratios[w] is None else ratios[w] / slo.budget)]  # type: ignore[operator]
        for w in BURN_WINDOWS
    ]
    burn = ctx.ranged(f"{slo.key}:burn")
    traces = matrix_traces(burn, lambda _l: "burn rate", metric=slo.total.split("{")[0])
    figure = line_figure(
        f"Burn rate over {rate_window(ctx.window.step)} windows (1 = budget spent exactly in "
        f"{SLO_WINDOW})",
        traces,
        y_title="× budget",
        extra_layout={
            "shapes": [
                {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                 "line": {"dash": "dot", "color": "#c0392b", "width": 1}}
            ]
        },
    )  # fmt: skip
    spent: list[list[str]] = []
    if not isinstance(burn, Unreachable) and burn:
        series = burn[0]
        step = max(ctx.window.step, 1.0)
        for incident in incidents(series.times, series.values, step):
            spent.append(
                [
                    _time(incident.start),
                    fmt_seconds(incident.end - incident.start),
                    fmt_burn(incident.peak_burn),
                    fmt_percent(incident.budget_spent, 1),
                ]
            )
    return card(
        f"{slo.title}: {slo.promise}",
        headline(slo, ratios[SLO_WINDOW], ctx.demo),
        simple_table(["window", "burn rate"], burn_rows, id=f"slo-{slo.key}-burn"),
        graph(figure, f"fig-slo-{slo.key}-burn"),
        html.H4("Incidents that spent the budget (burn rate above 1, in the range shown)"),
        simple_table(
            ["from", "for", "peak burn", f"{SLO_WINDOW} budget spent"],
            spent,
            id=f"slo-{slo.key}-incidents",
            empty="none in the range shown",
        ),
        wide=True,
        id=f"slo-{slo.key}",
    )


def build(ctx: PageContext) -> list[Any]:
    return [
        note(
            "Each promise's compliance over the last 28 days, its error budget (1 − objective) "
            "left, and how fast it burns: 1× spends the budget exactly in 28 days, 14.4× in "
            "two days. Objectives are the dashboard's settings."
        ),
        html.Div([slo_card(ctx, slo) for slo in current()], className="grid"),
    ]
