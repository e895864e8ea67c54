"""vigia-stack for real: every component up against librdkafka's mock cluster, then a clean stop."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Producer

from tests.conftest import MockCluster, free_port
from tests.scripts import console_script
from vigia.launcher import plan

# --stop-timeout: SIGKILL after this. A clean stop (the exit status 0 the tests expect) takes
# seconds on a loaded machine: the exporter finishes a collection, the ingest job a batch.
STOP_TIMEOUT = 30.0
START_DEADLINE = 120.0
MARKER = "VIGIA_TEST_STACK_MARKER"


def marked_processes(marker: str) -> dict[psutil.Process, str]:
    """Every process (and its name) that inherited this run's marker variable: the launcher and
    everything it started, however deep."""
    found = {}
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARKER) == marker:
                found[process] = process.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    # Whatever the test's outcome, nothing it started outlives it.
    for process in marked_processes(value):
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


@pytest.mark.timeout(480)
def test_stack_starts_every_component_and_stops_without_orphans(
    mock_cluster: MockCluster, tmp_path: Path, marker: str
) -> None:
    # The ingest job refuses to start without its topic; the mock cluster creates one on first use.
    producer = Producer({"bootstrap.servers": mock_cluster.bootstrap_servers})
    producer.produce("measure", b"{}")
    assert producer.flush(10) == 0

    # Prometheus and Alertmanager take part when installed (CI installs them: .ci/run).
    components = ["exporter", "ingest", "simulator", "dashboard"]
    components += [c for c in ("prometheus", "alertmanager") if _installed(c)]
    ports = {c: free_port() for c in plan.COMPONENTS}
    run_dir = tmp_path / "run"
    argv = [
        console_script("vigia-stack"),
        "--bootstrap-servers",
        mock_cluster.bootstrap_servers,
        "--only",
        ",".join(components),
        "--run-dir",
        str(run_dir),
        "--stop-timeout",
        str(STOP_TIMEOUT),
        "--exporter-port",
        str(ports["exporter"]),
        "--ingest-metrics-port",
        str(ports["ingest"]),
        "--simulator-metrics-port",
        str(ports["simulator"]),
        "--dashboard-port",
        str(ports["dashboard"]),
        "--prometheus-port",
        str(ports["prometheus"]),
        "--alertmanager-port",
        str(ports["alertmanager"]),
    ]
    health = {
        "exporter": "/healthz",
        "dashboard": "/healthz",
        "ingest": "/metrics",
        "simulator": "/metrics",
        "prometheus": "/-/ready",
        "alertmanager": "/-/ready",
    }
    output = tmp_path / "vigia-stack.out"
    with output.open("w") as out:
        launcher = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, MARKER: marker}
        )
    waiting = {c: f"http://127.0.0.1:{ports[c]}{health[c]}" for c in components}
    deadline = time.monotonic() + START_DEADLINE
    while waiting and time.monotonic() < deadline and launcher.poll() is None:
        waiting = {c: url for c, url in waiting.items() if not answers(url)}
        time.sleep(0.5)
    log_tail = "\n".join(output.read_text().splitlines()[-40:])
    assert launcher.poll() is None, f"vigia-stack exited {launcher.returncode}:\n{log_tail}"
    assert not waiting, f"not healthy after {START_DEADLINE}s: {sorted(waiting)}\n{log_tail}"
    # The launcher's own readiness report (it polls once a second).
    ready_line = f"all {len(components)} components ready"
    while ready_line not in output.read_text() and time.monotonic() < deadline + 10:
        time.sleep(0.2)
    assert ready_line in output.read_text()

    if "prometheus" in components:
        # Prometheus got the generated config: it scrapes the local processes, not compose names.
        expected = {
            f"http://127.0.0.1:{ports[c]}/metrics"
            for c in ("exporter", "ingest", "simulator", "prometheus", "alertmanager")
            if c in components
        }
        scraped = _scrape_urls(ports["prometheus"], until=expected, timeout=30)
        assert expected <= scraped, scraped

    # The ingest job's Spark JVM is a grandchild the stop must reach too: wait until it runs.
    while time.monotonic() < deadline + 60:
        started = marked_processes(marker)
        if "java" in started.values():
            break
        time.sleep(0.5)
    assert "java" in started.values(), "the ingest job's Spark JVM never started"
    # A running stack is stopped (a job still starting Spark finishes starting first, which can
    # outlast the stop timeout on a loaded machine).
    while (
        "vigia.ingest.job: ingesting" not in output.read_text()
        and time.monotonic() < deadline + 180
    ):
        time.sleep(0.5)
    started = marked_processes(marker)
    assert len(started) > len(components)  # the launcher, honcho's workers and the components
    launcher.send_signal(signal.SIGTERM)
    code = launcher.wait(timeout=STOP_TIMEOUT + 30)
    assert code == 0, "\n".join(output.read_text().splitlines()[-40:])  # stopped like a service
    _, alive = psutil.wait_procs(list(started), timeout=5)
    leftovers = {(p.pid, started[p]) for p in alive}
    leftovers |= {(p.pid, name) for p, name in marked_processes(marker).items()}
    assert not leftovers, f"still running after the launcher exited: {leftovers}"
    for c in components:
        assert (run_dir / "logs" / f"{c}.log").stat().st_size > 0, c


def _installed(component: str) -> bool:
    names = {
        "prometheus": ["prometheus"],
        "alertmanager": ["alertmanager", "prometheus-alertmanager"],
    }
    return any(shutil.which(n) for n in names[component])


def _scrape_urls(port: int, until: set[str], timeout: float) -> set[str]:
    """Prometheus' active scrape URLs, polled until `until` is among them (file_sd is async)."""
    deadline = time.monotonic() + timeout
    while True:
        url = f"http://127.0.0.1:{port}/api/v1/targets"
        with urllib.request.urlopen(url, timeout=5) as response:
            scraped = {t["scrapeUrl"] for t in json.load(response)["data"]["activeTargets"]}
        if until <= scraped or time.monotonic() > deadline:
            return scraped
        time.sleep(0.5)


