"""Records the driver's REST account of its executors (`/api/v1/applications/<id>/executors` and
`/allexecutors` of the Spark UI) for the unit tests of `ingest.spark_health`:

    python -m tests.ingest.record_spark_rest tests/fixtures/spark-rest

On a standalone master with two one-core workers (`tests.spark_standalone`): ``healthy-*`` after
a job one of whose tasks failed once (retried, so the job succeeds); ``lost-*`` after executor 1
was killed (SIGKILL, as the kernel's OOM killer would) and its worker started a replacement, and
another job ran. Then ``local-*``: the same API of a local[2] session, where the driver runs the
tasks. Takes about a minute.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pyspark import TaskContext
from pyspark.sql import SparkSession

from tests.spark_standalone import standalone_cluster
from vigia.ingest.spark_session import start_session


def rest(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


def api(spark: SparkSession) -> str:
    context = spark.sparkContext
    return f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}"


def record(spark: SparkSession, out: Path, name: str) -> None:
    for what in ("executors", "allexecutors"):
        document = rest(f"{api(spark)}/{what}")
        (out / f"{name}-{what}.json").write_text(json.dumps(document, indent=1) + "\n")


def wait_for(what: str, check: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} after {timeout:g} s")
        time.sleep(1)


def active_executors(spark: SparkSession) -> list[str]:
    return [e["id"] for e in rest(f"{api(spark)}/executors") if e["id"] != "driver"]


def fail_first_attempt(index: int, rows: Iterator[int]) -> Iterator[int]:
    context = TaskContext.get()
    if index == 0 and context is not None and context.attemptNumber() == 0:
        raise RuntimeError("recorded failure: first attempt of partition 0")
    return rows


def executor_pid(app_id: str, executor: str) -> int:
    """The JVM of ``executor``, a child of a worker this script started."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"CoarseGrainedExecutorBackend" in b" ".join(argv)
            and app_id.encode() in argv
            and argv[argv.index(b"--executor-id") + 1] == executor.encode()
        ):
            return int(entry.name)
    raise RuntimeError(f"executor {executor} of {app_id} not found")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with (
        tempfile.TemporaryDirectory(prefix="spark-rest-") as workdir,
        standalone_cluster(Path(workdir), workers=2) as cluster,
    ):
        spark = start_session(
            "vigia-spark-rest",
            {
                "spark.master": cluster.url,
                "spark.cores.max": "2",
                "spark.executor.memory": "512m",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.ui.showConsoleProgress": "false",
            },
        )
        try:
            context = spark.sparkContext
            wait_for("two executors", lambda: len(active_executors(spark)) == 2)
            context.parallelize(range(40), 4).mapPartitionsWithIndex(fail_first_attempt).count()
            record(spark, out, "healthy")
            os.kill(executor_pid(context.applicationId, "1"), signal.SIGKILL)
            wait_for("replacement executor", lambda: "2" in active_executors(spark))
            wait_for("two executors", lambda: len(active_executors(spark)) == 2)
            context.parallelize(range(40), 4).count()
            record(spark, out, "lost")
        finally:
            spark.stop()
    spark = start_session(
        "vigia-spark-rest-local",
        {"spark.master": "local[2]", "spark.ui.showConsoleProgress": "false"},
    )
    try:
        spark.sparkContext.parallelize(range(40), 4).count()
        record(spark, out, "local")
    finally:
        spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
