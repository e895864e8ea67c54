"""Helpers for tests that run the exporter for real: as a process, or as uvicorn in a thread."""

from __future__ import annotations

import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvicorn

from tests.conftest import free_port
from tests.exporter.exposition import Samples, samples
from vigia.exporter.model.granularity import FULL, Granularity
from vigia.exporter.service import CollectionService
from vigia.exporter.web.app import create_app


@dataclass(frozen=True)
class Running:
    url: str
    log: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def metrics(self) -> Samples:
        return samples(self.get("/metrics").text)

    def get(self, path: str) -> httpx.Response:
        """A request that failed because the exporter exited says so at once, with its last
        lines: a wait for a condition ends there instead of at its deadline."""
        try:
            return httpx.get(f"{self.url}{path}", timeout=5)
        except httpx.HTTPError:
            code = None if self.process is None else self.process.poll()
            if code is not None:
                tail = "\n".join(self.log_text().splitlines()[-30:])
                raise AssertionError(
                    f"the exporter exited with {code}; its last lines:\n{tail}"
                ) from None
            raise

    def log_text(self) -> str:
        return self.log.read_text() if self.log else ""


def wait_for(check: Callable[[], object], timeout: float = 30, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    last: object = None
    error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            last, error = check(), None
        except (httpx.HTTPError, OSError) as exc:
            last, error = None, exc
        if last:
            return last
        time.sleep(0.2)
    failed = "" if error is None else f"; the last check failed: {error!r}"
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r}){failed}")


# The settings of granularity.FULL as flags (the last occurrence of a flag wins).
FULL_DETAIL = (
    "--topic-offsets-granularity=partition",
    "--partition-state-granularity=partition",
    "--group-offsets-granularity=partition",
    "--group-lag-granularity=partition",
    "--replica-series=all",
)


@contextmanager
def exporter_process(
    log: Path, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[Running]:
    """`python -m vigia.exporter.cli` on a free loopback port; stopped by PID (SIGTERM, then
    SIGKILL). It serves every per-partition and per-replica family unless `args` set a
    granularity. `env` is added to this process's environment for it alone."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vigia.exporter.cli", "--port", str(port), *FULL_DETAIL, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    running = Running(f"http://127.0.0.1:{port}", log, proc)
    try:
        wait_for(lambda: running.get("/healthz").status_code == 200, 30, "the exporter to listen")
        yield running
    except BaseException:
        _show_stacks(running)
        raise
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _show_stacks(running: Running) -> None:
    """A test failed with the exporter still running: its threads' stacks (`kill -USR1`) and its
    own last lines go to stderr, which pytest shows with the failure, to tell a hung exporter from
    a slow cluster."""
    if running.process is None or running.process.poll() is not None:
        return
    running.process.send_signal(signal.SIGUSR1)
    time.sleep(1)  # faulthandler writes from the signal handler
    lines = [line for line in running.log_text().splitlines() if "librdkafka" not in line]
    sys.stderr.write("the exporter's last lines and stacks:\n" + "\n".join(lines[-120:]) + "\n")


@contextmanager
def exporter_thread(
    service: CollectionService, granularity: Granularity = FULL
) -> Iterator[Running]:
    """The real app under uvicorn in a thread (for exporters built around injected clients),
    serving every per-partition family unless told otherwise."""
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(service, granularity=granularity),
            log_config=None,
            access_log=False,
            lifespan="on",
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    running = Running(f"http://127.0.0.1:{port}")
    try:
        wait_for(lambda: running.get("/healthz").status_code == 200, 30, "uvicorn to listen")
        yield running
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


class _ProxyServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class _Forward(socketserver.BaseRequestHandler):
    upstream: tuple[str, int]

    def handle(self) -> None:
        with socket.create_connection(self.upstream, timeout=10) as up:
            up.settimeout(None)
            pump = threading.Thread(target=_copy, args=(up, self.request), daemon=True)
            pump.start()
            _copy(self.request, up)
            pump.join(timeout=5)


def _copy(src: socket.socket, dst: socket.socket) -> None:
    with suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


@contextmanager
def tcp_proxy(port: int, upstream: str) -> Iterator[None]:
    """Forward 127.0.0.1:port to upstream host:port, e.g. to make a cluster "appear" on a port."""
    host, _, upstream_port = upstream.rpartition(":")
    handler = type("Forward", (_Forward,), {"upstream": (host, int(upstream_port))})
    server = _ProxyServer(("127.0.0.1", port), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
