"""Lag in seconds and Burrow-style lag status, from the exporter's own history (docs/lag.md)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import StateCollector, StateSource, gauge
from vigia.exporter.model.granularity import Level
from vigia.exporter.model.lag_seconds import LAG_SECONDS_HELP, MAX_LAG_SECONDS_HELP
from vigia.exporter.model.lag_status import GROUP_STATUS_HELP, PARTITION_STATUS_HELP
from vigia.exporter.model.record_time import METHODS_HELP
from vigia.exporter.model.state import ExporterState

_GTP = ["consumergroup", "topic", "partition"]
_GT = ["consumergroup", "topic"]
TOPIC_STATUS_HELP = (
    "Highest kafka_consumergroup_partition_status over the topic's partitions: 1 OK, 2 WARN, "
    "3 STOP, 4 STALL, 5 REWIND (3 and above are errors)."
)


class LagCollector(StateCollector):
    def __init__(self, source: StateSource, level: Level = Level.TOPIC) -> None:
        super().__init__(source)
        self._per_partition = level is Level.PARTITION

    def families(self, state: ExporterState) -> Iterator[Metric]:
        if self._per_partition:
            yield gauge(
                "kafka_consumergroup_lag_seconds", LAG_SECONDS_HELP, _GTP, state.lag_seconds
            )
        yield gauge(
            "kafka_consumergroup_max_lag_seconds",
            MAX_LAG_SECONDS_HELP,
            _GT,
            state.max_lag_seconds,
        )
        if self._per_partition:
            # How the per-partition values above were had; by default /api/v1/cluster says it per
            # group-topic (max_lag_seconds_method), which costs no series (issue 24).
            yield gauge(
                "kafka_consumergroup_lag_seconds_partitions",
                METHODS_HELP,
                ["consumergroup", "method"],
                state.lag_method_counts,
            )
            yield gauge(
                "kafka_consumergroup_partition_status",
                PARTITION_STATUS_HELP,
                _GTP,
                {key: int(e.status) for key, e in state.lag_status.items()},
            )
        worst: dict[tuple[str, str], int] = {}
        for (group, topic, _), evaluation in state.lag_status.items():
            status = int(evaluation.status)
            if status > worst.get((group, topic), 0):
                worst[(group, topic)] = status
        yield gauge("kafka_consumergroup_topic_status", TOPIC_STATUS_HELP, _GT, worst)
        yield gauge(
            "kafka_consumergroup_status",
            GROUP_STATUS_HELP,
            ["consumergroup"],
            {group: int(e.status) for group, e in state.group_status.items()},
        )
