"""Prometheus rules for SLOs: error ratios over the burn-rate windows, the budget left over the
SLO's window, and multi-window, multi-burn-rate alerts (the SRE workbook's "Alerting on SLOs").

Pure: SLOs in, rule groups (plain dicts, as in a Prometheus rule file) out. Naming follows Sloth's
`slo:sli_error:ratio_rate<window>` with the SLO in an `slo` label. Every ratio is computed from the
raw counters (as Pyrra does) rather than averaged from the 5-minute ratio (as Sloth does): an SLI
that moves once a day has no 5-minute ratio most of the day, and an average of ratios weighs
minutes, not events.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from textwrap import indent
from typing import Any

from vigia.common.slo.spec import Slo

RuleGroup = dict[str, Any]


@dataclass(frozen=True)
class BurnAlert:
    """Fires when both windows spend the budget `factor` times as fast as the window allows."""

    long: str
    short: str
    factor: Decimal


# The workbook's table for a 30-day window, kept for 28 days: a page spends 2 % of the budget in an
# hour or 5 % in six hours, a ticket 10 % in a day or 10 % in three days. The short window (1/12 of
# the long one) ends the alert soon after the burn stops.
PAGE = (BurnAlert("1h", "5m", Decimal("14.4")), BurnAlert("6h", "30m", Decimal(6)))
TICKET = (BurnAlert("1d", "2h", Decimal(3)), BurnAlert("3d", "6h", Decimal(1)))
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
# Pages wait two evaluations (a daily SLI shows in its 5-minute window for under 5 minutes);
# tickets a quarter of an hour, well inside the 2-hour window that clears them.
PAGE_FOR = "2m"
TICKET_FOR = "15m"
# The long windows read days of samples per evaluation: once a minute is enough for a budget.
LONG_INTERVAL = "1m"
# The windows, `for` durations and interval above are tuned for a 28-day SLO; an SLO of another
# window gets them in proportion (as Pyrra does), so a drill SLO of one day burns in minutes.
BASE_WINDOW = "28d"
ABSENT_FOR = "1h"
CONSOLE = "{{ $externalLabels.vigia_console_url }}"
DASHBOARD = "/ingest"
ABSENT_ALERT = "SloSliAbsent"


_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_SECONDS = {"w": 604800, **dict(_UNITS)}


def seconds(duration: str) -> int:
    """A single-unit Prometheus duration (5m, 28d) in seconds."""
    return int(duration[:-1]) * _SECONDS[duration[-1]]


def duration(total: int) -> str:
    """Seconds as a Prometheus duration in the largest unit that divides them."""
    return next(f"{total // size}{unit}" for unit, size in _UNITS if total % size == 0)


def scaled(base: str, window: str) -> str:
    """`base`, tuned for a 28-day SLO, in proportion to an SLO `window`: itself for 28 days,
    never under a second."""
    share = Decimal(seconds(window)) / seconds(BASE_WINDOW)
    exact = Decimal(seconds(base)) * share
    return duration(max(1, int(exact.to_integral_value())))


def _number(value: Decimal) -> str:
    return format(value.normalize(), "f")


def error_ratio(slo: Slo, window: str) -> str:
    """Bad events over all events in the window, per cluster: absent without events (0/0)."""
    return (
        f"1 - (\n  sum by (cluster) (rate({slo.good}[{window}]))\n  /\n"
        f"  sum by (cluster) (rate({slo.total}[{window}]))\n)"
    )


def ratio_name(window: str) -> str:
    return f"slo:sli_error:ratio_rate{window}"


BUDGET_REMAINING = "slo:error_budget_remaining:ratio"


def _record(name: str, expr: str, slo: Slo) -> dict[str, Any]:
    return {"record": name, "expr": expr, "labels": {"slo": slo.name}}


def recording_groups(slo: Slo) -> list[RuleGroup]:
    short = [scaled(w, slo.window) for w in WINDOWS if w.endswith(("m", "h"))]
    long = [scaled(w, slo.window) for w in WINDOWS if not w.endswith(("m", "h"))]
    budget = _number(slo.budget)
    return [
        {
            "name": f"vigia-slo-{slo.name}",
            "rules": [_record(ratio_name(w), error_ratio(slo, w), slo) for w in short],
        },
        {
            "name": f"vigia-slo-{slo.name}-long",
            "interval": scaled(LONG_INTERVAL, slo.window),
            "rules": [
                *(_record(ratio_name(w), error_ratio(slo, w), slo) for w in (*long, slo.window)),
                # From the counters again, not from the ratio above: promtool backfills rules
                # only from raw series, and one evaluation's lag is one less thing to explain.
                _record(
                    BUDGET_REMAINING,
                    f"1 - (\n{indent(error_ratio(slo, slo.window), '  ')}\n) / {budget}",
                    slo,
                ),
            ],
        },
    ]


def burn_expr(slo: Slo, pairs: tuple[BurnAlert, ...]) -> str:
    """The burn rate over the long window (its value), where both windows of a pair exceed it."""
    budget = _number(slo.budget)
    selector = f'{{slo="{slo.name}"}}'
    parts = [
        f"(\n  {ratio_name(long)}{selector} / {budget} > {factor}\n"
        f"  and on (cluster, slo)\n"
        f"  {ratio_name(short)}{selector} / {budget} > {factor}\n)"
        for long, short, factor in (
            (scaled(p.long, slo.window), scaled(p.short, slo.window), _number(p.factor))
            for p in pairs
        )
    ]
    return "\nor\n".join(parts)


def _pairs(slo: Slo, pairs: tuple[BurnAlert, ...]) -> str:
    return " or ".join(
        f"{_number(p.factor)}× over {scaled(p.long, slo.window)} and {scaled(p.short, slo.window)}"
        for p in pairs
    )


def _annotations(alert: str, summary: str, description: str) -> dict[str, str]:
    return {
        "summary": summary,
        "description": description,
        "runbook_url": f"{CONSOLE}/runbooks/{alert}",
        "dashboard_url": f"{CONSOLE}{DASHBOARD}",
    }


def burn_alert(slo: Slo, page: bool) -> dict[str, Any]:
    pairs = PAGE if page else TICKET
    alert = f"{slo.alert_prefix}{'Fast' if page else 'Slow'}Burn"
    pace = "fast" if page else "slowly"
    return {
        "alert": alert,
        "expr": burn_expr(slo, pairs),
        "for": scaled(PAGE_FOR if page else TICKET_FOR, slo.window),
        "labels": {
            "product": "vigia",
            "severity": "critical" if page else "warning",
            "source": "ingest",
            "slo": slo.name,
        },
        "annotations": _annotations(
            alert,
            f"{slo.display_name}: the error budget burns {pace}, "
            "{{ $value | humanize }}× ({{ $labels.cluster }})",
            f"SLO {slo.name} ({slo.display_name}) in cluster {{{{ $labels.cluster }}}}: objective"
            f" {_number(slo.target * 100)} % over {slo.window}; the budget is being spent "
            f"{{{{ $value | humanize }}}} times as fast as the window allows "
            f"({_pairs(slo, pairs)}). "
            f"Budget left: "
            f'{{{{ with printf `{BUDGET_REMAINING}{{cluster="%s",slo="{slo.name}"}}` '
            "$labels.cluster | query }}{{ . | first | value | humanizePercentage }}"
            "{{ else }}unknown{{ end }}.",
        ),
    }


def absent_alert(slos: list[Slo]) -> dict[str, Any]:
    """The SLI's events are not served at all while its job is up: the SLO would say nothing.
    (Its job down is the job's own page, e.g. IngestQueryDown.)"""
    parts = [
        f"label_replace(\n  max by (cluster) ({s.up}) == 1\n  unless on (cluster)\n"
        f'  count by (cluster) ({s.total}),\n  "slo", "{s.name}", "", ""\n)'
        for s in slos
    ]
    return {
        "alert": ABSENT_ALERT,
        "expr": "\nor\n".join(parts),
        "for": ABSENT_FOR,
        "labels": {"product": "vigia", "severity": "warning", "source": "ingest"},
        "annotations": _annotations(
            ABSENT_ALERT,
            "SLO {{ $labels.slo }} has no data ({{ $labels.cluster }})",
            "The job serving SLO {{ $labels.slo }} in cluster {{ $labels.cluster }} is up but has "
            f"not published the SLI's events for {ABSENT_FOR}: the SLO's error ratios, budget and "
            "burn-rate alerts are absent, which is not a perfect score.",
        ),
    }


def rule_groups(slos: list[Slo]) -> list[RuleGroup]:
    return [
        *(g for slo in slos for g in recording_groups(slo)),
        {"name": "vigia-slo-pages", "rules": [burn_alert(s, page=True) for s in slos]},
        {
            "name": "vigia-slo-tickets",
            "rules": [*(burn_alert(s, page=False) for s in slos), absent_alert(slos)],
        },
    ]
