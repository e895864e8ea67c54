"""The Spark cluster's health as the driver sees it: its executors, from the REST API of its own
web UI (``/api/v1/applications/<id>/allexecutors``: active and removed executors, the driver
included), as four vigia_ingest_* series.

An executor "runs tasks" when it is not the driver or has cores: in local mode the driver is the
one executor (its cores are local[N]'s), on a cluster it has none. Spark keeps only the last
``spark.ui.retainedDeadExecutors`` (100) removed executors and their task counts, so the two
counters fold every answer into what was seen before (`observe`): an executor id is never reused
within an application, and a count that drops out of the API stays counted. Pure but for
`SparkHealth.collect`'s fetch, which the caller injects (`rest_fetch`).
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

DRIVER: Final = "driver"
# The UI answers from memory in milliseconds, but its first REST answer takes seconds (the JAX-RS
# application starts then); within Prometheus's 10 s scrape timeout.
FETCH_TIMEOUT_S: Final = 5.0

Executors = Sequence[Mapping[str, Any]]
"""The JSON of /allexecutors (or /executors: the active ones only)."""


@dataclass(frozen=True)
class Seen:
    """What the answers so far said: each task-running executor's failed tasks (its latest
    count: a count only grows while the executor is listed) and the executors removed."""

    failed_tasks: Mapping[str, int] = field(default_factory=dict)
    lost: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Health:
    executors: int
    cores: int
    failed_tasks: int
    executors_lost: int


def _runs_tasks(executor: Mapping[str, Any]) -> bool:
    return executor.get("id") != DRIVER or int(executor.get("totalCores") or 0) > 0


def observe(seen: Seen, executors: Executors) -> tuple[Seen, Health]:
    """One answer of /allexecutors folded into ``seen``; the health it makes."""
    workers = [e for e in executors if _runs_tasks(e)]
    alive = [e for e in workers if e.get("isActive")]
    failed = dict(seen.failed_tasks)
    for e in workers:
        key = str(e["id"])
        failed[key] = max(failed.get(key, 0), int(e.get("failedTasks") or 0))
    lost = seen.lost | {str(e["id"]) for e in workers if not e.get("isActive")}
    now = Seen(failed, lost)
    return now, Health(
        executors=len(alive),
        cores=sum(int(e.get("totalCores") or 0) for e in alive),
        failed_tasks=sum(failed.values()),
        executors_lost=len(lost),
    )


def families(query: str, health: Health | None, seen: Seen | None) -> list[Metric]:
    """The series: the gauges from the latest answer (none when it failed), the counters from
    everything seen (none before the first answer)."""
    labels = ["query"]
    executors = GaugeMetricFamily(
        "vigia_ingest_executors",
        "Spark executors alive that run tasks (in local mode, the driver).",
        labels=labels,
    )
    cores = GaugeMetricFamily(
        "vigia_ingest_executor_cores",
        "Cores of the Spark executors alive: how many tasks run at once.",
        labels=labels,
    )
    failed = CounterMetricFamily(
        "vigia_ingest_failed_tasks",
        "Spark task attempts that failed (Spark retries them), on any executor.",
        labels=labels,
    )
    lost = CounterMetricFamily(
        "vigia_ingest_executors_lost",
        "Spark executors removed while the job ran (killed, crashed, their worker lost).",
        labels=labels,
    )
    if health is not None:
        executors.add_metric([query], health.executors)
        cores.add_metric([query], health.cores)
    if seen is not None:
        failed.add_metric([query], sum(seen.failed_tasks.values()))
        lost.add_metric([query], len(seen.lost))
    return [executors, cores, failed, lost]


class SparkHealth(Collector):
    """A prometheus-client collector: asks ``fetch`` on each scrape (None: no answer), once
    `attach`ed; before that (Spark not started yet) it serves empty families."""

    def __init__(self, query: str) -> None:
        self.query = query
        self._fetch: Callable[[], Executors | None] | None = None
        self._seen: Seen | None = None
        self._lock = threading.Lock()

    def attach(self, fetch: Callable[[], Executors | None]) -> None:
        self._fetch = fetch

    def collect(self) -> Iterator[Metric]:
        with self._lock:  # two scrapes at once must not fold the same answer from two Seens
            answer = self._fetch() if self._fetch is not None else None
            health = None
            if answer is not None:
                self._seen, health = observe(self._seen or Seen(), answer)
            yield from families(self.query, health, self._seen)


def executors_url(ui_url: str | None, application_id: str) -> str | None:
    """/allexecutors of the driver's UI (``SparkContext.uiWebUrl``; None when the UI is off)."""
    if not ui_url:
        return None
    return f"{ui_url.rstrip('/')}/api/v1/applications/{application_id}/allexecutors"


def rest_fetch(url: str, timeout_s: float = FETCH_TIMEOUT_S) -> Callable[[], Executors | None]:
    """Fetches ``url``; None (logged at debug: a scrape every 15 s) when it does not answer."""

    def fetch() -> Executors | None:
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as answer:
                document = json.load(answer)
        except (OSError, ValueError) as exc:
            log.debug("Spark executors not read from %s: %s", url, exc)
            return None
        return document if isinstance(document, list) else None

    return fetch
