"""The demo's webhook receiver: one log line per alert of each Alertmanager notification."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from launcher.receiver import describe
from tests.conftest import free_port
from tests.servers import start

PAYLOAD = {
    "status": "firing",
    "alerts": [
        {
            "status": "firing",
            "labels": {
                "alertname": "DemoHesOutage",
                "severity": "critical",
                "cluster": "smartmeter",
                "vigia_console_url": "http://127.0.0.1:8050",
            },
            "annotations": {"runbook_url": "http://127.0.0.1:8050/runbooks/IngestDataStale"},
        }
    ],
}


def test_each_alert_is_one_line_with_its_runbook() -> None:
    assert describe("pager", PAYLOAD) == [
        "pager: firing DemoHesOutage {cluster=smartmeter,severity=critical} "
        "http://127.0.0.1:8050/runbooks/IngestDataStale"
    ]
    assert describe("ticket", {"alerts": [{"labels": {}}]}) == ["ticket: ? ? {} no runbook"]


def test_notifications_are_logged_and_listed(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "receiver.log"
    cmd = [sys.executable, "-m", "launcher.receiver", "--port", str(port)]
    server = start("receiver", cmd, port, log, "/healthz")
    try:
        assert httpx.post(f"{server.url}/pager", json=PAYLOAD, timeout=5).status_code == 200
        assert (
            httpx.post(f"{server.url}/ticket", content=b"{not json", timeout=5).status_code == 400
        )
        (kept,) = httpx.get(f"{server.url}/notifications", timeout=5).json()
        assert kept["receiver"] == "pager" and kept["alerts"] == PAYLOAD["alerts"]
    finally:
        server.stop()
    assert "pager: firing DemoHesOutage {cluster=smartmeter,severity=critical}" in log.read_text()
