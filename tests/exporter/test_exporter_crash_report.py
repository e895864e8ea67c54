"""A crash in the exporter's native code leaves each thread's Python stack in its log, and so does
`kill -USR1` on a running exporter, which goes on; a test waiting on a crashed exporter says so at
once, and a test failing beside a running one shows its stacks."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.conftest import start_mock_cluster
from tests.exporter.live import exporter_process, wait_for

STACK = "most recent call first"  # faulthandler's header of each thread's stack


def _args() -> tuple[str, ...]:
    cluster = start_mock_cluster()
    assert cluster is not None
    return ("--bootstrap-servers", cluster.bootstrap_servers, "--no-probe")


def test_a_segfault_leaves_every_thread_stack_in_the_log_and_a_waiting_test_says_so(
    tmp_path: Path,
) -> None:
    args = _args()
    with exporter_process(tmp_path / "exporter.log", *args) as exporter:
        assert exporter.process is not None
        exporter.process.send_signal(signal.SIGSEGV)
        with pytest.raises(AssertionError, match=r"^the exporter exited with -11; its last lines"):
            wait_for(lambda: exporter.get("/readyz"), 60, "an answer")
        log = exporter.log_text()
    assert "Fatal Python error: Segmentation fault" in log
    # The uvicorn thread, the collection loop, librdkafka's callbacks: more than one stack.
    assert log.count(STACK) > 1, log


def test_usr1_writes_the_stacks_and_the_exporter_goes_on_and_a_failing_test_shows_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args()
    with pytest.raises(RuntimeError), exporter_process(tmp_path / "log", *args) as exporter:
        assert exporter.process is not None
        exporter.process.send_signal(signal.SIGUSR1)
        wait_for(lambda: STACK in exporter.log_text(), 30, "the stacks in the log")
        assert exporter.get("/healthz").status_code == 200
        capsys.readouterr()
        raise RuntimeError("the test failed here")
    shown = capsys.readouterr().err
    assert shown.startswith("the exporter's last lines and stacks:")
    assert shown.count(STACK) > 2, shown  # the test's own signal's, then the failure's
