"""Real backends on loopback for the dashboard's browser tests.

- Prometheus (Debian binary) on a tsdb backfilled by `promtool tsdb create-blocks-from
  openmetrics` from the recordings, shifted so they end a few seconds ago.
- The exporter's /api/v1/cluster: a loopback HTTP server serving `replay()`'s cluster JSON (what the
  real exporter pipeline builds from the recordings), switchable between scenarios.
- Alertmanager (Debian binary `prometheus-alertmanager`), with alerts posted to its API.
Prometheus and Alertmanager start through tests/servers.py, like the monitoring suite's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port
from tests.dashboard.recorded import cluster_json, openmetrics_history, time_span
from tests.servers import (
    PROMTOOL,
    Server,
    start,
    start_alertmanager,
    start_prometheus,
    wait_until,
)


class BackfilledPrometheus:
    """Prometheus holding the recorded history, ending `end_ago` seconds before start-up."""

    def __init__(self, workdir: Path, end_ago: float = 20.0) -> None:
        assert PROMTOOL, "promtool is required"
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        _, last = time_span()
        self.shift = time.time() - end_ago - last
        tsdb = workdir / "tsdb"
        source = workdir / "history.om"
        source.write_text(openmetrics_history(self.shift), encoding="utf-8")
        subprocess.run(
            [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(tsdb)],
            check=True,
            capture_output=True,
        )
        self.config = workdir / "prometheus.yml"
        self.config.write_text("global:\n  scrape_interval: 15s\n", encoding="utf-8")
        self.tsdb, self.log = tsdb, workdir / "prometheus.log"
        self.server: Server | None = None

    def start(self) -> None:
        self.server = start_prometheus(self.config, self.tsdb, self.log, port=self.port)

    def stop(self) -> None:
        if self.server:
            self.server.stop()

    def query(self, promql: str) -> list[dict[str, Any]]:
        body = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=5).json()
        assert body["status"] == "success", body
        return list(body["data"]["result"])


class ClusterJsonServer:
    """Serves a recorded scenario at /api/v1/cluster, as `vigia-exporter` would."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.scenario = "healthy"
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def body(self) -> bytes:
        # Re-stamped to now: the recordings are hours old, and the dashboard flags stale data.
        return json.dumps(cluster_json(self.scenario, collected_at=time.time() - 5)).encode()

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/api/v1/cluster":
                    self.send_error(404)
                    return
                payload = outer.body()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class RealAlertmanager:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "alertmanager.yml"
        config.write_text(
            "route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n", encoding="utf-8"
        )
        self.config = config
        self.storage = workdir / "alertmanager"
        self.log = workdir / "alertmanager.log"
        self.server: Server | None = None

    def start(self) -> None:
        self.server = start_alertmanager(self.config, self.storage, self.log, port=self.port)

    def fire(self, name: str, severity: str, summary: str) -> None:
        alert = {
            "labels": {"alertname": name, "severity": severity, "cluster": "smartmeter"},
            "annotations": {"summary": summary},
        }
        httpx.post(f"{self.url}/api/v2/alerts", json=[alert], timeout=5).raise_for_status()
        wait_until(
            lambda: any(
                a["labels"]["alertname"] == name
                for a in httpx.get(f"{self.url}/api/v2/alerts", timeout=1).json()
            ),
            10,
            f"alert {name}",
        )

    def stop(self) -> None:
        if self.server:
            self.server.stop()


def start_dashboard(
    work: Path, prometheus: str, exporter: str, alertmanager: str, *flags: str
) -> Server:
    """vigia-dashboard on a free port against these backends, once /healthz answers."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "vigia.dashboard.cli",
        f"--port={port}",
        f"--prometheus-url={prometheus}",
        f"--exporter-url={exporter}",
        f"--alertmanager-url={alertmanager}",
        *flags,
    ]
    return start("vigia-dashboard", command, port, work / "dashboard.log", "/healthz")
