"""Consumer groups: committed offsets, lag (clamped at 0, only where committed), members, rates."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from exporter.collectors.base import StateCollector, StateSource, gauge
from exporter.model.granularity import Level
from exporter.model.state import ExporterState

_GTP = ["consumergroup", "topic", "partition"]
_GT = ["consumergroup", "topic"]


class ConsumerGroupCollector(StateCollector):
    def __init__(self, source: StateSource, offsets: Level = Level.PARTITION) -> None:
        super().__init__(source)
        self._per_partition = offsets is Level.PARTITION

    def families(self, state: ExporterState) -> Iterator[Metric]:
        per_partition = self._per_partition
        current = GaugeMetricFamily(
            "kafka_consumergroup_current_offset", "Committed offset of the group.", labels=_GTP
        )
        current_sum = GaugeMetricFamily(
            "kafka_consumergroup_current_offset_sum",
            "Sum of the group's committed offsets over the topic's partitions.",
            labels=_GT,
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "Latest offset minus committed offset, clamped at 0; no series without a commit.",
            labels=_GTP,
        )
        lag_sum = GaugeMetricFamily(
            "kafka_consumergroup_lag_sum",
            "Sum of kafka_consumergroup_lag over the topic.",
            labels=_GT,
        )
        offset_sums: dict[tuple[str, str], int] = {}
        lag_sums: dict[tuple[str, str], int] = {}
        for item in state.group_lags:
            key = (item.group, item.topic)
            offset_sums[key] = offset_sums.get(key, 0) + item.committed
            if per_partition:
                labels = [item.group, item.topic, str(item.partition)]
                current.add_metric(labels, item.committed)
                if item.lag is not None:
                    lag.add_metric(labels, item.lag)
            if item.lag is not None:
                lag_sums[key] = lag_sums.get(key, 0) + item.lag
        # A live member owns it but nothing is committed: its whole backlog is lag (docs/lag.md).
        # Counted only where there are some: a 0 for every group-topic was one series per group
        # spent on the usual case (issue 24).
        uncommitted: dict[tuple[str, str], int] = {}
        for u in state.uncommitted:
            key = (u.group, u.topic)
            uncommitted[key] = uncommitted.get(key, 0) + 1
            if u.owned and u.backlog is not None:
                if per_partition:
                    lag.add_metric([u.group, u.topic, str(u.partition)], u.backlog)
                lag_sums[key] = lag_sums.get(key, 0) + u.backlog
        for (group, topic), value in offset_sums.items():
            current_sum.add_metric([group, topic], value)
        for (group, topic), value in lag_sums.items():
            lag_sum.add_metric([group, topic], value)
        if per_partition:
            yield from (current, current_sum, lag, lag_sum)
        else:
            yield from (current_sum, lag_sum)
        yield gauge(
            "kafka_consumergroup_uncommitted_partitions",
            "Partitions of a topic the group consumes without a committed offset; those a live "
            "member owns count their whole backlog in kafka_consumergroup_lag. No series when "
            "every partition is committed.",
            _GT,
            uncommitted,
        )

        members = GaugeMetricFamily(
            "kafka_consumergroup_members", "Members of the group.", labels=["consumergroup"]
        )
        info = GaugeMetricFamily(
            "kafka_consumergroup_info",
            "Group state and partition assignor (value 1).",
            labels=["consumergroup", "state", "protocol"],
        )
        for g in state.snapshot.groups:
            if g.members is not None:
                members.add_metric([g.group_id], len(g.members))
            if g.state is not None:
                info.add_metric([g.group_id, g.state, g.protocol or ""], 1)
        yield members
        yield info
        yield gauge(
            "kafka_consumergroup_access_denied",
            "1 for a group the exporter's ACLs do not let it describe or read the offsets of; no "
            "series for the others.",
            ["consumergroup"],
            {g.group_id: 1 for g in state.snapshot.groups if g.denied},
        )

        yield gauge(
            "kafka_consumergroup_messages_consumed_per_second",
            "Increase of the group's committed offsets per second between collections.",
            _GT,
            state.consumed_rates,
        )
