"""`vigia-ingest run` as a separate process (its own process group, the mock cluster reached over
loopback), for the tests that kill it with SIGKILL mid-batch (test_kill_cluster.py): its command
line (the catch-up benchmarks' too), the batches in its checkpoint, and waits that fail when it
exits early."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

STARTUP_TIMEOUT_S = 180.0


def ingest_command(
    servers: str, base: Path, *extra: str, master: str = "local[2]", batch: int = 4000
) -> list[str]:
    """`vigia-ingest run` on `servers` with its output, quarantine and checkpoint under `base`."""
    return [
        sys.executable,
        "-m",
        "vigia.ingest.cli",
        "run",
        "--bootstrap-servers",
        servers,
        "--output",
        str(base / "measure"),
        "--quarantine",
        str(base / "quarantine"),
        "--checkpoint",
        str(base / "checkpoint"),
        "--max-offsets-per-trigger",
        str(batch),
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
