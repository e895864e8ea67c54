"""The "Vigía / Promises" board: each SLO of prometheus/slo/slos.yml, its compliance over its
window, the budget left, and how fast the budget burns over the alerting windows."""

from __future__ import annotations

import yaml

from generator.labels import CLUSTER_VAR, C
from generator.panels import Board, Panel, Row, q, row, stat, timeseries
from vigia.common.slo.cli import SPEC
from vigia.common.slo.rules import BUDGET_REMAINING, PAGE, TICKET, WINDOWS, ratio_name
from vigia.common.slo.spec import Slo, parse

SLOS = parse(yaml.safe_load_all(SPEC.read_text(encoding="utf-8")))


def _selector(slo: Slo) -> str:
    return f'{{{C}, slo="{slo.name}"}}'


def compliance(slo: Slo, width: int = 6) -> Panel:
    return stat(
        f"{slo.display_name}: compliance over {slo.window}",
        q(f"1 - {ratio_name(slo.window)}{_selector(slo)}", "{{cluster}}"),
        unit="percentunit",
        width=width,
        description=(
            f"Share of good events over the rolling {slo.window}; the objective is "
            f"{float(slo.target) * 100:g} %. No value: no events in the window, which is not a "
            "perfect score."
        ),
    )


def budget_spent(slo: Slo, width: int = 6) -> Panel:
    return stat(
        f"{slo.display_name}: error budget spent",
        q(f"1 - {BUDGET_REMAINING}{_selector(slo)}", "{{cluster}}"),
        unit="percentunit",
        width=width,
        thresholds=((0.5, "orange"), (1.0, "red")),
        description=(
            f"Share of the {slo.window} error budget ({float(slo.budget) * 100:g} % of the events) "
            "already spent; over 100 %: the promise is broken for the window."
        ),
    )


def slo_row(slo: Slo) -> Row:
    selector = _selector(slo)
    burn = [q(f"{ratio_name(w)}{selector} / {slo.budget}", f"{w} {{{{cluster}}}}") for w in WINDOWS]
    return row(
        slo.display_name,
        compliance(slo),
        budget_spent(slo),
        stat(
            f"{slo.display_name}: budget left",
            q(f"{BUDGET_REMAINING}{selector}", "{{cluster}}"),
            unit="percentunit",
            width=12,
            description=f"The {slo.window} error budget not yet spent (negative: overspent).",
        ),
        timeseries(
            f"{slo.display_name}: burn rate per window",
            *burn,
            description=(
                "How many times faster than the window allows the budget is being spent, per "
                "alerting window; 1 spends exactly the budget over the window. Pages: "
                f"{PAGE[0].factor}× over 1h and 5m, {PAGE[1].factor}× over 6h and 30m; tickets: "
                f"{TICKET[0].factor}× over 1d and 2h, {TICKET[1].factor}× over 3d and 6h. "
                "A gap: no events in that window."
            ),
            thresholds=((float(TICKET[1].factor), "orange"), (float(PAGE[1].factor), "red")),
        ),
        timeseries(
            f"{slo.display_name}: budget left over time",
            q(f"{BUDGET_REMAINING}{selector}", "{{cluster}}"),
            unit="percentunit",
            description="Steps down where an incident spent the budget.",
        ),
    )


BOARD = Board(
    uid="vigia-promises",
    title="Vigía / Promises",
    description="The pipeline's SLOs: compliance, error budget left, burn rate per window.",
    variables=(CLUSTER_VAR,),
    rows=tuple(slo_row(slo) for slo in SLOS),
)
