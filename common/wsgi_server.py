"""A threaded WSGI server that applies the web configuration: the ingest job's /metrics, and the
Dash app when it serves TLS (waitress, its server otherwise, has no TLS).

The TLS handshake happens on the connection's own thread, bounded by `TIMEOUT_SECONDS`, never on
the thread that accepts: a client that connects and says nothing cannot stop the others. A
connection whose first byte is not a TLS handshake record gets Go's answer to plain HTTP on an
HTTPS port, a 400 saying so, as the Prometheus ecosystem's servers give it.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from vigia.common.web_config import WebConfig
from vigia.common.web_guard import Wsgi, wsgi_guard
from vigia.common.web_tls import (
    PLAIN_HTTP_ANSWER,
    TIMEOUT_SECONDS,
    TLS_HANDSHAKE_RECORD,
    server_context,
)

log = logging.getLogger(__name__)


class _QuietHandler(WSGIRequestHandler):
    """No access log line per request (a scrape every 15 s)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class SecureWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    tls: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(TIMEOUT_SECONDS)
        try:
            first = request.recv(1, socket.MSG_PEEK)
            if not first:
                return
            if first != TLS_HANDSHAKE_RECORD:
                request.recv(65536)  # read first: closing on unread data resets the connection
                request.sendall(PLAIN_HTTP_ANSWER)
                return
            secured = self.tls.wrap_socket(request, server_side=True)
        except OSError as exc:  # ssl.SSLError included: a bad or missing client certificate
            log.debug("TLS connection from %s refused: %s", client_address[0], exc)
            return
        try:
            super().finish_request(secured, client_address)
        finally:
            secured.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client gone mid-request is its business, not a traceback in the service's log.
        log.debug("connection from %s ended with an error", client_address[0], exc_info=True)


def start(host: str, port: int, app: Wsgi, config: WebConfig) -> SecureWSGIServer:
    """Bind `host`:`port` (OSError if it cannot) and serve `app` behind `config` on a daemon
    thread; `shutdown()` and `server_close()` stop it."""
    server = bind(host, port, app, config)
    threading.Thread(target=server.serve_forever, name="web-server", daemon=True).start()
    return server


def bind(host: str, port: int, app: Wsgi, config: WebConfig) -> SecureWSGIServer:
    server_class = _IPv6Server if ":" in host else SecureWSGIServer
    server = make_server(
        host, port, wsgi_guard(app, config), server_class=server_class, handler_class=_QuietHandler
    )
    if config.tls is not None:
        server.tls = server_context(config.tls)
        server.base_environ["HTTPS"] = "on"  # wsgi.url_scheme https
    return server


class _IPv6Server(SecureWSGIServer):
    address_family = socket.AF_INET6
