"""A Spark standalone master and one-core workers on loopback, for tests: the command lines and
environment of launcher/spark_cluster.py (what vigia-stack --spark-workers runs), each daemon in a
session of its own with an empty SPARK_CONF_DIR, its log in its directory. Ready once the master's
JSON (`/json/` of its web UI) lists every worker ALIVE; stopped by PID, a daemon's whole process
group (a worker's executors and their Python workers with it)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from launcher import spark_cluster as spark
from tests.conftest import free_port

LOOPBACK = "127.0.0.1"


@dataclass
class StandaloneCluster:
    url: str
    master_ui: str
    logs: list[Path]

    def tails(self, lines: int = 15) -> str:
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            for log in self.logs
            if log.exists()
        )


def _stop(process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGTERM to the process's group (its session, from start_new_session), SIGKILL to whatever
    is left of it after ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def _alive_workers(ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{ui}/json/", timeout=5) as answer:
            return spark.alive_workers(json.load(answer))
    except OSError:
        return 0


@contextmanager
def standalone_cluster(
    workdir: Path, workers: int = 1, timeout: float = 120.0
) -> Iterator[StandaloneCluster]:
    home = spark.pyspark_home()
    assert home is not None, "pyspark is not installed"
    port, ui_port = free_port(), free_port()
    url = spark.master_url(LOOPBACK, port)
    daemons = [spark.master(home, LOOPBACK, port, ui_port, workdir / "master", workdir / "conf")]
    daemons += [
        spark.worker(home, n, url, LOOPBACK, free_port(), workdir / f"worker-{n}", workdir / "conf")
        for n in range(1, workers + 1)
    ]
    (workdir / "conf").mkdir(parents=True, exist_ok=True)  # empty: no machine's spark-defaults
    cluster = StandaloneCluster(url, f"http://{LOOPBACK}:{ui_port}", [])
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for daemon in daemons:
            log = workdir / f"{daemon.name}.log"
            cluster.logs.append(log)
            with log.open("wb") as out:
                processes.append(
                    subprocess.Popen(
                        daemon.argv,
                        env={**os.environ, **daemon.env},
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + timeout
        while _alive_workers(cluster.master_ui) < workers:
            exited = [p.args[1] for p in processes if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                raise RuntimeError(
                    f"Spark standalone cluster not up ({exited or 'timeout'}):\n{cluster.tails()}"
                )
            time.sleep(0.5)
        yield cluster
    finally:
        for process in reversed(processes):  # workers (and their executors) first
            _stop(process)
