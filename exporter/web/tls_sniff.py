"""TLS for uvicorn that answers plain HTTP with a 400, as Go's servers (and so every Prometheus
exporter) do, instead of closing the connection mid-handshake without a word.

uvicorn serves the socket without TLS and this protocol stands in front of its own: reading is
paused on each new connection, the first byte is peeked at (nothing is consumed) on a duplicate
of the socket, and then either the plain-HTTP answer is written, or the connection is upgraded
with the event loop's own `start_tls` and handed to uvicorn's protocol, which sees an ordinary
TLS connection (its scheme is https).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from typing import Any, Final

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from vigia.common.web_tls import PLAIN_HTTP_ANSWER, TIMEOUT_SECONDS, TLS_HANDSHAKE_RECORD

log = logging.getLogger(__name__)

_PEEK: Final = getattr(socket, "MSG_PEEK", 2)


def sniffing_protocol(context: ssl.SSLContext) -> type[asyncio.Protocol]:
    """A uvicorn `http` protocol class serving TLS with `context` (give uvicorn no ssl)."""

    class TlsOrBadRequest(_TlsOrBadRequest):
        tls = context

    return TlsOrBadRequest


class _TlsOrBadRequest(asyncio.Protocol):
    tls: ssl.SSLContext

    def __init__(self, **kwargs: Any) -> None:
        self._inner: asyncio.Protocol = AutoHTTPProtocol(**kwargs)
        self._loop = kwargs.get("_loop") or asyncio.get_event_loop()
        self._transport: asyncio.Transport | None = None
        self._peek: socket.socket | None = None
        self._timeout: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.pause_reading()
        raw = transport.get_extra_info("socket")
        self._peek = socket.fromfd(raw.fileno(), raw.family, raw.type)
        self._peek.setblocking(False)
        self._loop.add_reader(self._peek.fileno(), self._sniff)
        self._timeout = self._loop.call_later(TIMEOUT_SECONDS, self._give_up)

    def _sniff(self) -> None:
        assert self._transport is not None and self._peek is not None
        try:
            first = self._peek.recv(1, _PEEK)
        except BlockingIOError:
            return
        except OSError:
            first = b""
        if first and first != TLS_HANDSHAKE_RECORD:
            # The request is read before the answer: a socket closed with unread data resets
            # the connection, and the client would see a reset instead of the answer.
            with contextlib.suppress(OSError):
                self._peek.recv(65536)
        self._stop_sniffing()
        if first == TLS_HANDSHAKE_RECORD:
            self._loop.create_task(self._upgrade(self._transport))
        else:
            if first:
                self._transport.write(PLAIN_HTTP_ANSWER)
            self._transport.close()

    async def _upgrade(self, transport: asyncio.Transport) -> None:
        # The loop may deliver the request before start_tls returns, and uvicorn's protocol must
        # see its connection first: what comes meanwhile waits here.
        early = _Buffer()
        try:
            secured = await self._loop.start_tls(
                transport,
                early,
                self.tls,
                server_side=True,
                ssl_handshake_timeout=TIMEOUT_SECONDS,
            )
        except (OSError, TimeoutError, ConnectionError) as exc:  # ssl.SSLError is an OSError
            log.debug("TLS handshake refused: %s", exc)
            transport.close()
            return
        if secured is None:  # the client left during the handshake
            transport.close()
            return
        self._inner.connection_made(secured)
        secured.set_protocol(self._inner)
        early.replay(self._inner)

    def _give_up(self) -> None:
        self._stop_sniffing()
        if self._transport is not None:
            self._transport.close()

    def _stop_sniffing(self) -> None:
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        if self._peek is not None:
            self._loop.remove_reader(self._peek.fileno())
            self._peek.close()
            self._peek = None

    def connection_lost(self, exc: Exception | None) -> None:
        # Only before the upgrade: afterwards the TLS layer reports to uvicorn's protocol.
        with contextlib.suppress(Exception):
            self._stop_sniffing()


class _Buffer(asyncio.Protocol):
    """What the TLS layer delivers before uvicorn's protocol takes the connection over."""

    def __init__(self) -> None:
        self._data: list[bytes] = []
        self._eof = False
        self._lost: tuple[Exception | None] | None = None

    def data_received(self, data: bytes) -> None:
        self._data.append(data)

    def eof_received(self) -> bool | None:
        self._eof = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = (exc,)

    def replay(self, protocol: asyncio.Protocol) -> None:
        for data in self._data:
            protocol.data_received(data)
        if self._eof:
            protocol.eof_received()
        if self._lost is not None:
            protocol.connection_lost(self._lost[0])
