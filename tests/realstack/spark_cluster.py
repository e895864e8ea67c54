"""A Spark standalone cluster from PySpark's own distribution (the pyspark package directory is a
SPARK_HOME): a master and one-core workers on free loopback ports, each worker with its own work
and local directories, its executors in their own JVMs. The master is ready when the workers it
lists in its JSON (`/json/` of its web UI) are ALIVE; everything is stopped by process group, so
that no executor or Python worker outlives its worker.

The master's REST submission server is off: it listens on a fixed port (6066), and the job is
submitted in client mode anyway."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port
from tests.realstack.process import LoggedProcess, StartError

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
ELECTED = "I have been elected leader"
LOOPBACK = "127.0.0.1"
# The JIT's first tier only, and the serial collector: a master or worker that starts under the
# harness's load spends half the CPU it would with C2 compiling behind it (measured: 4 CPU-s
# instead of 9 each), and it serves a few RPCs, not a hot loop. Tests give executors the same.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def pyspark_home() -> Path:
    """PySpark's package directory: bin/spark-class and the jars of a Spark distribution."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class SparkCluster:
    def __init__(
        self, spark_home: Path, workdir: Path, workers: int = 2, worker_memory: str = "1g"
    ) -> None:
        self.home = spark_home
        self.workdir = workdir
        self.master_port = free_port()
        self.master_ui_port = free_port()
        self.worker_count = workers
        self.worker_memory = worker_memory
        self.master: LoggedProcess | None = None
        self.workers: list[LoggedProcess] = []

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    @property
    def json_url(self) -> str:
        return f"http://{LOOPBACK}:{self.master_ui_port}/json/"

    def start(self, timeout: float = 180.0) -> None:
        self.master = self._process(
            "spark-master",
            [
                MASTER_CLASS,
                *("--host", LOOPBACK),
                *("--port", str(self.master_port)),
                *("--webui-port", str(self.master_ui_port)),
            ],
            self.workdir / "master",
        )
        self.master.launch()
        self.master.wait_for_line(ELECTED, timeout)
        for n in range(1, self.worker_count + 1):
            directory = self.workdir / f"worker-{n}"
            worker = self._process(
                f"spark-worker-{n}",
                [
                    WORKER_CLASS,
                    self.url,
                    *("--host", LOOPBACK),
                    *("--webui-port", str(free_port())),
                    *("--cores", "1"),
                    *("--memory", self.worker_memory),
                    *("--work-dir", str(directory / "work")),
                ],
                directory,
            )
            worker.launch()
            self.workers.append(worker)
        self.wait_for_workers(timeout)

    def state(self) -> dict[str, Any]:
        """The master's own account of the cluster: workers, cores, applications."""
        document: dict[str, Any] = httpx.get(self.json_url, timeout=5).json()
        return document

    def wait_for_workers(self, timeout: float) -> None:
        """Until the master lists every worker ALIVE; a worker that exits fails at once."""
        deadline = time.monotonic() + timeout
        alive = 0
        while time.monotonic() < deadline:
            for worker in self.workers:
                if not worker.running:
                    raise StartError(f"{worker.name} exited: {worker.tail()}")
            try:
                alive = sum(w["state"] == "ALIVE" for w in self.state()["workers"])
            except httpx.HTTPError:
                alive = 0
            if alive == self.worker_count:
                return
            time.sleep(0.5)
        raise StartError(
            f"{alive} of {self.worker_count} Spark workers ALIVE after {timeout:g} s: "
            + " | ".join(w.tail(5) for w in self.workers)
        )

    def close(self) -> None:
        """Workers first (each with its executors), then the master."""
        for worker in self.workers:
            worker.stop_group(30)
        if self.master is not None:
            self.master.stop_group(30)

    def logs(self) -> Iterable[LoggedProcess]:
        return [p for p in (self.master, *self.workers) if p is not None]

    def _process(self, name: str, args: list[str], directory: Path) -> LoggedProcess:
        conf = directory / "conf"  # empty: no spark-defaults.conf of the machine's
        conf.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "SPARK_HOME": str(self.home),
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOCAL_DIRS": str(directory / "local"),
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }
        return LoggedProcess(
            name, [str(self.home / "bin" / "spark-class"), *args], directory / f"{name}.out", env
        )
