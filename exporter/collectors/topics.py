"""Topics and partitions: offsets, leadership, replication health, message rates."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from exporter.collectors.base import StateCollector, StateSource, gauge
from exporter.model.granularity import DEFAULT, Granularity, Level
from exporter.model.state import ExporterState

_TP = ["topic", "partition"]


def _tp_gauge(name: str, documentation: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=_TP)


def _topic_gauge(name: str, documentation: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=["topic"])


class TopicCollector(StateCollector):
    def __init__(self, source: StateSource, granularity: Granularity = DEFAULT) -> None:
        super().__init__(source)
        self._granularity = granularity

    def families(self, state: ExporterState) -> Iterator[Metric]:
        yield from self._topic_families(state)
        if self._granularity.topic_offsets is Level.PARTITION:
            yield from self._offset_families(state)
        if self._granularity.partition_state is Level.PARTITION:
            yield from self._state_families(state)

        yield gauge(
            "kafka_topic_messages_in_per_second",
            "Messages produced per second: increase of latest offsets / time between collections.",
            ["topic"],
            state.topic_rates,
        )
        yield gauge(
            "kafka_broker_topic_messages_in_per_second",
            "Messages produced per second, attributed to each partition's current leader.",
            ["broker", "topic"],
            state.broker_topic_rates,
        )

    def _topic_families(self, state: ExporterState) -> Iterator[Metric]:
        """Served at every granularity: what alerts, rules and boards aggregate per topic."""
        partitions = _topic_gauge("kafka_topic_partitions", "Number of partitions of the topic.")
        rf = _topic_gauge(
            "kafka_topic_replication_factor", "Largest replica count of the topic's partitions."
        )
        urp = _topic_gauge(
            "kafka_topic_under_replicated_partitions",
            "Partitions of the topic whose ISR is smaller than their replicas.",
        )
        under_min_isr = _topic_gauge(
            "kafka_topic_under_min_isr_partitions",
            "Partitions of the topic whose ISR is smaller than its min.insync.replicas.",
        )
        offline = _topic_gauge(
            "kafka_topic_offline_partitions", "Partitions of the topic without a leader."
        )
        not_preferred = _topic_gauge(
            "kafka_topic_leader_not_preferred_partitions",
            "Partitions of the topic not led by their preferred (first) replica.",
        )
        statuses = state.partition_status
        for topic in state.snapshot.topics:
            labels = [topic.name]
            counts = [0, 0, 0, 0]
            for p in topic.partitions:
                status = statuses[(topic.name, p.partition)]
                counts[0] += status.under_replicated
                counts[1] += status.under_min_isr
                counts[2] += status.offline
                counts[3] += not status.leader_is_preferred
            partitions.add_metric(labels, len(topic.partitions))
            rf.add_metric(labels, max((len(p.replicas) for p in topic.partitions), default=0))
            urp.add_metric(labels, counts[0])
            if state.min_isr[topic.name] is not None:
                under_min_isr.add_metric(labels, counts[1])
            offline.add_metric(labels, counts[2])
            not_preferred.add_metric(labels, counts[3])
        yield from (partitions, rf, urp, under_min_isr, offline, not_preferred)

    def _offset_families(self, state: ExporterState) -> Iterator[Metric]:
        current = _tp_gauge(
            "kafka_topic_partition_current_offset",
            "Latest offset (high watermark) of the partition.",
        )
        oldest = _tp_gauge(
            "kafka_topic_partition_oldest_offset", "Earliest offset of the partition."
        )
        for topic in state.snapshot.topics:
            for p in topic.partitions:
                labels = [topic.name, str(p.partition)]
                if p.latest_offset is not None:
                    current.add_metric(labels, p.latest_offset)
                if p.earliest_offset is not None:
                    oldest.add_metric(labels, p.earliest_offset)
        yield from (current, oldest)

    def _state_families(self, state: ExporterState) -> Iterator[Metric]:
        leader = _tp_gauge("kafka_topic_partition_leader", "Leader broker id (-1 when none).")
        replicas = _tp_gauge("kafka_topic_partition_replicas", "Number of replicas.")
        isr = _tp_gauge("kafka_topic_partition_in_sync_replica", "Number of in-sync replicas.")
        preferred = _tp_gauge(
            "kafka_topic_partition_leader_is_preferred",
            "1 if the leader is the preferred (first) replica.",
        )
        urp = _tp_gauge(
            "kafka_topic_partition_under_replicated_partition",
            "1 if the ISR is smaller than the replicas.",
        )
        under_min_isr = _tp_gauge(
            "kafka_topic_partition_under_min_isr",
            "1 if the ISR is smaller than the topic's min.insync.replicas "
            "(the broker default when the topic does not set it).",
        )
        offline = _tp_gauge("kafka_topic_partition_offline", "1 if the partition has no leader.")
        for topic in state.snapshot.topics:
            for p in topic.partitions:
                labels = [topic.name, str(p.partition)]
                status = state.partition_status[(topic.name, p.partition)]
                leader.add_metric(labels, p.leader)
                replicas.add_metric(labels, len(p.replicas))
                isr.add_metric(labels, len(p.isr))
                preferred.add_metric(labels, int(status.leader_is_preferred))
                urp.add_metric(labels, int(status.under_replicated))
                if state.min_isr[topic.name] is not None:
                    under_min_isr.add_metric(labels, int(status.under_min_isr))
                offline.add_metric(labels, int(status.offline))
        yield from (leader, replicas, isr, preferred, urp, under_min_isr, offline)
