"""`python -m vigia.launcher.heartbeat`: a dead man's switch for the paging path, for the stack
without Docker (`vigia-stack` runs it as component `heartbeat`) and the tests.

Alertmanager's `heartbeat` receiver posts the always-firing Watchdog here every minute. When none
arrives for --gap seconds, one line "heartbeat missed" is logged (ERROR); when they resume, one line
"heartbeat back". The state machine is launcher/heartbeat_watch.py. `GET /healthz` answers once it
serves; `GET /status` (and `/`) says the state and the seconds since the last beat.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from http.server import ThreadingHTTPServer
from typing import Any

from vigia.common.logs import setup_logging
from vigia.launcher import heartbeat_watch
from vigia.launcher.heartbeat_watch import Change, State
from vigia.launcher.webhook_handler import WebhookHandler

log = logging.getLogger("vigia.heartbeat")

DEFAULT_PORT = 9098


class _Server(ThreadingHTTPServer):
    def __init__(self, address: tuple[str, int], gap: float) -> None:
        super().__init__(address, _Handler)
        self.lock = threading.Lock()
        self.watch = heartbeat_watch.start(time.monotonic(), gap)

    def beat(self) -> None:
        with self.lock:
            self.watch, change = heartbeat_watch.beat(self.watch, time.monotonic())
        _log(change)

    def check(self) -> None:
        with self.lock:
            self.watch, change = heartbeat_watch.check(self.watch, time.monotonic())
        _log(change)

    def status(self) -> dict[str, Any]:
        with self.lock:
            watch = self.watch
        return {
            "state": watch.state.value,
            "seconds_since_beat": round(time.monotonic() - watch.last_beat, 1),
            "gap_seconds": watch.gap,
        }


def _log(change: Change | None) -> None:
    if change is not None:
        log.log(
            logging.ERROR if change.state is State.MISSED else logging.INFO, "%s", change.message
        )


class _Handler(WebhookHandler):
    server: _Server

    def do_POST(self) -> None:
        payload = self.read_payload()
        if payload is None:
            return
        if isinstance(payload, dict) and heartbeat_watch.is_heartbeat(payload):
            self.server.beat()
        self.reply(200, {"status": "ok"})

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self.reply(200, {"status": "ok"})
        elif self.path in ("/", "/status"):
            self.reply(200, self.server.status())
        else:
            self.reply(404, {"error": "not found"})


def _watch_clock(server: _Server, stop: threading.Event) -> None:
    # A tenth of the gap (at most a second): "missed" is logged within 10 % of the gap.
    tick = min(1.0, server.watch.gap / 10)
    while not stop.wait(tick):
        server.check()


def _gap(text: str) -> float:
    try:
        gap = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if gap <= 0:
        raise argparse.ArgumentTypeError(f"the gap must be positive, not {gap:g}")
    return gap


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(prog="python -m vigia.launcher.heartbeat", description=__doc__)
    parser.add_argument(
        "--listen-address",
        default=env("VIGIA_HEARTBEAT_LISTEN_ADDRESS", "127.0.0.1"),
        help="(env VIGIA_HEARTBEAT_LISTEN_ADDRESS; default %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=env("VIGIA_HEARTBEAT_PORT", str(DEFAULT_PORT)),
        help="(env VIGIA_HEARTBEAT_PORT; default %(default)s)",
    )
    parser.add_argument(
        "--gap",
        type=_gap,
        # A string: argparse converts it like a flag's value, so a bad variable is a usage error.
        default=env("VIGIA_HEARTBEAT_GAP_SECONDS", f"{heartbeat_watch.DEFAULT_GAP_SECONDS:g}"),
        metavar="SECONDS",
        help="log 'heartbeat missed' after this long without one (env VIGIA_HEARTBEAT_GAP_SECONDS; "
        "default %(default)s: twice the 60-75 s at which Alertmanager's heartbeat route sends "
        "it, plus slack)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(os.environ.get("VIGIA_LOG_LEVEL", "INFO"))
    server = _Server((args.listen_address, args.port), args.gap)
    stop = threading.Event()
    clock = threading.Thread(target=_watch_clock, args=(server, stop), daemon=True)
    clock.start()
    log.info(
        "waiting for the %s heartbeat on http://%s:%d; overdue after %gs without one",
        heartbeat_watch.HEARTBEAT_ALERT,
        args.listen_address,
        args.port,
        args.gap,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
