"""The web configuration applied to each request: basic authentication and the response headers,
as ASGI middleware (the exporter's Starlette app) and WSGI middleware (the ingest job's /metrics,
the Dash app). A request without valid credentials gets 401 with a WWW-Authenticate challenge."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Final

from vigia.common.basic_auth import CHALLENGE, BasicAuth
from vigia.common.web_config import WebConfig

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]
StartResponse = Callable[..., Any]
Wsgi = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_DENIED_BODY: Final = b"Unauthorized\n"


class AsgiGuard:
    def __init__(self, app: Asgi, config: WebConfig) -> None:
        self._app = app
        self._auth = BasicAuth(config.users)
        self._headers = [(k.lower().encode(), v.encode()) for k, v in config.headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if self._auth.enabled:
            authorization = _header(scope, b"authorization")
            # bcrypt takes tens of milliseconds: never on the event loop that serves the scrapes.
            allowed = await asyncio.to_thread(self._auth.allows, scope["path"], authorization)
            if not allowed:
                await _deny(send, self._headers)
                return
        if not self._headers:
            await self._app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self._headers]
            await send(message)

        await self._app(scope, receive, send_with_headers)


def wsgi_guard(app: Wsgi, config: WebConfig) -> Wsgi:
    """`app` behind the configuration's users and headers (itself when there are neither)."""
    auth = BasicAuth(config.users)
    headers = list(config.headers.items())
    if not auth.enabled and not headers:
        return app

    def guarded(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if not auth.allows(environ.get("PATH_INFO", ""), environ.get("HTTP_AUTHORIZATION")):
            start_response(
                "401 Unauthorized",
                [
                    ("WWW-Authenticate", CHALLENGE),
                    ("Content-Type", "text/plain; charset=utf-8"),
                    ("Content-Length", str(len(_DENIED_BODY))),
                    *headers,
                ],
            )
            return [_DENIED_BODY]

        def start_with_headers(status: str, response_headers: list[Any], *rest: Any) -> Any:
            return start_response(status, [*response_headers, *headers], *rest)

        return app(environ, start_with_headers)

    return guarded


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _deny(send: Send, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"www-authenticate", CHALLENGE.encode()),
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(_DENIED_BODY)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": _DENIED_BODY})
