"""Exactly once across kill -9: `vigia-ingest run` as a separate process (its own process group,
mock cluster reached over loopback), killed with SIGKILL while batches are in flight, then restarted
until the backlog is drained."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from ingest.schema import MEASURE_KEY_COLUMNS
from tests.conftest import MockCluster
from tests.ingest.conftest import backfill, create_topic, utc_day

pytestmark = pytest.mark.spark

STARTUP_TIMEOUT_S = 180.0


def ingest_command(
    cluster: MockCluster, base: Path, *extra: str, master: str = "local[2]", batch: int = 4000
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ingest.cli",
        "run",
        "--bootstrap-servers",
        cluster.bootstrap_servers,
        "--output",
        str(base / "measure"),
        "--quarantine",
        str(base / "quarantine"),
        "--checkpoint",
        str(base / "checkpoint"),
        "--max-offsets-per-trigger",
        str(batch),
        "--trigger-interval",
        "0.2s",
        "--metrics-port",
        "0",
        "--spark-master",
        master,
        *extra,
    ]


def log_entries(checkpoint: Path, log: str) -> set[int]:
    """Batch ids in the checkpoint's offset log (planned) or commit log (done)."""
    folder = checkpoint / log
    if not folder.is_dir():
        return set()
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()}


def wait_for(
    condition: Callable[[], object],
    process: subprocess.Popen[bytes],
    what: str,
    timeout: float = STARTUP_TIMEOUT_S,
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"vigia-ingest exited early while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_kill_9_during_batches_then_restart_stores_every_measure_once(
    mock_cluster: MockCluster, tmp_path: Path
) -> None:
    create_topic(mock_cluster.bootstrap_servers)
    manifest = backfill(
        mock_cluster.bootstrap_servers,
        tmp_path / "manifest.json",
        day=utc_day(1),
        meters=60,
        malformed_ratio=0.01,
    )
    checkpoint = tmp_path / "checkpoint"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    rng = random.Random(20261121)
    interrupted = 0
    for attempt in range(2):
        done_before = len(log_entries(checkpoint, "commits"))
        with open(tmp_path / f"run-{attempt}.log", "wb") as output:
            process = subprocess.Popen(
                ingest_command(mock_cluster, tmp_path),
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group: the JVM and workers die with it
            )
            try:
                # Kill while a batch runs: after one more batch completed, once the next one
                # is planned (in the offset log, not yet in the commit log), at a random moment.
                wait_for(
                    lambda before=done_before: len(log_entries(checkpoint, "commits")) > before,
                    process,
                    "a completed batch",
                )
                wait_for(
                    lambda: log_entries(checkpoint, "offsets") - log_entries(checkpoint, "commits"),
                    process,
                    "the next batch to start",
                )
                time.sleep(rng.uniform(0.0, 1.0))
            finally:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        if log_entries(checkpoint, "offsets") - log_entries(checkpoint, "commits"):
            interrupted += 1
    assert interrupted >= 1, "no kill landed inside a batch: the test proved nothing"

    final = subprocess.run(
        ingest_command(mock_cluster, tmp_path, "--available-now"),
        capture_output=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert final.returncode == 0, final.stderr.decode()[-3000:]

    measures = ds.dataset(tmp_path / "measure", partitioning="hive").to_table()
    keys = measures.group_by(list(MEASURE_KEY_COLUMNS)).aggregate([])
    assert keys.num_rows == manifest.valid_total
    assert measures.num_rows == keys.num_rows
    quarantine = ds.dataset(tmp_path / "quarantine").to_table()
    positions = Counter(
        zip(
            quarantine.column("kafka_partition").to_pylist(),
            quarantine.column("kafka_offset").to_pylist(),
            strict=True,
        )
    )
    assert len(positions) == manifest.malformed_total
    assert max(positions.values()) == 1
    assert not any((tmp_path / "measure" / "_staging").iterdir())
