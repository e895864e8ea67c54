"""Alerts in the Dash app link their runbook and board, and the board an alert links to shows it."""

from __future__ import annotations

import json
from typing import Any

from vigia.dashboard.data import Fetched, Unreachable
from vigia.dashboard.pages import refresh
from vigia.dashboard.views import alerts
from vigia.dashboard.views.common import Filters

CONSOLE = "http://127.0.0.1:8050"
OUTAGE = {
    "labels": {"alertname": "DemoHesOutage", "severity": "critical"},
    "annotations": {
        "summary": "Demo: the simulated HES holds back 2m of readings",
        "runbook_url": f"{CONSOLE}/runbooks/IngestDataStale",
        "dashboard_url": f"{CONSOLE}/ingest",
    },
    "startsAt": "2026-11-26T00:03:00Z",
}
IMBALANCE = {
    "labels": {"alertname": "KafkaLeaderImbalance", "severity": "warning"},
    "annotations": {"dashboard_url": f"{CONSOLE}/brokers"},
}


def dumped(component: Any) -> str:
    return json.dumps(component.to_plotly_json(), default=lambda c: c.to_plotly_json())


def test_each_alert_row_links_its_runbook_and_board() -> None:
    table = dumped(alerts.alerts_table([OUTAGE]))
    assert f'"href": "{CONSOLE}/runbooks/IngestDataStale"' in table
    assert f'"href": "{CONSOLE}/ingest"' in table
    assert "runbook" in table and "board" in table
    assert "No alerts firing." in dumped(alerts.alerts_table([]))


def test_a_page_lists_the_alerts_that_link_to_it() -> None:
    assert alerts.leading_to([OUTAGE, IMBALANCE], "/ingest") == [OUTAGE]
    assert alerts.leading_to([OUTAGE, IMBALANCE], "/topics") == []
    assert alerts.leading_to(Unreachable("Alertmanager", "down"), "/ingest") == []
    assert alerts.firing_here([IMBALANCE], "/ingest") == []


class Backends:
    def fetch(self, plan: Any, window: Any) -> Fetched:
        return Fetched(cluster=Unreachable("exporter", "down"), alerts=[OUTAGE, IMBALANCE])


def test_the_board_an_alert_links_to_shows_it_first() -> None:
    ingest = refresh(Backends(), "/ingest", None, Filters(), 1795484000.0)  # type: ignore[arg-type]
    first = dumped(ingest.children[0])
    assert "DemoHesOutage" in first and "KafkaLeaderImbalance" not in first
    topics = refresh(Backends(), "/topics", None, Filters(), 1795484000.0)  # type: ignore[arg-type]
    assert "DemoHesOutage" not in json.dumps([dumped(c) for c in topics.children])
