"""What the demo's receiver and the heartbeat checker share: a handler for Alertmanager's webhook
posts that answers in JSON and logs no line per request (each logs what matters itself)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class WebhookHandler(BaseHTTPRequestHandler):
    def read_payload(self) -> Any:
        """The posted JSON document, or None after answering 400 to a body that is not JSON."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            document = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self.reply(400, {"error": "not JSON"})
            return None
        return {} if document is None else document

    def reply(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """A line per request would bury the lines that say what arrived."""
