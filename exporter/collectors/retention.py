"""Ahead of the loss: retention margins, catch-up, records deleted unread, outage budgets
(exporter/model/retention.py; docs/lag.md#retention)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import StateCollector, StateSource, counter, gauge
from vigia.exporter.model.granularity import Level
from vigia.exporter.model.retention import CatchUp
from vigia.exporter.model.state import ExporterState

_GTP = ["consumergroup", "topic", "partition"]
_GT = ["consumergroup", "topic"]
_LIMIT_HELP = (
    "limit: the retention that deletes first (time: retention.ms, size: retention.bytes); method: "
    "how the oldest unconsumed record's age was had (record, interpolated, extrapolated, "
    "caught_up: none unread, deleted: already below the log start; rate: size at the current "
    "growth). A lower bound: Kafka deletes whole segments."
)
CATCH_UP_STATES = ", ".join(f"{s.value} {s.name.lower()}" for s in CatchUp)


class RetentionCollector(StateCollector):
    def __init__(self, source: StateSource, level: Level = Level.TOPIC) -> None:
        super().__init__(source)
        self._per_partition = level is Level.PARTITION

    def families(self, state: ExporterState) -> Iterator[Metric]:
        view = state.retention
        if self._per_partition:
            yield gauge(
                "kafka_consumergroup_retention_margin_seconds",
                "Seconds until Kafka may delete the group's oldest unconsumed record of the "
                "partition, by the topic's retention (a lower bound); no series for compacted "
                "topics and infinite retention.",
                _GTP,
                {key: m.seconds for key, m in view.partition_margins.items()},
            )
        yield gauge(
            "kafka_consumergroup_min_retention_margin_seconds",
            "Smallest kafka_consumergroup_retention_margin_seconds over the topic's partitions. "
            + _LIMIT_HELP,
            [*_GT, "limit", "method"],
            {(*key, m.limit, m.method): m.seconds for key, m in view.margins.items()},
        )
        yield gauge(
            "kafka_consumergroup_catchup_state",
            "What the group's backlog on the topic did over the catch-up window: "
            f"{CATCH_UP_STATES}.",
            _GT,
            {key: int(e.state) for key, e in view.catch_up.items()},
        )
        yield gauge(
            "kafka_consumergroup_backlog_drain_messages_per_second",
            "How fast the backlog shrinks over the catch-up window (consumed minus produced); "
            "negative while it grows.",
            _GT,
            {key: e.drain_per_second for key, e in view.catch_up.items()},
        )
        yield gauge(
            "kafka_consumergroup_catchup_seconds",
            "Backlog / drain rate: seconds until the group has read everything, at the window's "
            "pace; 0 when caught up, no series while the backlog does not shrink.",
            _GT,
            {key: e.seconds for key, e in view.catch_up.items() if e.seconds is not None},
        )
        yield gauge(
            "kafka_consumergroup_retention_at_risk",
            "1 when the group will lose records to retention before it has caught up: its catch-up "
            "ends after its retention margin, or the margin is under the floor and the backlog "
            "grows (or holds with nothing consumed).",
            _GT,
            {key: int(risk) for key, risk in view.at_risk.items()},
        )
        lost_now: dict[tuple[str, str], int] = {}
        lost_total: dict[tuple[str, str], int] = {}
        lost_partitions: dict[tuple[str, str, int], int] = {}
        for (group, topic, partition), loss in view.losses.items():
            key = (group, topic)
            lost_now[key] = lost_now.get(key, 0) + loss.missing
            lost_total[key] = lost_total.get(key, 0) + loss.counted
            if loss.missing:
                lost_partitions[(group, topic, partition)] = loss.missing
        yield gauge(
            "kafka_consumergroup_lost_messages",
            "Records between the group's committed offset and the partition's log start: deleted "
            "by retention before the group read them. Only partitions where that is not 0.",
            _GTP,
            lost_partitions,
        )
        yield gauge(
            "kafka_consumergroup_lost_messages_sum",
            "Sum of kafka_consumergroup_lost_messages over the topic (0 included).",
            _GT,
            lost_now,
        )
        yield counter(
            "kafka_consumergroup_lost_messages_detected",
            "Records deleted by retention before the group read them, counted once each since the "
            "exporter started (a gap already open at its start is in the gauge only).",
            _GT,
            lost_total,
        )
        yield gauge(
            "kafka_topic_outage_budget_seconds",
            "How long a consumer that stopped now could stay stopped before the topic's retention "
            "deletes a record it has not read, at the current production rate; limit as in "
            "kafka_consumergroup_min_retention_margin_seconds.",
            ["topic", "limit"],
            {(topic, m.limit): m.seconds for topic, m in view.outage_budgets.items()},
        )