@pytest.mark.timeout(240)
@pytest.mark.skipif(
    not (_installed("prometheus") and _installed("alertmanager")),
    reason="the heartbeat needs Prometheus and Alertmanager (CI installs them: .ci/run)",
)
def test_the_stack_sends_its_heartbeat_to_its_own_dead_mans_switch(
    tmp_path: Path, marker: str
) -> None:
    """No Kafka needed: the rendered Alertmanager sends the Watchdog to the heartbeat component."""
    ports = {c: free_port() for c in ("prometheus", "alertmanager", "heartbeat")}
    argv = [console_script("vigia-stack"), "--without", "exporter,ingest,dashboard"]
    argv += ["--run-dir", str(tmp_path / "run"), "--stop-timeout", str(STOP_TIMEOUT)]
    for name, port in ports.items():
        argv += [f"--{name}-port", str(port)]
    output = tmp_path / "vigia-stack.out"
    with output.open("w") as out:
        launcher = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, MARKER: marker}
        )
    status = f"http://127.0.0.1:{ports['heartbeat']}/status"
    # The first evaluation (15 s), then Alertmanager's heartbeat route at once (group_wait 0s).
    deadline = time.monotonic() + START_DEADLINE
    state = None
    while state != "alive" and time.monotonic() < deadline and launcher.poll() is None:
        with contextlib.suppress(OSError), urllib.request.urlopen(status, timeout=2) as response:
            state = json.load(response)["state"]
        time.sleep(0.5)
    launcher.send_signal(signal.SIGTERM)
    code = launcher.wait(timeout=STOP_TIMEOUT + 30)
    text = output.read_text()
    assert state == "alive", "\n".join(text.splitlines()[-40:])
    assert "heartbeat received: the paging path works" in text
    assert "heartbeat missed" not in text
    assert code == 0, "\n".join(text.splitlines()[-40:])
