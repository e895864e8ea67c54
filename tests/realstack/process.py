"""A JVM (or any server) started by the harness: its output in a log file, readiness read from
that log, stopped by PID with SIGTERM and, after a deadline, SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


class StartError(RuntimeError):
    """A process exited or did not become ready; the message carries its last log lines."""


class LoggedProcess:
    def __init__(self, name: str, argv: Sequence[str], log: Path, env: Mapping[str, str]) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.env = dict(env)
        self._process: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process else None

    def launch(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            # A session of its own: a Ctrl-C of the test run reaches the harness, which stops the
            # process by PID, instead of killing it mid-write.
            self._process = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )

    def wait_for_line(self, text: str, timeout: float) -> None:
        """Until `text` appears in the log written since the last launch."""
        deadline = time.monotonic() + timeout
        while True:
            if text in self.new_output():
                return
            if not self.running:
                raise StartError(f"{self.name} exited: {self.tail()}")
            if time.monotonic() > deadline:
                raise StartError(f"{self.name}: no {text!r} after {timeout:g} s: {self.tail()}")
            time.sleep(0.2)

    def new_output(self) -> str:
        with self.log.open("rb") as f:
            f.seek(self._log_offset)
            return f.read().decode(errors="replace")

    def tail(self, lines: int = 20) -> str:
        if not self.log.exists():
            return "(no log)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 60.0) -> None:
        self.signal(signal.SIGTERM)
        self.wait_exit(timeout)

    def signal(self, signum: int) -> None:
        if self.running and self._process is not None:
            os.kill(self._process.pid, signum)

    def wait_exit(self, timeout: float) -> None:
        process = self._process
        if process is None:
            return
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
