"""launcher/keep_running.py: a crashed component starts again with a log line, after what its run
left behind is gone; a stop asked for stops it as before; a configuration error keeps it down, with
a line, until the stop."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from vigia.launcher import plan, supervisor
from vigia.launcher.keep_running import (
    Backoff,
    Next,
    after_exit,
    describe,
    down_line,
    is_crash,
    restart_line,
)

# The component: crashes by SIGSEGV while `crashes` (argv[1]) holds a number above 0, taking one
# off first; then writes its pid to argv[2] and serves until stopped. On SIGTERM it dies of it, as
# uvicorn (the exporter) does, or exits with argv[3] when one is given.
CHILD = """
import os, resource, signal, sys, time
from pathlib import Path

crashes, pid_file = Path(sys.argv[1]), Path(sys.argv[2])
left = int(crashes.read_text()) if crashes.exists() else 0
if left:
    crashes.write_text(str(left - 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
    os.kill(os.getpid(), signal.SIGSEGV)
if len(sys.argv) > 3:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(int(sys.argv[3])))
pid_file.write_text(str(os.getpid()))
while True:
    time.sleep(1)
"""


def test_crashes_are_restarted_and_stops_or_configuration_errors_are_not() -> None:
    for crash in (-signal.SIGSEGV, -signal.SIGABRT, -signal.SIGKILL, 1, 3, 137):
        assert is_crash(crash), crash
    for stop in (0, 2, -signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP, -signal.SIGPIPE):
        assert not is_crash(stop), stop


def test_only_a_stop_asked_for_ends_the_wrapper_and_only_a_crash_is_started_again() -> None:
    for code in (0, 1, 2, -signal.SIGKILL, -signal.SIGTERM, 143):
        assert after_exit(code, stop_asked=True) is Next.END, code
    for crash in (1, 137, 143, -signal.SIGKILL, -signal.SIGSEGV):
        assert after_exit(crash, stop_asked=False) is Next.RESTART, crash
    for down in (0, 2, -signal.SIGTERM, -signal.SIGHUP):
        assert after_exit(down, stop_asked=False) is Next.STAY_DOWN, down


def test_each_state_change_is_one_line_naming_the_component() -> None:
    assert restart_line("ingest", 1, 4.0, 3) == (
        "ingest exited with code 1; starting again in 4 s (restart 3)"
    )
    assert restart_line("ingest", -signal.SIGKILL, 0.5, 1) == (
        "ingest exited with signal SIGKILL; starting again in 0.5 s (restart 1)"
    )
    assert down_line("ingest", 2) == (
        "ingest exited with code 2 (invalid configuration): not starting it again; everything "
        "else keeps running without it (fix the configuration, then restart vigia-stack)"
    )
    assert down_line("simulator", 0).startswith(
        "simulator exited with code 0, stopped by something else than vigia-stack"
    )


def test_the_delay_doubles_up_to_its_cap_and_starts_over_after_a_healthy_run() -> None:
    backoff = Backoff(first=1.0, cap=30.0, stable_after=60.0)
    assert [backoff.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff.crashes_in_a_row(0, ran_for=0.2) == 1
    assert backoff.crashes_in_a_row(5, ran_for=59.0) == 6
    assert backoff.crashes_in_a_row(5, ran_for=60.0) == 1


def test_how_a_run_ended_is_said_by_signal_name_or_code() -> None:
    assert describe(-signal.SIGSEGV) == "signal SIGSEGV"
    assert describe(-signal.SIGABRT) == "signal SIGABRT"
    assert describe(1) == "code 1"
    assert describe(-(signal.SIGRTMIN + 3)) == f"signal {signal.SIGRTMIN + 3}"


def wrapper(tmp_path: Path, *child_args: str) -> list[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = [sys.executable, str(script), str(tmp_path / "crashes"), str(tmp_path / "pid")]
    return [
        sys.executable,
        "-m",
        "vigia.launcher.keep_running",
        "--name",
        "exporter",
        "--",
        *child,
        *child_args,
    ]


def start(tmp_path: Path, *child_args: str, crashes: int = 0) -> subprocess.Popen[str]:
    (tmp_path / "crashes").write_text(str(crashes))
    return subprocess.Popen(
        wrapper(tmp_path, *child_args), stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )


def serving_pid(tmp_path: Path, process: subprocess.Popen[str], timeout: float) -> int:
    """The pid of the child that serves, once it does."""
    pid_file = tmp_path / "pid"
    deadline = time.monotonic() + timeout
    while not pid_file.exists():
        assert process.poll() is None, f"the wrapper exited {process.returncode}"
        assert time.monotonic() < deadline, "no child serves"
        time.sleep(0.05)
    return int(pid_file.read_text())


def stop(process: subprocess.Popen[str]) -> str:
    """What the wrapper logged; it and its children are killed if still running."""
    if process.poll() is None:
        children = psutil.Process(process.pid).children(recursive=True)
        process.kill()  # first: it would log the children's deaths as crashes
        for child in children:
            child.kill()
    _, err = process.communicate(timeout=10)
    return err


def test_a_component_killed_by_sigsegv_is_started_again_with_a_log_line(tmp_path: Path) -> None:
    process = start(tmp_path, crashes=1)
    try:
        pid = serving_pid(tmp_path, process, timeout=15)  # after the 1 s delay
        assert psutil.Process(pid).ppid() == process.pid
        assert process.poll() is None
    finally:
        err = stop(process)
    lines = [line for line in err.splitlines() if "vigia-stack.keep-running" in line]
    assert len(lines) == 2, err
    assert lines[0].endswith(
        "WARNING vigia-stack.keep-running: exporter exited with signal SIGSEGV; "
        "starting again in 1 s (restart 1)"
    ), err
    assert lines[1].endswith("INFO vigia-stack.keep-running: exporter running again"), err


@pytest.mark.parametrize(
    ("child_args", "expected"),
    [((), -signal.SIGTERM), (("3",), 3)],
    ids=["dies-of-sigterm", "exits-3"],
)
def test_sigterm_stops_the_component_and_the_wrapper_ends_as_it_did(
    tmp_path: Path, child_args: tuple[str, ...], expected: int
) -> None:
    process = start(tmp_path, *child_args)
    try:
        pid = serving_pid(tmp_path, process, timeout=15)
        process.send_signal(signal.SIGTERM)
        began = time.monotonic()
        assert process.wait(timeout=5) == expected
        assert time.monotonic() - began < 3
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    finally:
        err = stop(process)
    assert "restart" not in err, err


def test_a_stop_during_the_delay_before_a_restart_is_a_clean_stop(tmp_path: Path) -> None:
    process = start(tmp_path, crashes=10)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the first crash's line; its restart waits 1 s
        assert "starting again in 1 s (restart 1)" in line, line
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=2) == 0
    finally:
        err = stop(process)
    assert "restart 2" not in err, err
    assert (tmp_path / "crashes").read_text() == "9"  # started once only


def test_a_configuration_error_is_said_once_and_stays_down_until_the_stop(tmp_path: Path) -> None:
    script = tmp_path / "invalid.py"
    script.write_text(
        "import sys\n"
        "sys.stderr.write('vigia-exporter: error: bad --kafka-option\\n')\n"
        "sys.exit(2)\n"
    )
    argv = [sys.executable, "-m", "vigia.launcher.keep_running", "--name", "exporter", "--"]
    process = subprocess.Popen(
        [*argv, sys.executable, str(script)], stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        assert "bad --kafka-option" in process.stderr.readline()
        line = process.stderr.readline()
        assert line.rstrip().endswith(
            "exporter exited with code 2 (invalid configuration): not starting it again; "
            "everything else keeps running without it (fix the configuration, then restart "
            "vigia-stack)"
        ), line
        with pytest.raises(subprocess.TimeoutExpired):  # down, not gone: the stack runs on
            process.wait(timeout=2)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 2  # the stop says that not everything was well
    finally:
        err = stop(process)
    assert "bad --kafka-option" not in err, "started once only"


# Forks a grandchild into the same process group that outlives it, as the ingest driver's Spark
# JVM outlives a driver killed by SIGKILL, then crashes once; the next run only serves.
FORKS = """
import os, signal, subprocess, sys, time
from pathlib import Path

crashes, pid_file, left_file = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
if crashes.read_text() == "1":
    crashes.write_text("0")
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    left_file.write_text(str(left.pid))
    os.kill(os.getpid(), signal.SIGKILL)
pid_file.write_text(str(os.getpid()))
while True:
    time.sleep(1)
"""


def test_what_a_crashed_run_left_in_its_group_is_stopped_before_the_restart(
    tmp_path: Path,
) -> None:
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    (tmp_path / "crashes").write_text("1")
    files = [str(tmp_path / n) for n in ("crashes", "pid", "left")]
    argv = [sys.executable, "-m", "vigia.launcher.keep_running", "--name", "ingest", "--"]
    # Its own process group, as under honcho: the group is the wrapper's to clean.
    process = subprocess.Popen(
        [*argv, sys.executable, str(script), *files],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        serving_pid(tmp_path, process, timeout=30)
        left = int((tmp_path / "left").read_text())
        assert not psutil.pid_exists(left) or psutil.Process(left).status() == "zombie"
    finally:
        err = stop(process)
    lines = [line for line in err.splitlines() if "keep-running" in line]
    assert lines[0].endswith("ingest exited with signal SIGKILL; starting again in 1 s (restart 1)")
    assert lines[1].endswith("ingest left 1 process(es) behind: stopping them"), err


def test_the_stack_keeps_running_while_a_crashed_exporter_restarts_and_still_stops_cleanly(
    tmp_path: Path,
) -> None:
    """Under the supervisor: the other component is not stopped by the crash, SIGTERM then stops
    everything and vigia-stack's exit status is 0, as for a stack that never crashed."""
    (tmp_path / "crashes").write_text("1")
    exporter = plan.Process(name="exporter", argv=tuple(wrapper(tmp_path)), port=1, health_path="/")
    other = plan.Process(name="other", argv=("sleep", "30"), port=2, health_path="/")
    logs = tmp_path / "logs"
    logs.mkdir()
    output = io.StringIO()

    def sigterm_once_restarted() -> None:
        deadline = time.monotonic() + 20
        while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGTERM)  # honcho handles it in this, the main, thread

    threading.Thread(target=sigterm_once_restarted, daemon=True).start()
    code = supervisor.run(
        [exporter, other], listen_address="127.0.0.1", log_dir=logs, stop_timeout=5, output=output
    )
    text = output.getvalue()
    assert (tmp_path / "pid").exists(), text
    assert code == 0, text
    restart = "exporter exited with signal SIGSEGV; starting again in 1 s (restart 1)"
    assert restart in (logs / "exporter.log").read_text()
    # The crash stopped nothing: the other component ran until the SIGTERM stopped it.
    assert text.index("SIGTERM received") < text.index("other stopped (rc=-15)"), text


