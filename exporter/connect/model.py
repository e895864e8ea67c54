"""Kafka Connect's REST answers as typed values, and what two successive answers say together.

Pure: `parse_*` turn the JSON of `GET /`, `GET /connectors?expand=status&expand=info` and
`GET /connectors/<name>/status` into dataclasses (a malformed answer raises `ConnectAnswerError`),
and `restarts_seen` compares two views of the same cluster. The adapter does the HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The states Connect reports for connectors and tasks (AbstractStatus.State), in this order in the
# state-set gauges. A state outside this list still gets its series (and a log line).
STATES = ("RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING")
FAILED = "FAILED"
RESTARTING = "RESTARTING"


class ConnectAnswerError(ValueError):
    """The worker answered, but not with what Kafka Connect's REST API returns."""


@dataclass(frozen=True, slots=True)
class TaskStatus:
    id: int
    state: str
    worker_id: str | None = None
    trace: str | None = None

    @property
    def trace_first_line(self) -> str | None:
        return first_line(self.trace)


@dataclass(frozen=True, slots=True)
class ConnectorStatus:
    name: str
    state: str
    worker_id: str | None
    tasks: tuple[TaskStatus, ...]
    type: str | None = None  # "source" or "sink"
    # From the connector's config (expand=info); None when only /status was available.
    connector_class: str | None = None
    topic_prefix: str | None = None  # Debezium's `server` label on its JMX series
    configured_tasks: int | None = None
    trace: str | None = None
    # Debezium's schema.history.internal.kafka.topic: the DDL it must replay after a restart.
    schema_history_topic: str | None = None

    @property
    def trace_first_line(self) -> str | None:
        return first_line(self.trace)

    @property
    def task_count(self) -> int:
        return self.configured_tasks if self.configured_tasks is not None else len(self.tasks)


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    version: str | None
    commit: str | None
    kafka_cluster_id: str | None


@dataclass(frozen=True, slots=True)
class ConnectView:
    """One poll of one Connect cluster: `error` is None when the REST API answered both calls."""

    connect: str  # the name given to the URL
    url: str
    collected_at: float
    error: str | None = None
    worker: WorkerInfo | None = None
    connectors: tuple[ConnectorStatus, ...] = ()

    @property
    def up(self) -> bool:
        return self.error is None


def parse_root(doc: Any) -> WorkerInfo:
    """`GET /`: {"version", "commit", "kafka_cluster_id"}."""
    if not isinstance(doc, Mapping) or "version" not in doc:
        raise ConnectAnswerError(f"GET / did not return Connect's version document: {doc!r:.200}")
    return WorkerInfo(
        version=_str(doc.get("version")),
        commit=_str(doc.get("commit")),
        kafka_cluster_id=_str(doc.get("kafka_cluster_id")),
    )


def parse_expanded(doc: Any) -> tuple[ConnectorStatus, ...] | list[str]:
    """`GET /connectors?expand=status&expand=info`, sorted by name. Workers too old to expand
    (before Kafka 2.3) ignore the parameters and return the names: those are returned as a list,
    for the adapter to ask each connector's `/status`."""
    if isinstance(doc, list):
        if not all(isinstance(n, str) for n in doc):
            raise ConnectAnswerError(f"GET /connectors: not a list of names: {doc!r:.200}")
        return sorted(doc)
    if not isinstance(doc, Mapping):
        raise ConnectAnswerError(f"GET /connectors: unexpected answer {doc!r:.200}")
    connectors = []
    for name, entry in doc.items():
        if not isinstance(entry, Mapping):
            raise ConnectAnswerError(f"GET /connectors: entry {name!r} is not an object")
        status = entry.get("status")
        if status is None:  # deleted between the worker's listing and its status lookup
            continue
        connectors.append(parse_status(status, entry.get("info")))
    return tuple(sorted(connectors, key=lambda c: c.name))


def parse_status(status: Any, info: Any = None) -> ConnectorStatus:
    """`GET /connectors/<name>/status`, with the connector's `info` when the answer had it."""
    try:
        connector = status["connector"]
        tasks = tuple(
            sorted(
                (
                    TaskStatus(
                        id=int(t["id"]),
                        state=str(t["state"]),
                        worker_id=_str(t.get("worker_id")),
                        trace=_str(t.get("trace")),
                    )
                    for t in status.get("tasks", ())
                ),
                key=lambda t: t.id,
            )
        )
        name = str(status["name"])
        state = str(connector["state"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConnectAnswerError(f"connector status without {exc}: {status!r:.200}") from None
    config: Mapping[str, Any] = {}
    configured: int | None = None
    if isinstance(info, Mapping):
        config = info.get("config") or {}
        if isinstance(info.get("tasks"), list):
            configured = len(info["tasks"])
    return ConnectorStatus(
        name=name,
        state=state,
        worker_id=_str(connector.get("worker_id")),
        tasks=tasks,
        type=_str(status.get("type")),
        connector_class=_str(config.get("connector.class")),
        topic_prefix=_str(config.get("topic.prefix")),
        configured_tasks=configured,
        trace=_str(connector.get("trace")),
        schema_history_topic=_str(config.get("schema.history.internal.kafka.topic")),
    )


TaskKey = tuple[str, int]  # (connector, task id)


def restarts_seen(
    previous: tuple[ConnectorStatus, ...], current: tuple[ConnectorStatus, ...]
) -> dict[TaskKey, int]:
    """Task restarts that two successive views of one cluster reveal, per task.

    A task counts as restarted when it is RESTARTING now and was not before, when it left FAILED
    (only a restart brings a failed task back), or when it runs on another worker than before
    (a rebalance or a worker crash moved it). At most one per task between two views, so this is
    a lower bound: a restart that ends in the same state on the same worker between two polls is
    not seen. Tasks of connectors that were not in `previous` count nothing.
    """
    before = {(c.name, t.id): t for c in previous for t in c.tasks}
    seen: dict[TaskKey, int] = {}
    for connector in current:
        for task in connector.tasks:
            old = before.get((connector.name, task.id))
            if old is None:
                continue
            if (
                (task.state == RESTARTING and old.state != RESTARTING)
                or (old.state == FAILED and task.state not in (FAILED, RESTARTING))
                or (old.worker_id and task.worker_id and old.worker_id != task.worker_id)
            ):
                seen[(connector.name, task.id)] = 1
    return seen


def first_line(trace: str | None) -> str | None:
    """The exception and its message: the line an operator needs from a Java stack trace."""
    return trace.strip().splitlines()[0] if trace and trace.strip() else None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)
