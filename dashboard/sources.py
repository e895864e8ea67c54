"""The dashboard's only I/O: Prometheus' HTTP API, the exporter's /api/v1/cluster, Alertmanager.

Every call has a short timeout and returns data or an `Unreachable` naming the backend and the
reason; nothing here raises into Dash callbacks. `fetch` runs one refresh's requests in parallel so
a refresh costs the slowest request, not the sum.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import ssl
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx

from vigia.dashboard.clusters import ClusterTarget, alerts_for
from vigia.dashboard.config import DashboardConfig
from vigia.dashboard.data import (
    ALERTMANAGER,
    EXPORTER,
    PROMETHEUS,
    Fetched,
    Matrix,
    Plan,
    PrometheusPayloadError,
    Unreachable,
    Vector,
    Window,
    parse_matrix,
    parse_vector,
)
from vigia.dashboard.promql_scope import with_cluster

log = logging.getLogger(__name__)


T = TypeVar("T")
# What the alert lists show: what fires and reaches people, without the Watchdog, the paging
# path's heartbeat (prometheus/rules/watchdog.yml), which always fires by design.
ALERT_QUERY = {
    "active": "true",
    "silenced": "false",
    "inhibited": "false",
    "filter": 'alertname!="Watchdog"',
}


def _reason(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused" if "refused" in str(exc).lower() else f"cannot connect: {exc}"
    if isinstance(exc, httpx.HTTPStatusError):
        detail = exc.response.text.strip().replace("\n", " ")
        # the exporter and Prometheus explain errors as {"error": "..."}
        with contextlib.suppress(ValueError, AttributeError):
            detail = str(exc.response.json().get("error", detail))
        return f"HTTP {exc.response.status_code}" + (f": {detail[:160]}" if detail else "")
    return f"{type(exc).__name__}: {exc}"[:200]


def _verify(config: DashboardConfig) -> ssl.SSLContext | bool:
    """The backends' HTTPS: the system's CAs unless a CA file is given, and a client certificate
    for backends that require one (a web configuration file's RequireAndVerifyClientCert)."""
    if not config.backend_ca_file and not config.backend_cert_file:
        return True
    context = ssl.create_default_context(cafile=config.backend_ca_file or None)
    if config.backend_cert_file:
        context.load_cert_chain(config.backend_cert_file, config.backend_key_file)
    return context


class Sources:
    """HTTP access to the three backends for one cluster; thread-safe (one pooled httpx.Client).

    Its PromQL keeps to the cluster's series, its alerts to the cluster's; `scoped` gives the same
    access for another cluster, sharing the connections."""

    def __init__(
        self,
        config: DashboardConfig,
        client: httpx.Client | None = None,
        target: ClusterTarget | None = None,
    ) -> None:
        self._config = config
        self.target = target or config.targets[0]
        self._client = client or httpx.Client(
            timeout=config.backend_timeout,
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
            verify=_verify(config),
        )
        self._exporter_auth = (
            (config.exporter_user, config.exporter_password) if config.exporter_user else None
        )
        self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="vigia-fetch")

    def scoped(self, target: ClusterTarget) -> Sources:
        other = copy.copy(self)
        other.target = target
        return other

    def _promql(self, promql: str) -> str:
        return with_cluster(promql, self.target.name) if self.target.labelled else promql

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def _get(
        self,
        backend: str,
        url: str,
        params: Mapping[str, str | float] | None,
        parse: Callable[[Any], T],
    ) -> T | Unreachable:
        try:
            auth = self._exporter_auth if backend == EXPORTER else None
            response = self._client.get(url, params=params, auth=auth or httpx.USE_CLIENT_DEFAULT)
            if backend == PROMETHEUS and response.status_code in (400, 422):
                # Prometheus answers bad queries with a JSON error body; keep its message.
                error = str(response.json().get("error", ""))[:200]
                return Unreachable(backend, f"query rejected: {error}", answered=True)
            response.raise_for_status()
            return parse(response.json())
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            if isinstance(exc, PrometheusPayloadError):
                return Unreachable(backend, str(exc), answered=True)
            reason = _reason(exc)
            log.debug("%s %s failed: %s", backend, url, reason)
            return Unreachable(backend, reason)

    def instant(self, promql: str, at: float | None = None) -> Vector | Unreachable:
        params: dict[str, str | float] = {"query": self._promql(promql)}
        if at is not None:
            params["time"] = at
        return self._get(
            PROMETHEUS, f"{self._config.prometheus_url}/api/v1/query", params, parse_vector
        )

    def range(self, promql: str, window: Window) -> Matrix | Unreachable:
        params: dict[str, str | float] = {
            "query": self._promql(promql),
            "start": window.start,
            "end": window.end,
            "step": window.step,
        }
        return self._get(
            PROMETHEUS, f"{self._config.prometheus_url}/api/v1/query_range", params, parse_matrix
        )

    def cluster(self) -> dict[str, Any] | Unreachable:
        def parse(body: Any) -> dict[str, Any]:
            if not isinstance(body, dict) or "brokers" not in body:
                raise ValueError("response is not the cluster JSON of docs/api.md")
            return body

        return self._get(EXPORTER, f"{self.target.exporter_url}/api/v1/cluster", None, parse)

    def alerts(self) -> list[dict[str, Any]] | Unreachable:
        def parse(body: Any) -> list[dict[str, Any]]:
            if not isinstance(body, list):
                raise ValueError("response is not a list of alerts")
            return alerts_for(body, self.target)

        return self._get(
            ALERTMANAGER, f"{self._config.alertmanager_url}/api/v2/alerts", ALERT_QUERY, parse
        )

    def fetch(self, plan: Plan, window: Window) -> Fetched:
        """Everything the plan asks for, requested in parallel."""
        futures_instant = {
            name: self._pool.submit(self.instant, q, window.end) for name, q in plan.instant.items()
        }
        futures_range = {
            name: self._pool.submit(self.range, q, window) for name, q in plan.ranged.items()
        }
        cluster = self._pool.submit(self.cluster) if plan.cluster else None
        alerts = self._pool.submit(self.alerts) if plan.alerts else None
        return Fetched(
            cluster=cluster.result() if cluster else None,
            alerts=alerts.result() if alerts else None,
            instant={name: f.result() for name, f in futures_instant.items()},
            ranged={name: f.result() for name, f in futures_range.items()},
        )
