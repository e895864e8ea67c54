"""Runs the planned processes under honcho and copies each one's output into the run directory.

honcho starts every command in its own session (process group), relays output with a name prefix,
and on SIGINT/SIGTERM, or when any process exits, sends SIGTERM to every process group, then
SIGKILL to whatever is still running after the stop timeout. Killing whole groups matters here:
the ingest job's Spark JVM is a child of the Python process honcho started.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.request
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import honcho.manager
from honcho.printer import Message, Printer

from launcher.plan import Process, client_host, command_line

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
    manager = honcho.manager.Manager(printer=printer)
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
    return int(manager.returncode or 0)


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
