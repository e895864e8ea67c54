"""A Spark standalone cluster from PySpark's own distribution (the pyspark package directory is a
SPARK_HOME), run as plain processes: the command line and environment of a master and of one-core
workers, and the master's account of its workers (`/json/` of its web UI). Pure: vigia-stack
(launcher/plan.py) and the real-stack test harness start what this describes.

The master's REST submission server is off: it listens on a fixed port (6066), and the ingest job
is submitted in client mode anyway."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# The master's log line once it serves (a single master is its own leader).
ELECTED = "I have been elected leader"
# The JIT's first tier only, and the serial collector: a master or worker that starts on a loaded
# machine spends half the CPU it would with C2 compiling behind it (measured: 4 CPU-s instead of 9
# each), and it serves a few RPCs, not a hot loop.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DAEMON_MEMORY = "256m"
WORKER_MEMORY = "1g"  # what executors get; Spark's default executor memory (1g) fits


@dataclass(frozen=True)
class Daemon:
    """A master or worker: its command line, the variables it needs on top of the environment,
    and its web UI's port (its JSON at `/json/`)."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    ui_port: int


def pyspark_home() -> Path | None:
    """PySpark's package directory (bin/spark-class and a distribution's jars), without importing
    it; None when pyspark is not installed."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent


def master_url(host: str, port: int) -> str:
    return f"spark://{host}:{port}"


def master(
    home: Path, host: str, port: int, ui_port: int, directory: Path, conf: Path | None = None
) -> Daemon:
    args = (MASTER_CLASS, "--host", host, "--port", str(port), "--webui-port", str(ui_port))
    return _daemon("spark-master", home, args, host, ui_port, directory, conf)


def worker(
    home: Path,
    number: int,
    master: str,
    host: str,
    ui_port: int,
    directory: Path,
    conf: Path | None = None,
    memory: str = WORKER_MEMORY,
) -> Daemon:
    """Worker `number` (from 1) of `master`'s spark://… URL: one core, `memory` for executors,
    its own work directory (executors' files and logs) under `directory`."""
    args = (
        WORKER_CLASS,
        master,
        *("--host", host),
        *("--webui-port", str(ui_port)),
        *("--cores", "1"),
        *("--memory", memory),
        *("--work-dir", str(directory / "work")),
    )
    return _daemon(f"spark-worker-{number}", home, args, host, ui_port, directory, conf)


def alive_workers(state: Mapping[str, Any]) -> int:
    """How many workers the master's JSON lists ALIVE (dead ones stay listed a while)."""
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def _daemon(
    name: str,
    home: Path,
    args: tuple[str, ...],
    host: str,
    ui_port: int,
    directory: Path,
    conf: Path | None,
) -> Daemon:
    env = {
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": host,
        "SPARK_LOCAL_DIRS": str(directory / "local"),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        # A deployment's SPARK_CONF_DIR applies unless the caller gives one (the tests: empty).
        **({"SPARK_CONF_DIR": str(conf)} if conf is not None else {}),
    }
    return Daemon(name, (str(home / "bin" / "spark-class"), *args), env, ui_port)
