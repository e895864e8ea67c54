"""`vigia_hes_schema_history_unsafe`: whether each Debezium connector's schema history topic keeps
everything (exporter.model.schema_history), from the Connect watchers' last polls (the topic's
name) and the last collection (its configs and replication factor). Series: Debezium connectors ×
6 reasons.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import gauge
from vigia.exporter.connect.watcher import ConnectReport
from vigia.exporter.model.schema_history import REASONS, unsafe_reasons
from vigia.exporter.model.snapshot import Topic
from vigia.exporter.model.state import ExporterState


class SchemaHistoryCollector:
    def __init__(
        self,
        reports: Sequence[ConnectReport | None],
        state: ExporterState | None,
        pipeline_topic: str,
    ) -> None:
        """`pipeline_topic`: the data topic whose durability the history must match."""
        self._reports = reports
        self._state = state
        self._pipeline_topic = pipeline_topic

    def collect(self) -> Iterator[Metric]:
        if all(report is None for report in self._reports):
            return  # no Connect watched: no family, as for the Connect families
        values: dict[tuple[str, str, str, str], float] = {}
        state = self._state
        if state is not None and state.snapshot.topics:
            topics = {t.name: t for t in state.snapshot.topics}
            reference = topics.get(self._pipeline_topic)
            for report in self._reports:
                if report is None or not report.view.up:
                    continue
                for c in report.view.connectors:
                    if c.schema_history_topic is None:
                        continue
                    history = topics.get(c.schema_history_topic)
                    reasons = unsafe_reasons(
                        None if history is None else history.configs,
                        _replication_factor(history),
                        _replication_factor(reference),
                        _min_insync(reference),
                    )
                    for reason in REASONS:
                        key = (report.view.connect, c.name, c.schema_history_topic, reason)
                        values[key] = float(reason in reasons)
        yield gauge(
            "vigia_hes_schema_history_unsafe",
            "1 when the Debezium connector's schema history topic may lose what the connector "
            "must replay at its next start, for the reason: missing (not among the collected "
            "topics), retention_ms / retention_bytes (not -1), cleanup_policy (not delete), "
            "replication_factor / min_insync_replicas (below the pipeline topic's); 0 otherwise.",
            ["connect", "connector", "topic", "reason"],
            values,
        )


def _replication_factor(topic: Topic | None) -> int | None:
    if topic is None or not topic.partitions:
        return None
    return min(len(p.replicas) for p in topic.partitions)


def _min_insync(topic: Topic | None) -> int | None:
    value = None if topic is None else topic.configs.get("min.insync.replicas")
    return int(value) if value is not None and value.isdigit() else None
