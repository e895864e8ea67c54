"""The Connect families, rendered from the watchers' last reports at each scrape (a few series
per connector; the reports are in memory, so a scrape never waits for a worker).

State-set gauges: one series per state in `STATES` for each connector and task, 1 for the
current state; a state Connect invents later gets its own series; the stall family
(`exporter.connect.stall`) has one series per cause for each source connector. Series per Connect
cluster: 1 + connectors × (8 + tasks × 7) + source connectors × 4.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import counter, gauge
from vigia.exporter.collectors.text_format import text
from vigia.exporter.connect.model import STATES
from vigia.exporter.connect.stall import CAUSES, Pipeline, stalls
from vigia.exporter.connect.watcher import ConnectReport

Reports = Callable[[], Sequence[ConnectReport | None]]


def _states(current: str) -> dict[str, float]:
    values = {state: 0.0 for state in STATES}
    values[current] = 1.0
    return values


class ConnectCollector:
    def __init__(self, reports: Reports, pipeline: Pipeline | None = None) -> None:
        self._reports = reports
        self._pipeline = pipeline

    def collect(self) -> Iterator[Metric]:
        reports = [r for r in self._reports() if r is not None]
        if not reports:
            return
        up: dict[str, float] = {}
        connector_state: dict[tuple[str, str, str], float] = {}
        task_state: dict[tuple[str, str, int, str], float] = {}
        tasks: dict[tuple[str, str], float] = {}
        config: dict[tuple[str, str, str, str, str], float] = {}
        restarts: dict[tuple[str, str, int], float] = {}
        stalled: dict[tuple[str, str, str], float] = {}
        for report in reports:
            view = report.view
            up[view.connect] = 1.0 if view.up else 0.0
            for name, why in stalls(report, self._pipeline).items():
                for option in CAUSES:
                    stalled[(view.connect, name, option)] = 1.0 if option == why else 0.0
            if not view.up:
                continue
            for c in view.connectors:
                for state, v in _states(c.state).items():
                    connector_state[(view.connect, c.name, state)] = v
                tasks[(view.connect, c.name)] = c.task_count
                config[
                    (
                        view.connect,
                        c.name,
                        c.type or "",
                        c.connector_class or "",
                        c.topic_prefix or "",
                    )
                ] = 1.0
                for t in c.tasks:
                    for state, v in _states(t.state).items():
                        task_state[(view.connect, c.name, t.id, state)] = v
                    restarts[(view.connect, c.name, t.id)] = report.restarts.get((c.name, t.id), 0)
        yield gauge(
            "kafka_connect_worker_up",
            "1 when this Connect cluster's REST API answered the last poll, else 0.",
            ["connect"],
            up,
        )
        yield gauge(
            "kafka_connect_connector_state",
            "1 for the connector's current state (REST status), 0 for the other states.",
            ["connect", "connector", "state"],
            connector_state,
        )
        yield gauge(
            "kafka_connect_task_state",
            "1 for the task's current state (REST status), 0 for the other states.",
            ["connect", "connector", "task", "state"],
            task_state,
        )
        yield gauge(
            "kafka_connect_connector_tasks",
            "Tasks the connector has (from its config when the worker gives it, else its status).",
            ["connect", "connector"],
            tasks,
        )
        yield gauge(
            "kafka_connect_connector_config_info",
            "1 per connector: its type, class and topic.prefix (the `server` label of Debezium's "
            "JMX series).",
            ["connect", "connector", "type", "class", "topic_prefix"],
            config,
        )
        yield gauge(
            "kafka_connect_connector_stalled",
            "1 for the cause of a source connector's stall (it moves nothing while there is data "
            "to move, or it failed), 0 for the other causes; all 0 when it is not stalled.",
            ["connect", "connector", "cause"],
            stalled,
        )
        yield counter(
            "kafka_connect_task_restarts_seen",
            "Task restarts the exporter saw between two polls: into RESTARTING, out of FAILED, "
            "or onto another worker (a lower bound).",
            ["connect", "connector", "task"],
            restarts,
        )


def render_connect(
    reports: Sequence[ConnectReport | None], pipeline: Pipeline | None = None
) -> str:
    """The Prometheus text of the Connect families for these reports."""
    return text(ConnectCollector(lambda: reports, pipeline).collect())


class CachedExposition:
    """`render_connect` of the watchers' latest reports and the latest flow verdict, rendered
    again only when one of them changed (a poll or a look), not at every scrape: 100 connectors
    of 4 tasks are 4,001 series."""

    def __init__(self) -> None:
        self._cached: tuple[tuple[object, ...], bytes] = ((), b"")

    def get(
        self, reports: Sequence[ConnectReport | None], pipeline: Pipeline | None = None
    ) -> bytes:
        current = (*reports, pipeline.flow if pipeline else None)
        key, body = self._cached  # one read of one reference: no lock needed
        if len(key) == len(current) and all(a is b for a, b in zip(key, current, strict=True)):
            return body
        body = render_connect(reports, pipeline).encode("utf-8")
        self._cached = (current, body)
        return body


def connect_json(
    reports: Sequence[ConnectReport | None], pipeline: Pipeline | None = None
) -> list[dict[str, Any]]:
    """The `connect` section of /api/v1/cluster: one entry per Connect cluster (docs/api.md)."""
    out = []
    for report in reports:
        if report is None:
            continue
        view = report.view
        out.append(
            {
                "connect": view.connect,
                "url": view.url,
                "collected_at": view.collected_at,
                "up": view.up,
                "error": view.error,
                "version": view.worker.version if view.worker else None,
                "kafka_cluster_id": view.worker.kafka_cluster_id if view.worker else None,
                "connectors": [
                    {
                        "name": c.name,
                        "type": c.type,
                        "class": c.connector_class,
                        "topic_prefix": c.topic_prefix,
                        "state": c.state,
                        "worker_id": c.worker_id,
                        "trace_first_line": c.trace_first_line,
                        "tasks": [
                            {
                                "id": t.id,
                                "state": t.state,
                                "worker_id": t.worker_id,
                                "trace_first_line": t.trace_first_line,
                                "restarts_seen": report.restarts.get((c.name, t.id), 0),
                            }
                            for t in c.tasks
                        ],
                    }
                    for c in view.connectors
                ],
                "stalls": [
                    {"connector": name, "stalled": why is not None, "cause": why}
                    for name, why in stalls(report, pipeline).items()
                ],
            }
        )
    return out
