"""The exporter's HTTP server: awake once a second when idle, stopped at once by a signal."""

from __future__ import annotations

import asyncio
import signal
import threading
import time

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.conftest import free_port
from vigia.exporter.web.server import QuietServer


class CountingServer(QuietServer):
    ticks = 0

    async def on_tick(self, counter: int) -> bool:
        self.ticks += 1
        return await super().on_tick(counter)


def test_an_idle_server_ticks_once_a_second_answers_and_stops_at_once_on_a_signal() -> None:
    port = free_port()
    app = Starlette(routes=[Route("/", lambda _: PlainTextResponse("ok"))])
    server = CountingServer(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="off")
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    assert httpx.get(f"http://127.0.0.1:{port}/").text == "ok"
    assert "date" in httpx.get(f"http://127.0.0.1:{port}/").headers

    ticks = server.ticks
    time.sleep(2.5)
    assert server.ticks - ticks <= 3  # uvicorn's own loop: 25

    asked = time.monotonic()
    server.handle_exit(signal.SIGTERM, None)
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - asked < 0.5  # not the next tick's second
