"""`python -m vigia.launcher.receiver`: the demo's stand-in for a pager and a ticketing system.

Alertmanager's webhook receivers post here (`/pager`, `/ticket`); every notification becomes one
log line per alert (status, name, labels, runbook link) and is kept in memory, so
`GET /notifications` lists what was received. `GET /healthz` answers once it serves.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Sequence
from http.server import ThreadingHTTPServer
from typing import Any

from vigia.common.logs import setup_logging
from vigia.launcher.webhook_handler import WebhookHandler

log = logging.getLogger("vigia.receiver")

MAX_KEPT = 1000  # notifications kept for GET /notifications; the log keeps them all


def describe(receiver: str, payload: dict[str, Any]) -> list[str]:
    """One line per alert of an Alertmanager webhook payload."""
    lines = []
    for alert in payload.get("alerts") or []:
        labels = dict(alert.get("labels") or {})
        name = labels.pop("alertname", "?")
        labels.pop("vigia_console_url", None)  # an external label; the runbook link shows it
        shown = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        runbook = (alert.get("annotations") or {}).get("runbook_url", "no runbook")
        lines.append(f"{receiver}: {alert.get('status', '?')} {name} {{{shown}}} {runbook}")
    return lines


class _Handler(WebhookHandler):
    server: _Server

    def do_POST(self) -> None:
        receiver = self.path.strip("/") or "webhook"
        payload = self.read_payload()
        if payload is None:
            return
        for line in describe(receiver, payload):
            log.info("%s", line)
        with self.server.lock:
            self.server.kept.append({"receiver": receiver, **payload})
            del self.server.kept[:-MAX_KEPT]
        self.reply(200, {"status": "ok"})

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self.reply(200, {"status": "ok"})
        elif self.path == "/notifications":
            with self.server.lock:
                self.reply(200, list(self.server.kept))
        else:
            self.reply(404, {"error": "not found"})


class _Server(ThreadingHTTPServer):
    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.lock = threading.Lock()
        self.kept: list[dict[str, Any]] = []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vigia.launcher.receiver", description=__doc__)
    parser.add_argument("--listen-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9097)
    args = parser.parse_args(argv)
    setup_logging(os.environ.get("VIGIA_LOG_LEVEL", "INFO"))
    server = _Server((args.listen_address, args.port))
    log.info("receiving Alertmanager webhooks on http://%s:%d", args.listen_address, args.port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
