"""`python -m launcher.keep_running --name NAME -- COMMAND...`: run COMMAND and start it again when
it crashes, as compose's `restart: unless-stopped` does for the same services.

honcho (launcher/supervisor.py) stops the whole stack when any of its processes exits. For the
components that are safe to restart (launcher/plan.py, KEEP_RUNNING) this wrapper is that process,
and it exits only when a restart would not help:

- asked to stop: SIGTERM or SIGINT is passed on to the component, and the wrapper then ends as the
  component ended (its exit code, or death by the same signal). The supervisor's stop is unchanged:
  its SIGTERM reaches the component through the wrapper, its SIGKILL to the process group after the
  stop timeout reaches both, and a component that stopped cleanly still counts as a clean stop.
- a clean exit (0) or death by SIGHUP, SIGINT, SIGTERM or SIGPIPE: somebody stopped the component
  itself (systemd's Restart=on-failure draws the same line).
- exit code 2, invalid configuration: every start would fail the same way. The wrapper says so once
  and exits 2, so vigia-stack stops and reports it as it always has; a stack left running without
  its exporter would only be noticed once VigiaExporterDown fires.

Anything else is a crash — a signal such as SIGSEGV or SIGABRT (librdkafka), SIGKILL (the OOM
killer), any other exit code (an uncaught exception): one log line, then the component starts again
after a delay that doubles from 1 s up to 30 s and starts over from 1 s once a run lasted a minute.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType

from common.logs import setup_logging

log = logging.getLogger("vigia-stack.keep-running")

# Every Vigía console script's exit code for invalid configuration (docs/development.md).
CONFIG_ERROR = 2
# Deaths by these signals are a stop somebody asked for, not a crash.
STOP_SIGNALS = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE})
# What honcho (SIGTERM) and a terminal (SIGINT) send to ask for a stop.
FORWARDED = (signal.SIGTERM, signal.SIGINT)
# A stop asked for during the delay before a restart ends the wait within this long.
POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Backoff:
    first: float = 1.0
    cap: float = 30.0
    # A run at least this long was healthy: the crash that ends it waits `first` again.
    stable_after: float = 60.0

    def crashes_in_a_row(self, before: int, ran_for: float) -> int:
        """Crashes in a row, counting the one that ended a run of `ran_for` seconds."""
        return 1 if ran_for >= self.stable_after else before + 1

    def delay(self, crashes_in_a_row: int) -> float:
        """Seconds to wait before the restart that follows that many crashes in a row (≥ 1)."""
        return float(min(self.cap, self.first * 2 ** (crashes_in_a_row - 1)))


def is_crash(returncode: int) -> bool:
    """Whether a component that ended with `returncode` (subprocess's: -N for death by signal N)
    unasked is started again."""
    if returncode < 0:
        return -returncode not in STOP_SIGNALS
    return returncode not in (0, CONFIG_ERROR)


def describe(returncode: int) -> str:
    if returncode >= 0:
        return f"code {returncode}"
    try:
        return f"signal {signal.Signals(-returncode).name}"
    except ValueError:  # a real-time signal has no name
        return f"signal {-returncode}"


class KeepRunning:
    """The process part: starts the command, waits, and asks the pure functions above."""

    def __init__(self, name: str, command: Sequence[str], backoff: Backoff) -> None:
        self._name = name
        self._command = list(command)
        self._backoff = backoff
        self._stop: int | None = None  # the signal that asked for a stop
        self._child: subprocess.Popen[bytes] | None = None

    def run(self) -> int:
        """Returns how the last run of the command ended (subprocess's return code), or 0 when a
        stop came while no run was under way."""
        for sig in FORWARDED:
            signal.signal(sig, self._on_signal)
        restarts = crashes = 0
        while True:
            started = time.monotonic()
            self._child = subprocess.Popen(self._command)
            if self._stop is not None:
                # The stop came while the command was being started, before the handler could see
                # the new process; a second delivery of the same signal is harmless.
                self._child.send_signal(self._stop)
            code = self._child.wait()
            self._child = None
            if self._stop is not None or not is_crash(code):
                if code == CONFIG_ERROR and self._stop is None:
                    log.error(
                        "%s exited with code 2 (invalid configuration): not restarting it",
                        self._name,
                    )
                return code
            crashes = self._backoff.crashes_in_a_row(crashes, time.monotonic() - started)
            restarts += 1
            delay = self._backoff.delay(crashes)
            log.warning(
                "%s exited with %s; restarting in %g s (restart %d)",
                self._name,
                describe(code),
                delay,
                restarts,
            )
            if not self._wait(delay):
                return 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop = signum
        child = self._child
        if child is not None:
            child.send_signal(signum)  # a no-op once the child has been reaped

    def _wait(self, seconds: float) -> bool:
        """False when a stop came first. time.sleep resumes after a signal (PEP 475), so the wait
        is cut into short sleeps."""
        deadline = time.monotonic() + seconds
        while self._stop is None and time.monotonic() < deadline:
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        return self._stop is None


def exit_like(returncode: int) -> int:
    """End this process as the command's last run ended: the same exit code, or death by the same
    signal, which the supervisor tells apart (a death by SIGTERM is a clean stop, 143 is not)."""
    if returncode >= 0:
        return returncode
    sig = -returncode
    signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.kill(os.getpid(), sig)
    return 128 + sig  # a signal whose default action does not end the process


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m launcher.keep_running",
        description="Run COMMAND; start it again when it crashes (see the module docstring).",
        usage="%(prog)s --name NAME -- COMMAND [ARG ...]",
    )
    parser.add_argument("--name", required=True, help="the component's name, for the log lines")
    argv = list(argv)
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        parser.error("give the command after --")
    split = argv.index("--")
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    args, command = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging()
    return exit_like(KeepRunning(args.name, command, Backoff()).run())


if __name__ == "__main__":
    sys.exit(main())
