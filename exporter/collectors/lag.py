"""Lag in seconds and Burrow-style lag status, from the exporter's own history (docs/lag.md)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from exporter.collectors.base import StateCollector
from exporter.lag_seconds import LAG_SECONDS_HELP, MAX_LAG_SECONDS_HELP
from exporter.lag_status import GROUP_STATUS_HELP, PARTITION_STATUS_HELP
from exporter.state import ExporterState

_GTP = ["consumergroup", "topic", "partition"]


class LagCollector(StateCollector):
    def families(self, state: ExporterState) -> Iterator[Metric]:
        seconds = GaugeMetricFamily(
            "kafka_consumergroup_lag_seconds", LAG_SECONDS_HELP, labels=_GTP
        )
        for (group, topic, partition), value in state.lag_seconds.items():
            seconds.add_metric([group, topic, str(partition)], value)
        yield seconds
        max_seconds = GaugeMetricFamily(
            "kafka_consumergroup_max_lag_seconds",
            MAX_LAG_SECONDS_HELP,
            labels=["consumergroup", "topic"],
        )
        for (group, topic), value in state.max_lag_seconds.items():
            max_seconds.add_metric([group, topic], value)
        yield max_seconds

        partition_status = GaugeMetricFamily(
            "kafka_consumergroup_partition_status", PARTITION_STATUS_HELP, labels=_GTP
        )
        for (group, topic, partition), evaluation in state.lag_status.items():
            partition_status.add_metric([group, topic, str(partition)], int(evaluation.status))
        yield partition_status
        group_status = GaugeMetricFamily(
            "kafka_consumergroup_status", GROUP_STATUS_HELP, labels=["consumergroup"]
        )
        for group, group_evaluation in state.group_status.items():
            group_status.add_metric([group], int(group_evaluation.status))
        yield group_status
