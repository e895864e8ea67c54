"""Lag in seconds and Burrow-style lag status, from the exporter's own history (docs/lag.md)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from exporter.collectors.base import StateCollector, gauge
from exporter.lag_seconds import LAG_SECONDS_HELP, MAX_LAG_SECONDS_HELP
from exporter.lag_status import GROUP_STATUS_HELP, PARTITION_STATUS_HELP
from exporter.record_time import METHODS_HELP
from exporter.state import ExporterState

_GTP = ["consumergroup", "topic", "partition"]


class LagCollector(StateCollector):
    def families(self, state: ExporterState) -> Iterator[Metric]:
        yield gauge("kafka_consumergroup_lag_seconds", LAG_SECONDS_HELP, _GTP, state.lag_seconds)
        yield gauge(
            "kafka_consumergroup_max_lag_seconds",
            MAX_LAG_SECONDS_HELP,
            ["consumergroup", "topic"],
            state.max_lag_seconds,
        )
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
        yield gauge(
            "kafka_consumergroup_status",
            GROUP_STATUS_HELP,
            ["consumergroup"],
            {group: int(e.status) for group, e in state.group_status.items()},
        )