def test_a_wrapper_whose_component_died_of_sigkill_during_the_stop_dies_of_it_too() -> None:
    """SIGKILL's handler cannot be set: the wrapper still ends as its component did."""
    code = "from vigia.launcher.keep_running import exit_like; exit_like(-9)"
    assert subprocess.run([sys.executable, "-c", code], timeout=10).returncode == -signal.SIGKILL


def test_a_component_down_on_its_configuration_leaves_the_rest_of_the_stack_running(
    tmp_path: Path,
) -> None:
    """Under the supervisor: the line says so, the other component runs on until SIGTERM stops
    everything, and vigia-stack's exit status says that not everything stopped cleanly."""
    script = tmp_path / "invalid.py"
    script.write_text("import sys\nsys.exit(2)\n")
    argv = (sys.executable, "-m", "vigia.launcher.keep_running", "--name", "ingest", "--")
    ingest = plan.Process(
        name="ingest", argv=(*argv, sys.executable, str(script)), port=1, health_path="/"
    )
    other = plan.Process(name="other", argv=("sleep", "30"), port=2, health_path="/")
    logs = tmp_path / "logs"
    logs.mkdir()
    output = io.StringIO()
    down = "ingest exited with code 2 (invalid configuration): not starting it again"

    def sigterm_once_down() -> None:
        log = logs / "ingest.log"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (log.exists() and down in log.read_text()):
            time.sleep(0.1)
        time.sleep(1)  # the down component's wrapper is still running: nothing was stopped
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=sigterm_once_down, daemon=True).start()
    code = supervisor.run(
        [ingest, other], listen_address="127.0.0.1", log_dir=logs, stop_timeout=5, output=output
    )
    text = output.getvalue()
    assert down in text, text
    assert code == 128 + signal.SIGTERM, text
    assert text.index(down) < text.index("SIGTERM received") < text.index("other stopped"), text
    assert "ingest stopped (rc=2)" in text, text
