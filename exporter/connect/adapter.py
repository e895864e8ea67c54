"""The Kafka Connect REST adapter: two GETs per poll, together bounded by the timeout (each call
gets what is left of it, so a worker that answers slowly cannot stretch a poll).

`GET /` (the worker's version) and `GET /connectors?expand=status&expand=info` (every connector's
and task's state and config in one answer). Workers that cannot expand get one
`GET /connectors/<name>/status` per connector. Any failure, including a malformed answer, becomes
the view's `error`: a Connect worker that does not answer is a fact about Connect.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import quote

import httpx

from vigia.exporter.connect.model import (
    ConnectAnswerError,
    ConnectorStatus,
    ConnectView,
    parse_expanded,
    parse_root,
    parse_status,
)

_EXPAND = httpx.QueryParams([("expand", "status"), ("expand", "info")])


class ConnectClient:
    def __init__(
        self,
        connect: str,
        url: str,
        timeout: float,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.connect = connect
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._clock = clock
        self._deadline = 0.0
        self._http = httpx.Client(
            base_url=self.url,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json"},
            follow_redirects=False,
        )

    def observe(self) -> ConnectView:
        collected_at = self._clock()
        self._deadline = time.monotonic() + self.timeout
        try:
            worker = parse_root(self._get("/"))
            listing = parse_expanded(self._get("/connectors", params=_EXPAND))
            if isinstance(listing, list):
                listing = tuple(self._status(name) for name in listing)
        except (httpx.HTTPError, ConnectAnswerError, ValueError) as exc:
            return ConnectView(self.connect, self.url, collected_at, error=_describe(exc))
        return ConnectView(self.connect, self.url, collected_at, worker=worker, connectors=listing)

    def close(self) -> None:
        self._http.close()

    def _status(self, name: str) -> ConnectorStatus:
        return parse_status(self._get(f"/connectors/{quote(name, safe='')}/status"))

    def _get(self, path: str, params: httpx.QueryParams | None = None) -> object:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise httpx.TimeoutException(f"no time left for GET {path} within {self.timeout:g} s")
        response = self._http.get(path, params=params, timeout=left)
        response.raise_for_status()
        return response.json()


def _describe(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out: {type(exc).__name__}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"
