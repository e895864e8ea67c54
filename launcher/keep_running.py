"""`python -m vigia.launcher.keep_running --name NAME [--health-url URL] -- COMMAND...`: run
COMMAND, start it again when it crashes, and end only when asked to stop, as compose's `restart:
unless-stopped`.

honcho (launcher/supervisor.py) stops the whole stack when any of its processes exits. Every
component of vigia-stack runs under this wrapper (launcher/plan.py), so a component that dies never
takes the others with it: a crashed ingest job leaves Prometheus and Alertmanager running to page
about it (IngestQueryDown). What happens when the command ends (`after_exit`):

- asked to stop: SIGTERM or SIGINT is passed on to the component, and the wrapper then ends as the
  component ended (its exit code, or death by the same signal). The supervisor's stop is unchanged:
  its SIGTERM reaches the component through the wrapper (the ingest job still finishes its batch
  and then stops its Spark JVM), its SIGKILL to the process group after the stop timeout reaches
  both, and a component that stopped cleanly still counts as a clean stop.
- a crash — a signal such as SIGSEGV or SIGABRT (librdkafka), SIGKILL (the OOM killer, `kill -9`),
  any exit code but 0 and 2 (an uncaught exception, an unreachable cluster): one log line, what the
  run left in the process group (the ingest job's Spark JVM and Python workers) is stopped, and the
  component starts again after a delay that doubles from 1 s up to 30 s and starts over from 1 s
  once a run lasted a minute. One more line once the restarted component answers its health URL.
- exit code 2, invalid configuration: every start would fail the same way. The wrapper says so once
  and the component stays down; the wrapper waits for the stack's stop and then exits 2, which makes
  vigia-stack's exit status say that not everything stopped cleanly.
- a clean exit (0) or death by SIGHUP, SIGINT, SIGTERM or SIGPIPE that the wrapper did not pass on:
  somebody stopped the component itself (systemd's Restart=on-failure draws the same line). It
  stays down with a line saying so until the stack stops.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from vigia.common.logs import setup_logging

log = logging.getLogger("vigia-stack.keep-running")

# Every Vigía console script's exit code for invalid configuration (docs/development.md).
CONFIG_ERROR = 2
# Deaths by these signals are a stop somebody asked for, not a crash.
STOP_SIGNALS = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE})
# What honcho (SIGTERM) and a terminal (SIGINT) send to ask for a stop.
FORWARDED = (signal.SIGTERM, signal.SIGINT)
# A stop asked for while no run is under way ends the wait within this long.
POLL_SECONDS = 0.1
# How often a restarted component's health URL is asked whether it answers yet.
HEALTH_POLL_SECONDS = 1.0
# What a crashed run left behind gets this long to go after SIGTERM, then SIGKILL: a Spark JVM
# whose driver died runs its shutdown hooks first (seconds).
LEFTOVER_GRACE_SECONDS = 10.0


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


class Next(enum.Enum):
    """What the wrapper does once a run of the command has ended."""

    END = "end"  # asked to stop: end as the component ended
    RESTART = "restart"  # a crash: start it again after the backoff delay
    STAY_DOWN = "stay down"  # a restart would not help: wait for the stack's stop


def is_crash(returncode: int) -> bool:
    """Whether a component that ended with `returncode` (subprocess's: -N for death by signal N)
    unasked is started again."""
    if returncode < 0:
        return -returncode not in STOP_SIGNALS
    return returncode not in (0, CONFIG_ERROR)


def after_exit(returncode: int, stop_asked: bool) -> Next:
    if stop_asked:
        return Next.END
    return Next.RESTART if is_crash(returncode) else Next.STAY_DOWN


def describe(returncode: int) -> str:
    if returncode >= 0:
        return f"code {returncode}"
    try:
        return f"signal {signal.Signals(-returncode).name}"
    except ValueError:  # a real-time signal has no name
        return f"signal {-returncode}"


def restart_line(name: str, returncode: int, delay: float, restarts: int) -> str:
    return (
        f"{name} exited with {describe(returncode)}; starting again in {delay:g} s "
        f"(restart {restarts})"
    )


def down_line(name: str, returncode: int) -> str:
    """Why a component that ended unasked, without crashing, is not started again."""
    if returncode == CONFIG_ERROR:
        why = "exited with code 2 (invalid configuration): not starting it again"
        after = "fix the configuration, then restart vigia-stack"
    else:
        why = f"exited with {describe(returncode)}, stopped by something else than vigia-stack"
        after = "restart vigia-stack to run it again"
    return f"{name} {why}; everything else keeps running without it ({after})"


class KeepRunning:
    """The process part: starts the command, waits, and asks the pure functions above."""

    def __init__(
        self, name: str, command: Sequence[str], backoff: Backoff, health_url: str | None = None
    ) -> None:
        self._name = name
        self._command = list(command)
        self._backoff = backoff
        self._health_url = health_url
        self._stop: int | None = None  # the signal that asked for a stop
        self._child: subprocess.Popen[bytes] | None = None

    def run(self) -> int:
        """Returns how the last run of the command ended (subprocess's return code), or 0 when a
        stop came during the delay before a restart."""
        for sig in FORWARDED:
            signal.signal(sig, self._on_signal)
        restarts = crashes = 0
        while True:
            started = time.monotonic()
            code = self._run_once(announce=restarts > 0)
            step = after_exit(code, self._stop is not None)
            if step is Next.END:
                return code
            if step is Next.STAY_DOWN:
                level = logging.ERROR if code == CONFIG_ERROR else logging.WARNING
                log.log(level, "%s", down_line(self._name, code))
                _stop_leftovers(self._name)
                self._wait(float("inf"))
                return code
            crashes = self._backoff.crashes_in_a_row(crashes, time.monotonic() - started)
            restarts += 1
            delay = self._backoff.delay(crashes)
            log.warning("%s", restart_line(self._name, code, delay, restarts))
            _stop_leftovers(self._name)
            if not self._wait(delay):
                return 0

    def _run_once(self, announce: bool) -> int:
        """One run of the command, to its end. `announce`: say when it answers its health URL."""
        self._child = subprocess.Popen(self._command)
        if self._stop is not None:
            # The stop came while the command was being started, before the handler could see
            # the new process; a second delivery of the same signal is harmless.
            self._child.send_signal(self._stop)
        waiting = announce
        if waiting and self._health_url is None:
            log.info("%s running again", self._name)
            waiting = False
        while True:
            try:
                code = self._child.wait(timeout=HEALTH_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if waiting and self._stop is None and _answers(self._health_url):
                    log.info("%s running again (%s answers)", self._name, self._health_url)
                    waiting = False
        self._child = None
        return code

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


def _answers(url: str | None) -> bool:
    if url is None:
        return False
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return 200 <= int(response.status) < 300
    except OSError:
        return False


def _group_leftovers() -> list[int]:
    """The other live processes of the process group this wrapper leads: what the last run left
    behind (a dead driver's Spark JVM and Python workers keep the group). Nothing when the wrapper
    does not lead its group (started by hand from a program): that group is somebody else's."""
    me = os.getpid()
    if os.getpgrp() != me:
        return []
    found = []
    with contextlib.suppress(OSError):  # no /proc: not Linux
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] not in ("Z", "X") and int(fields[2]) == me:
                found.append(int(entry.name))
    return found


def _stop_leftovers(name: str, grace: float = LEFTOVER_GRACE_SECONDS) -> None:
    """SIGTERM to what the last run left behind, SIGKILL to what is still there after `grace`, so
    that a restarted ingest job never shares its checkpoint with the JVM of the run before."""
    alive = _group_leftovers()
    if not alive:
        return
    log.warning("%s left %d process(es) behind: stopping them", name, len(alive))
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        alive = [pid for pid in alive if pid in _group_leftovers()]
        if not alive:
            return
        time.sleep(POLL_SECONDS)
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def exit_like(returncode: int) -> int:
    """End this process as the command's last run ended: the same exit code, or death by the same
    signal, which the supervisor tells apart (a death by SIGTERM is a clean stop, 143 is not)."""
    if returncode >= 0:
        return returncode
    sig = -returncode
    with contextlib.suppress(OSError, ValueError):  # SIGKILL's and SIGSTOP's cannot be set
        signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.kill(os.getpid(), sig)
    return 128 + sig  # a signal whose default action does not end the process


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m vigia.launcher.keep_running",
        description="Run COMMAND; start it again when it crashes (see the module docstring).",
        usage="%(prog)s --name NAME [--health-url URL] -- COMMAND [ARG ...]",
    )
    parser.add_argument("--name", required=True, help="the component's name, for the log lines")
    parser.add_argument(
        "--health-url",
        help="answers 2xx once the component serves: a restarted component is said to run again "
        "then (without it: as soon as it is started)",
    )
    argv = list(argv)
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        parser.error("give the command after --")
    split = argv.index("--")
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    args, command = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging()
    return exit_like(KeepRunning(args.name, command, Backoff(), args.health_url).run())


if __name__ == "__main__":
    sys.exit(main())
