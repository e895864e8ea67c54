"""Real Prometheus and Alertmanager (Debian's binaries) and other loopback processes for tests:
started on 127.0.0.1, waited for until ready, stopped by PID. The monitoring and Dash suites
share them."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
ALERTMANAGER = shutil.which("alertmanager") or shutil.which("prometheus-alertmanager")
AMTOOL = shutil.which("amtool")
MISSING = [
    name
    for name, path in {
        "prometheus": PROMETHEUS,
        "promtool": PROMTOOL,
        "alertmanager/prometheus-alertmanager": ALERTMANAGER,
        "amtool": AMTOOL,
    }.items()
    if path is None
]


def run(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def wait_until(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Polls `check` until it returns something truthy; fails with `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
        except (httpx.HTTPError, OSError):
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Server:
    """A process listening on 127.0.0.1:port, stopped by PID."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def start(
    name: str,
    cmd: list[str],
    port: int,
    log: Path,
    ready_path: str,
    env: dict[str, str] | None = None,
) -> Server:
    with log.open("ab") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = Server(name, port, process, log)

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"{name} exited with {process.returncode}:\n{server.log_tail()}")
        return httpx.get(server.url + ready_path, timeout=2).status_code == 200

    try:
        wait_until(ready, 60, f"{name} to be ready")
    except BaseException:
        server.stop()
        raise
    return server


# What compose gives Prometheus when .env does not set VIGIA_CONSOLE_URL.
COMPOSE_CONSOLE_URL = "http://localhost:8050"


def start_prometheus(
    config: Path,
    data: Path,
    log: Path,
    port: int | None = None,
    console_url: str = COMPOSE_CONSOLE_URL,
    extra: Sequence[str] = (),
) -> Server:
    """As compose runs it: prometheus/prometheus.yml's `${VIGIA_CONSOLE_URL}` external label is
    expanded from the environment."""
    port = port or free_port()
    assert PROMETHEUS is not None
    cmd = [
        PROMETHEUS,
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        "--storage.tsdb.retention.time=30d",
        f"--web.listen-address=127.0.0.1:{port}",
        "--enable-feature=expand-external-labels",
        "--log.level=warn",
        *extra,
    ]
    env = {**os.environ, "VIGIA_CONSOLE_URL": console_url}
    return start("prometheus", cmd, port, log, "/-/ready", env)


def start_alertmanager(config: Path, data: Path, log: Path, port: int | None = None) -> Server:
    port = port or free_port()
    assert ALERTMANAGER is not None
    cmd = [
        ALERTMANAGER,
        f"--config.file={config}",
        f"--storage.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # no gossip: a single instance
        "--log.level=warn",
    ]
    return start("alertmanager", cmd, port, log, "/-/ready")
