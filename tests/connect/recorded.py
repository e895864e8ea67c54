"""The recorded Kafka Connect REST answers (tests/fixtures/connect-debezium) and a tiny loopback
HTTP server that serves one recorded state at a time, like the worker did."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).parents[1] / "fixtures" / "connect-debezium"
# In recording order (README "Timeline").
STATES = (
    "healthy",
    "db-down-20s",
    "db-down-70s",
    "task-failed",
    "task-failed-db-back",
    "recovered",
)


def answer(state: str, name: str) -> Any:
    return json.loads((FIXTURES / state / name).read_text(encoding="utf-8"))


class RecordedConnect:
    """Serves `state`'s answers on 127.0.0.1; `state` can be switched while it runs.

    With `expand=False` it answers `GET /connectors` with the names only, as workers before
    Kafka 2.3 do; with `hang=True` it accepts requests and never answers; `delay` slows every
    answer down."""

    def __init__(self, state: str) -> None:
        self.state = state
        self.expand = True
        self.hang = False
        self.delay = 0.0  # seconds before each answer
        self.requests: list[str] = []
        self._release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                if outer.hang:
                    outer._release.wait(30)
                    return
                time.sleep(outer.delay)
                status, body = outer.route(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, path: str) -> tuple[int, Any]:
        parts = urlsplit(path)
        if parts.path == "/":
            return 200, answer(self.state, "rest-root.json")
        if parts.path == "/connectors":
            expanded = answer(self.state, "connectors-expand.json")
            if self.expand and parse_qs(parts.query).get("expand"):
                return 200, expanded
            return 200, list(expanded)
        if parts.path.startswith("/connectors/") and parts.path.endswith("/status"):
            name = parts.path.split("/")[2]
            return 200, answer(self.state, f"status-{name}.json")
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def recorded_connect(state: str = "healthy") -> Iterator[RecordedConnect]:
    server = RecordedConnect(state)
    server.start()
    try:
        yield server
    finally:
        server.stop()
