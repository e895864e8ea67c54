"""A crash in the exporter's native code leaves each thread's Python stack in its log, and a test
waiting on a crashed exporter says so at once."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.conftest import start_mock_cluster
from tests.exporter.live import exporter_process, wait_for


def test_a_segfault_leaves_every_thread_stack_in_the_log_and_a_waiting_test_says_so(
    tmp_path: Path,
) -> None:
    cluster = start_mock_cluster()
    assert cluster is not None
    args = ("--bootstrap-servers", cluster.bootstrap_servers, "--no-probe")
    with exporter_process(tmp_path / "exporter.log", *args) as exporter:
        assert exporter.process is not None
        exporter.process.send_signal(signal.SIGSEGV)
        with pytest.raises(AssertionError, match=r"^the exporter exited with -11; its last lines"):
            wait_for(lambda: exporter.get("/readyz"), 60, "an answer")
        log = exporter.log_text()
    assert "Fatal Python error: Segmentation fault" in log
    # The uvicorn thread, the collection loop, librdkafka's callbacks: more than one stack.
    assert log.count("Thread 0x") + log.count("Current thread 0x") > 1, log
