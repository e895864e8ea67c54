"""Consumer groups: committed offsets, lag (clamped at 0, only where committed), members, rates."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import StateCollector, StateSource, gauge
from vigia.exporter.model.granularity import Level
from vigia.exporter.model.state import ExporterState

_GTP = ["consumergroup", "topic", "partition"]
_GT = ["consumergroup", "topic"]


class ConsumerGroupCollector(StateCollector):
    def __init__(self, source: StateSource, offsets: Level = Level.PARTITION) -> None:
        super().__init__(source)
        self._per_partition = offsets is Level.PARTITION

    def families(self, state: ExporterState) -> Iterator[Metric]:
        per_partition = self._per_partition
        current: dict[tuple[str, str, int], int] = {}
        lag: dict[tuple[str, str, int], int] = {}
        offset_sums: dict[tuple[str, str], int] = {}
        lag_sums: dict[tuple[str, str], int] = {}
        for item in state.group_lags:
            key = (item.group, item.topic)
            offset_sums[key] = offset_sums.get(key, 0) + item.committed
            if per_partition:
                current[item.key] = item.committed
                if item.lag is not None:
                    lag[item.key] = item.lag
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
                    lag[(u.group, u.topic, u.partition)] = u.backlog
                lag_sums[key] = lag_sums.get(key, 0) + u.backlog
        if per_partition:
            yield gauge(
                "kafka_consumergroup_current_offset",
                "Committed offset of the group.",
                _GTP,
                current,
            )
        yield gauge(
            "kafka_consumergroup_current_offset_sum",
            "Sum of the group's committed offsets over the topic's partitions.",
            _GT,
            offset_sums,
        )
        if per_partition:
            yield gauge(
                "kafka_consumergroup_lag",
                "Latest offset minus committed offset, clamped at 0; no series without a commit.",
                _GTP,
                lag,
            )
        yield gauge(
            "kafka_consumergroup_lag_sum",
            "Sum of kafka_consumergroup_lag over the topic.",
            _GT,
            lag_sums,
        )
        yield gauge(
            "kafka_consumergroup_uncommitted_partitions",
            "Partitions of a topic the group consumes without a committed offset; those a live "
            "member owns count their whole backlog in kafka_consumergroup_lag. No series when "
            "every partition is committed.",
            _GT,
            uncommitted,
        )
        groups = state.snapshot.groups
        yield gauge(
            "kafka_consumergroup_members",
            "Members of the group.",
            ["consumergroup"],
            {g.group_id: len(g.members) for g in groups if g.members is not None},
        )
        yield gauge(
            "kafka_consumergroup_info",
            "Group state and partition assignor (value 1).",
            ["consumergroup", "state", "protocol"],
            {(g.group_id, g.state, g.protocol or ""): 1 for g in groups if g.state is not None},
        )
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
