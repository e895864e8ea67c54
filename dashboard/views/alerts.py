"""Active alerts as tables: every one on the Overview, and on each other page those whose
`dashboard_url` leads there, so that on-call following a page's link sees what fired. Each row links
the alert's runbook and board (its `runbook_url` and `dashboard_url` annotations)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from dash import html

from vigia.dashboard.data import Unreachable
from vigia.dashboard.views.common import card, simple_table

Alerts = Sequence[Mapping[str, Any]] | Unreachable | None


def _since(alert: Mapping[str, Any]) -> str:
    since = str(alert.get("startsAt", ""))
    with contextlib.suppress(ValueError):
        since = (
            datetime.fromisoformat(since.replace("Z", "+00:00"))
            .astimezone(UTC)
            .strftime("%Y-%m-%d %H:%M UTC")
        )
    return since


def _links(annotations: Mapping[str, Any]) -> list[Any]:
    links: list[Any] = []
    for key, text in (("runbook_url", "runbook"), ("dashboard_url", "board")):
        url = annotations.get(key)
        if url:
            links += [" · "] if links else []
            links.append(html.A(text, href=str(url), className="alert-link"))
    return links


def alerts_table(alerts: Alerts, id: str = "alerts-table") -> Any:
    if alerts is None or isinstance(alerts, Unreachable):
        return html.Div(str(alerts) if alerts else "Alertmanager not queried", className="muted")
    ordered = sorted(
        alerts,
        key=lambda a: (a.get("labels", {}).get("severity") != "critical", _since(a)),
    )
    rows = [
        [
            a.get("labels", {}).get("alertname", "?"),
            a.get("labels", {}).get("severity", ""),
            a.get("annotations", {}).get("summary", ""),
            _since(a),
            _links(a.get("annotations", {})),
        ]
        for a in ordered
    ]
    return simple_table(
        ["Alert", "Severity", "Summary", "Since", "Links"],
        rows,
        id=id,
        empty="No alerts firing.",
    )


def leading_to(alerts: Alerts, path: str) -> list[Mapping[str, Any]]:
    """The alerts whose board (`dashboard_url`) is the page at `path`."""
    if alerts is None or isinstance(alerts, Unreachable):
        return []
    return [
        a
        for a in alerts
        if urlsplit(str(a.get("annotations", {}).get("dashboard_url", ""))).path == path
    ]


def firing_here(alerts: Alerts, path: str) -> list[Any]:
    """A card of the alerts that lead to this page, or nothing when none does."""
    here = leading_to(alerts, path)
    if not here:
        return []
    return [card("Firing now, linked to this page", alerts_table(here, "page-alerts"), wide=True)]
