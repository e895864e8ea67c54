"""`vigia-stack --demo`: what the demo adds to a normal run (prerequisites, the embedded cluster,
the receiver's URLs, the simulated traffic, the banner)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from vigia.launcher import packages, plan

log = logging.getLogger("vigia-stack")

# The demo's own alert on the simulated HES outage (production rules are loaded unchanged).
RULES = Path(__file__).resolve().parent / "demo-rules.yml"
MEASURE_TOPIC = "measure"
MOCK_BROKERS = 3
BOOTSTRAP_FILE = "mock-cluster.bootstrap"
BOOTSTRAP_DEADLINE_SECONDS = 30.0
# mariadb-install-db, the server's start and the schema take seconds; a loaded machine, more.
HES_DEADLINE_SECONDS = 90.0
HES_PACKAGE = "mariadb-server"
HES_STOP_SECONDS = 40.0  # its host gives mariadbd 30 s for a clean InnoDB shutdown

# Debian package -> components that cannot run without it.
NEEDED_BY = {
    "openjdk-17-jre-headless": ("ingest",),
    "prometheus": ("prometheus",),
    "prometheus-alertmanager": ("alertmanager", "heartbeat", "receiver"),
}


def missing_packages(settings: plan.Settings) -> list[str]:
    """Debian packages the demo needs and this machine lacks."""
    present = {
        "openjdk-17-jre-headless": packages.java_ok(),
        "prometheus": bool(settings.prometheus_binary),
        "prometheus-alertmanager": bool(settings.alertmanager_binary),
    }
    return [package for package, ok in present.items() if not ok]


def runnable(components: Sequence[str], missing: Sequence[str]) -> list[str]:
    blocked = {c for package in missing for c in NEEDED_BY[package]}
    return [c for c in components if c not in blocked]


def traffic(now: float | None = None) -> plan.DemoTraffic:
    """Demo traffic whose simulated clock starts at the last quarter-hour boundary."""
    moment = time.time() if now is None else now
    start = int(moment) - int(moment) % (15 * 60)
    iso = dt.datetime.fromtimestamp(start, dt.UTC).isoformat().replace("+00:00", "Z")
    return plan.DemoTraffic(start=iso)


def write_receiver_url(settings: plan.Settings, receiver: str) -> str:
    """A file holding the demo receiver's URL for Alertmanager's `receiver` webhook."""
    directory = settings.run_dir / "receiver"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{receiver}-url"
    path.write_text(f"{plan.url(settings, 'receiver')}/{receiver}\n", encoding="utf-8")
    return str(path)


def forget_previous_cluster(run_dir: Path) -> None:
    """Each demo's embedded cluster starts empty: the ingest job's offsets and output from a
    previous run describe a cluster that is gone (Prometheus keeps its history)."""
    for stale in (run_dir / "checkpoints", run_dir / "data" / "parquet"):
        if stale.is_dir():
            log.info("the previous demo's cluster is gone: removing %s", stale)
            shutil.rmtree(stale)


def start_mock_cluster(run_dir: Path) -> subprocess.Popen[bytes]:
    from vigia.exporter.probe.runner import DEFAULT_TOPIC as PROBE_TOPIC

    (run_dir / BOOTSTRAP_FILE).unlink(missing_ok=True)
    log_file = (run_dir / "logs" / "mock-cluster.log").open("ab")
    with log_file:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vigia.launcher.mock_cluster",
                "--brokers",
                str(MOCK_BROKERS),
                "--topic",
                MEASURE_TOPIC,
                "--topic",
                PROBE_TOPIC,
                "--bootstrap-file",
                str(run_dir / BOOTSTRAP_FILE),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            # Its own session: Ctrl-C reaches the launcher, which stops it last.
            start_new_session=True,
        )


def wait_for_bootstrap(host: subprocess.Popen[bytes], run_dir: Path) -> str | None:
    path = run_dir / BOOTSTRAP_FILE
    deadline = time.monotonic() + BOOTSTRAP_DEADLINE_SECONDS
    while time.monotonic() < deadline and host.poll() is None:
        if path.is_file():
            bootstrap = path.read_text(encoding="utf-8").strip()
            log.info("embedded Kafka cluster (librdkafka mock, 3 brokers) at %s", bootstrap)
            return bootstrap
        time.sleep(0.1)
    log.error("the embedded Kafka cluster did not start; see %s", run_dir / "logs")
    return None


def hes_missing() -> str | None:
    """The apt-get line that gives the demo its HES database, when MariaDB is not installed."""
    return packages.install_line([HES_PACKAGE]) if packages.missing([HES_PACKAGE]) else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hes_dir(run_dir: Path) -> Path:
    return run_dir / "data" / "hes"


def start_hes(run_dir: Path) -> subprocess.Popen[bytes]:
    """MariaDB (launcher/mariadb.py) in a process of its own, with an empty database: the
    previous demo's rows describe readings its cluster and Parquet store no longer hold."""
    directory = hes_dir(run_dir)
    if directory.is_dir():
        log.info("the previous demo's HES is gone: removing %s", directory)
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    log_file = (run_dir / "logs" / "hes-db.log").open("ab")
    with log_file:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vigia.launcher.mariadb",
                "--dir",
                str(directory),
                "--port",
                str(free_port()),
                "--stop-with-parent",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # as the mock cluster: the launcher stops it last
        )


