"""A Spark standalone master and one-core workers on loopback, for tests: the command lines and
environment of launcher/spark_cluster.py (what vigia-stack --spark-workers runs), each daemon in a
session of its own with an empty SPARK_CONF_DIR, its log in its directory. Ready once the master's
JSON (`/json/` of its web UI) lists every worker ALIVE; stopped by PID, a daemon's whole process
group (a worker's executors and their Python workers with it). A worker's executors are found by
PID too (`executors`), for tests that kill one."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import free_port
from vigia.launcher import spark_cluster as spark

LOOPBACK = "127.0.0.1"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


@dataclass
class StandaloneCluster:
    url: str
    master_ui: str
    logs: list[Path]
    workers: dict[str, int] = field(default_factory=dict)  # a worker's name: its JVM's PID
    master_pid: int = 0

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
    except (OSError, ValueError):  # not listening yet, or its UI answered before its JSON was up
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
            if daemon.name == "spark-master":  # bin/spark-class execs the JVM: same PID
                cluster.master_pid = processes[-1].pid
            else:
                cluster.workers[daemon.name] = processes[-1].pid
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


@dataclass(frozen=True)
class Executor:
    """An executor JVM a worker started for an application."""

    pid: int
    worker: str
    app_id: str
    executor_id: str


def executor_of(argv: list[str]) -> tuple[str, str] | None:
    """(application id, executor id) from an executor JVM's command line; None for any other."""
    if EXECUTOR_CLASS not in argv:
        return None
    options = dict(itertools.pairwise(argv))
    return options["--app-id"], options["--executor-id"]


def executors(cluster: StandaloneCluster) -> list[Executor]:
    """The executors running now: the workers' child processes running the executor backend
    (the worker runs its java command directly), from /proc."""
    workers = {pid: name for name, pid in cluster.workers.items()}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The parent's PID is the 2nd field after the command name, which may hold spaces.
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        ids = executor_of(argv) if parent in workers else None
        if ids is not None:
            found.append(Executor(int(entry.name), workers[parent], *ids))
    return sorted(found, key=lambda e: (e.app_id, int(e.executor_id)))
