"""The demo's own processes: the webhook receiver (one log line per alert of each notification)
and the mock cluster's host (it serves a cluster laid out as Kafka's would be, and outlives no
launcher)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
from confluent_kafka import Producer

from tests.conftest import free_port
from tests.servers import start
from vigia.launcher.receiver import describe

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
    cmd = [sys.executable, "-m", "vigia.launcher.receiver", "--port", str(port)]
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


def test_the_mock_cluster_host_serves_its_topics_and_stops_when_its_launcher_is_gone(
    tmp_path: Path,
) -> None:
    bootstrap = tmp_path / "bootstrap"
    # A stand-in launcher: starts the host, says its pid, and dies without stopping it.
    launcher = f"""
import subprocess, sys
host = subprocess.Popen([sys.executable, "-m", "vigia.launcher.mock_cluster", "--topic", "measure",
                         "--bootstrap-file", {str(bootstrap)!r}])
print(host.pid, flush=True)
while True:
    pass
"""
    parent = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    host = psutil.Process(int(parent.stdout.readline()))
    try:
        deadline = time.monotonic() + 30
        while not bootstrap.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        servers = bootstrap.read_text().strip()
        assert len(servers.split(",")) == 3
        metadata = Producer({"bootstrap.servers": servers}).list_topics(timeout=10)
        assert len(metadata.brokers) == 3 and len(metadata.topics["measure"].partitions) == 4
        # Laid out as Kafka would: leaders are the preferred replicas, spread over every broker
        # (the mock alone picks random leaders, and one broker as everyone's preferred leader).
        partitions = metadata.topics["measure"].partitions.values()
        assert all(p.leader == p.replicas[0] for p in partitions)
        assert {p.leader for p in partitions} == {1, 2, 3}
        parent.kill()
        parent.wait()
        host.wait(timeout=10)  # raises if it is still running
    finally:
        if parent.poll() is None:
            parent.kill()
        if host.is_running():
            host.kill()
