"""The promises' month at a glance, for the Capacity page: one line per SLO."""

from __future__ import annotations

from dataclasses import replace

from vigia.dashboard.data import Plan, scalar
from vigia.dashboard.slo import SLO_WINDOW, budget_left
from vigia.dashboard.views.common import PageContext, card, simple_table
from vigia.dashboard.views.promises import current, fmt_percent


def with_glance(plan: Plan) -> Plan:
    """``plan`` plus the glance's queries."""
    glance = {f"glance:{s.key}": s.error_ratio(SLO_WINDOW) for s in current()}
    return replace(plan, instant={**plan.instant, **glance})


def view(ctx: PageContext) -> object:
    rows = []
    for slo in current():
        ratio = scalar(ctx.instant(f"glance:{slo.key}"))
        rows.append(
            [
                slo.title,
                fmt_percent(slo.objective, 1),
                fmt_percent(None if ratio is None else 1 - ratio, 3),
                fmt_percent(budget_left(ratio, slo.budget), 1),
            ]
        )
    return card(
        f"Promises over {SLO_WINDOW} (details on the Promises page)",
        simple_table(
            ["promise", "objective", "met", "budget left"], rows, id="capacity-slo-glance"
        ),
    )
