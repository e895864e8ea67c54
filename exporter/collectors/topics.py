"""Topics and partitions: offsets, leadership, replication health, message rates."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from exporter.collectors.base import StateCollector, gauge
from exporter.state import ExporterState

_TP = ["topic", "partition"]


def _tp_gauge(name: str, documentation: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=_TP)


class TopicCollector(StateCollector):
    def families(self, state: ExporterState) -> Iterator[Metric]:
        partitions = GaugeMetricFamily(
            "kafka_topic_partitions", "Number of partitions of the topic.", labels=["topic"]
        )
        current = _tp_gauge(
            "kafka_topic_partition_current_offset",
            "Latest offset (high watermark) of the partition.",
        )
        oldest = _tp_gauge(
            "kafka_topic_partition_oldest_offset", "Earliest offset of the partition."
        )
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
            partitions.add_metric([topic.name], len(topic.partitions))
            for p in topic.partitions:
                labels = [topic.name, str(p.partition)]
                status = state.partition_status[(topic.name, p.partition)]
                if p.latest_offset is not None:
                    current.add_metric(labels, p.latest_offset)
                if p.earliest_offset is not None:
                    oldest.add_metric(labels, p.earliest_offset)
                leader.add_metric(labels, p.leader)
                replicas.add_metric(labels, len(p.replicas))
                isr.add_metric(labels, len(p.isr))
                preferred.add_metric(labels, int(status.leader_is_preferred))
                urp.add_metric(labels, int(status.under_replicated))
                if state.min_isr[topic.name] is not None:
                    under_min_isr.add_metric(labels, int(status.under_min_isr))
                offline.add_metric(labels, int(status.offline))
        yield from (partitions, current, oldest, leader, replicas, isr, preferred, urp)
        yield from (under_min_isr, offline)

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
