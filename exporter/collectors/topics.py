"""Topics and partitions: offsets, leadership, replication health, message rates."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import StateCollector, StateSource, gauge
from vigia.exporter.model.granularity import DEFAULT, Granularity, Level
from vigia.exporter.model.state import ExporterState

_TP = ["topic", "partition"]


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
        # Written straight from {(topic, partition): value}: a Sample per partition was a third of
        # rendering's CPU at 2,000 partitions and 50 groups.
        current: dict[tuple[str, int], int] = {}
        oldest: dict[tuple[str, int], int] = {}
        for topic in state.snapshot.topics:
            name = topic.name
            for p in topic.partitions:
                if p.latest_offset is not None:
                    current[(name, p.partition)] = p.latest_offset
                if p.earliest_offset is not None:
                    oldest[(name, p.partition)] = p.earliest_offset
        yield gauge(
            "kafka_topic_partition_current_offset",
            "Latest offset (high watermark) of the partition.",
            _TP,
            current,
        )
        yield gauge(
            "kafka_topic_partition_oldest_offset", "Earliest offset of the partition.", _TP, oldest
        )

    def _state_families(self, state: ExporterState) -> Iterator[Metric]:
        columns: tuple[dict[tuple[str, int], int], ...] = tuple({} for _ in range(7))
        leader, replicas, isr, preferred, urp, under_min_isr, offline = columns
        for topic in state.snapshot.topics:
            with_min_isr = state.min_isr[topic.name] is not None
            for p in topic.partitions:
                key = (topic.name, p.partition)
                status = state.partition_status[key]
                leader[key] = p.leader
                replicas[key] = len(p.replicas)
                isr[key] = len(p.isr)
                preferred[key] = int(status.leader_is_preferred)
                urp[key] = int(status.under_replicated)
                if with_min_isr:
                    under_min_isr[key] = int(status.under_min_isr)
                offline[key] = int(status.offline)
        yield gauge("kafka_topic_partition_leader", "Leader broker id (-1 when none).", _TP, leader)
        yield gauge("kafka_topic_partition_replicas", "Number of replicas.", _TP, replicas)
        yield gauge(
            "kafka_topic_partition_in_sync_replica", "Number of in-sync replicas.", _TP, isr
        )
        yield gauge(
            "kafka_topic_partition_leader_is_preferred",
            "1 if the leader is the preferred (first) replica.",
            _TP,
            preferred,
        )
        yield gauge(
            "kafka_topic_partition_under_replicated_partition",
            "1 if the ISR is smaller than the replicas.",
            _TP,
            urp,
        )
        yield gauge(
            "kafka_topic_partition_under_min_isr",
            "1 if the ISR is smaller than the topic's min.insync.replicas "
            "(the broker default when the topic does not set it).",
            _TP,
            under_min_isr,
        )
        yield gauge(
            "kafka_topic_partition_offline", "1 if the partition has no leader.", _TP, offline
        )
