"""Runs the planned processes under honcho and copies each one's output into the run directory.

honcho starts every command in its own session (process group) and relays output with a name
prefix. On SIGINT/SIGTERM (or should a process exit anyway), the others are stopped the way a
service manager stops a service (systemd's KillMode=mixed): SIGTERM to each component's own
process, then SIGKILL to each whole process group still running after the stop timeout. The
component stops its children itself: the ingest job ends its query and then its Spark JVM; a
SIGTERM to the whole group (honcho's way) would kill that JVM under the job's feet. The group
SIGKILL still reaches every grandchild of a component that does not stop.

Every component runs under launcher/keep_running.py, which starts it again after a crash and keeps
it down after a configuration error: only a stop asked for ends that process, so the stack stops
only on SIGINT/SIGTERM, never because a component died.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import honcho.manager
from honcho.printer import Message, Printer

from vigia.launcher.plan import Process, client_host, command_line

# What a stopped component left behind gets this long to go after SIGTERM.
LEFTOVER_GRACE_SECONDS = 5.0
# Components still not answering after this long are left for their logs to explain.
READY_DEADLINE_SECONDS = 600.0


class TeePrinter(Printer):  # type: ignore[misc]
    """honcho's stdout printer that also appends each process's lines to logs/<name>.log."""

    def __init__(self, output: IO[str], log_dir: Path) -> None:
        super().__init__(output)
        self._log_dir = log_dir
        self._files: dict[str, IO[str]] = {}

    def write(self, message: Any) -> None:
        super().write(message)
        name = message.name
        if name in (None, honcho.manager.SYSTEM_PRINTER_NAME):
            name = "launcher"
        data = message.data
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        if name not in self._files:
            self._files[name] = (self._log_dir / f"{name}.log").open("a", encoding="utf-8")
        stamp = message.time.isoformat(timespec="seconds")
        self._files[name].writelines(f"{stamp} {line}\n" for line in text.splitlines())
        self._files[name].flush()

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()


class ServiceManager(honcho.manager.Manager):  # type: ignore[misc]
    """honcho's manager with a service manager's stop (see the module docstring). The processes
    named in `stop_last` get their SIGTERM once all the others have exited."""

    def __init__(self, *, stop_last: frozenset[str] = frozenset(), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._stop_last = stop_last
        self._held_back = False

    def _all_stopped(self) -> bool:
        # honcho's loop asks this on every turn: the moment to stop what was held back.
        if self._held_back and all(
            "returncode" in p for n, p in self._processes.items() if n not in self._stop_last
        ):
            self._held_back = False
            self._signal_processes(self._stop_last)
        return bool(super()._all_stopped())

    def _killall(self, force: bool = False) -> None:
        # honcho calls this with force=False on the first stop, then with force=True on every
        # turn of its loop after KILL_WAIT until all are gone.
        if force:
            self._held_back = False
        elif self._stop_last:
            self._held_back = True
            self._signal_processes(set(self._processes) - self._stop_last)
            return
        self._signal_processes(set(self._processes), force)

    def _signal_processes(self, names: Iterable[str], force: bool = False) -> None:
        for name, process in self._processes.items():
            if name not in names or "returncode" in process:
                continue
            if force and not process.get("killed"):
                process["killed"] = True
                self._system_print(
                    f"{name} did not stop within {honcho.manager.KILL_WAIT:g} s: SIGKILL\n"
                )
            if force:
                _signal_group(process["pid"], signal.SIGKILL)
            else:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(process["pid"], signal.SIGTERM)


# A component stopped as asked: it exited 0, or SIGTERM's default action ended it, or (a JVM, such
# as a Spark master or worker) it ran its shutdown hooks on SIGTERM and exited 128 + SIGTERM.
CLEAN_STOP = frozenset({0, -signal.SIGTERM, 128 + signal.SIGTERM})
# honcho's exit code after it received SIGINT / SIGTERM.
ASKED_TO_STOP = frozenset({128 + signal.SIGINT, 128 + signal.SIGTERM})


def exit_status(manager_code: int, component_codes: Iterable[int | None]) -> int:
    """0 when Ctrl-C or SIGTERM stopped every component cleanly, as a service's stop is; else
    honcho's code (the first component to exit, or 128 + the signal)."""
    if manager_code in ASKED_TO_STOP and all(c in CLEAN_STOP for c in component_codes):
        return 0
    return manager_code


def run(
    processes: Sequence[Process],
    *,
    listen_address: str,
    log_dir: Path,
    stop_timeout: float,
    output: IO[str],
) -> int:
    """Start everything, block until all processes have stopped, return honcho's exit code."""
    # honcho reads its kill delay from this module constant when it needs it.
    honcho.manager.KILL_WAIT = stop_timeout
    printer = TeePrinter(output, log_dir)
    manager = ServiceManager(
        printer=printer, stop_last=frozenset(p.name for p in processes if p.stop_last)
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for process in processes:
        manager.add_process(process.name, command_line(process), env=env)

    stop = threading.Event()
    watcher = threading.Thread(
        target=_announce_ready,
        args=(manager, processes, client_host(listen_address), stop),
        name="vigia-stack-ready",
        daemon=True,
    )
    watcher.start()
    try:
        manager.loop()
    finally:
        stop.set()
        watcher.join(timeout=2)
        printer.close()
    _stop_leftovers([p["pid"] for p in manager._processes.values() if p.get("pid")])
    codes = [p.get("returncode") for p in manager._processes.values()]
    return exit_status(int(manager.returncode or 0), codes)


def _stop_leftovers(groups: Sequence[int], grace: float = LEFTOVER_GRACE_SECONDS) -> None:
    """What a component that exited left in its process group (Spark's Python workers outlive
    their JVM by a moment): SIGTERM, then SIGKILL to what is still there after `grace`."""
    alive = [group for group in groups if _signal_group(group, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [group for group in alive if _signal_group(group, 0)]
    for group in alive:
        _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, sig: int) -> bool:
    """False when the group has no process left."""
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):  # PermissionError: as honcho, not ours to stop
        return False
    return True


def _announce_ready(
    manager: Any, processes: Sequence[Process], host: str, stop: threading.Event
) -> None:
    """Print one line per component once its health endpoint answers, then one for the stack."""
    waiting = {p.name: f"http://{host}:{p.port}{p.health_path}" for p in processes}
    deadline = time.monotonic() + READY_DEADLINE_SECONDS
    while waiting and not stop.wait(1.0) and time.monotonic() < deadline:
        for name, url in list(waiting.items()):
            if _answers(url):
                del waiting[name]
                _say(manager, f"{name} ready: {url}\n")
        if not waiting:
            _say(manager, f"all {len(processes)} components ready\n")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return 200 <= int(response.status) < 300
    except OSError:
        return False


def _say(manager: Any, text: str) -> None:
    manager.events.put(
        Message(
            type="line",
            data=text,
            time=datetime.now(),
            name=honcho.manager.SYSTEM_PRINTER_NAME,
            colour=None,
        )
    )
