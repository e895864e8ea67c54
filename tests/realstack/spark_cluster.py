"""The real-stack harness's Spark standalone cluster: launcher/spark_cluster.py's master and
one-core workers (what vigia-stack --spark-workers runs) on free loopback ports, each with an empty
SPARK_CONF_DIR of its own. The master is ready when its JSON (`/json/` of its web UI) lists every
worker ALIVE; everything is stopped by process group, so that no executor or Python worker
outlives its worker."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from launcher import spark_cluster as spark
from tests.conftest import free_port
from tests.realstack.process import LoggedProcess, StartError

LOOPBACK = "127.0.0.1"


def pyspark_home() -> Path:
    """PySpark's package directory: bin/spark-class and the jars of a Spark distribution."""
    home = spark.pyspark_home()
    assert home is not None, "pyspark is not installed"
    return home


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
        return spark.master_url(LOOPBACK, self.master_port)

    @property
    def json_url(self) -> str:
        return f"http://{LOOPBACK}:{self.master_ui_port}/json/"

    def start(self, timeout: float = 180.0) -> None:
        directory = self.workdir / "master"
        daemon = spark.master(
            self.home,
            LOOPBACK,
            self.master_port,
            self.master_ui_port,
            directory,
            directory / "conf",
        )
        self.master = self._process(daemon, directory)
        self.master.launch()
        self.master.wait_for_line(spark.ELECTED, timeout)
        for n in range(1, self.worker_count + 1):
            directory = self.workdir / f"worker-{n}"
            daemon = spark.worker(
                self.home,
                n,
                self.url,
                LOOPBACK,
                free_port(),
                directory,
                directory / "conf",
                self.worker_memory,
            )
            worker = self._process(daemon, directory)
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
                alive = spark.alive_workers(self.state())
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

    @staticmethod
    def _process(daemon: spark.Daemon, directory: Path) -> LoggedProcess:
        conf = directory / "conf"  # empty: no spark-defaults.conf of the machine's
        conf.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **daemon.env}
        return LoggedProcess(daemon.name, list(daemon.argv), directory / f"{daemon.name}.out", env)