def wait_for_hes(host: subprocess.Popen[bytes], run_dir: Path) -> plan.DemoHes | None:
    """The HES's users, once it serves: each DSN in a file of its own (mode 0600)."""
    directory = hes_dir(run_dir)
    deadline = time.monotonic() + HES_DEADLINE_SECONDS
    while time.monotonic() < deadline and host.poll() is None:
        if (directory / "dsn.json").is_file():
            dsns = json.loads((directory / "dsn.json").read_text(encoding="utf-8"))
            files = {}
            for role in ("writer", "reader"):
                path = directory / f"{role}.dsn"
                path.touch(mode=0o600)
                path.write_text(dsns[role] + "\n", encoding="utf-8")
                files[role] = path
            log.info("the demo's HES database (MariaDB): users' DSNs in %s", directory)
            return plan.DemoHes(files["writer"], files["reader"], free_port())
        time.sleep(0.2)
    log.error(
        "the demo's HES database did not start; see %s; the demo goes on without it",
        run_dir / "logs" / "hes-db.log",
    )
    return None


def stop_host(host: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL to its whole session (the HES host's mariadbd with it)."""
    if host.poll() is None:
        host.send_signal(signal.SIGTERM)
        try:
            host.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(host.pid, signal.SIGKILL)
            host.wait()


def banner(settings: plan.Settings, components: Sequence[str]) -> str:
    names = {
        "dashboard": "Dash app (start here)",
        "prometheus": "Prometheus",
        "alertmanager": "Alertmanager",
        "exporter": "exporter /metrics",
        "ingest": "ingest job /metrics",
        "simulator": "simulator /metrics",
        "receiver": "notification receiver",
        "heartbeat": "heartbeat checker",
    }
    lines = [f"  {names[c]:<24} {plan.url(settings, c)}" for c in components if c in names]
    traffic = settings.demo
    outage = (
        f"An HES outage of {traffic.outage_duration:g} s starts {traffic.outage_after:g} s into "
        f"every {traffic.outage_every / 60:g} minutes; the demo alert DemoHesOutage fires and "
        "resolves within 10 minutes."
        if traffic
        else ""
    )
    return (
        "\nVigía demo (embedded mock Kafka cluster, simulated meters):\n"
        + "\n".join(lines)
        + f"\n{outage}\nNotifications are logged in {settings.run_dir / 'logs' / 'receiver.log'}."
        "\nGrafana runs with the full stack only: `make up` (Docker, three Kafka brokers)."
        "\nCtrl-C stops everything.\n\n"
    )
