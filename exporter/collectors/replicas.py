"""Replicas and sizes: per-replica ISR membership, DescribeLogDirs sizes, log dir capacity."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from exporter.collectors.base import StateCollector, gauge
from exporter.state import ExporterState

_TPB = ["topic", "partition", "broker"]
_BD = ["broker", "log_dir"]


class ReplicaCollector(StateCollector):
    def families(self, state: ExporterState) -> Iterator[Metric]:
        in_sync = GaugeMetricFamily(
            "kafka_partition_replica_in_sync",
            "1 if this replica is in the ISR, else 0.",
            labels=_TPB,
        )
        for topic in state.snapshot.topics:
            for p in topic.partitions:
                isr = set(p.isr)
                for r in p.replicas:
                    in_sync.add_metric([topic.name, str(p.partition), str(r)], int(r in isr))
        yield in_sync

        known_topics = {t.name for t in state.snapshot.topics}
        size = GaugeMetricFamily(
            "kafka_partition_replica_size_bytes",
            "Size of this replica on disk (DescribeLogDirs).",
            labels=_TPB,
        )
        for (topic_name, partition, broker_id), nbytes in state.replica_sizes.items():
            if topic_name in known_topics:
                size.add_metric([topic_name, str(partition), str(broker_id)], nbytes)
        yield size

        yield gauge(
            "kafka_topic_size_bytes",
            "Sum of the topic's replica sizes over all brokers that answered DescribeLogDirs.",
            ["topic"],
            state.topic_size_bytes,
        )
        yield gauge(
            "kafka_topic_leader_size_bytes",
            "Sum of the leader replicas' sizes: the topic's logical size.",
            ["topic"],
            state.topic_leader_size_bytes,
        )

        used = GaugeMetricFamily(
            "kafka_broker_log_dir_size_bytes",
            "Bytes used by the partitions in this log dir.",
            labels=_BD,
        )
        total = GaugeMetricFamily(
            "kafka_broker_log_dir_total_bytes",
            "Size of the log dir's volume (Kafka >= 3.3).",
            labels=_BD,
        )
        usable = GaugeMetricFamily(
            "kafka_broker_log_dir_usable_bytes",
            "Free bytes on the log dir's volume (Kafka >= 3.3).",
            labels=_BD,
        )
        for broker_dirs in state.snapshot.log_dirs:
            for d in broker_dirs.log_dirs:
                labels = [str(broker_dirs.broker), d.path]
                if d.error is None:  # an offline log dir lists no partitions: its size is unknown
                    used.add_metric(labels, sum(p.size_bytes for p in d.partitions))
                if d.total_bytes is not None:
                    total.add_metric(labels, d.total_bytes)
                if d.usable_bytes is not None:
                    usable.add_metric(labels, d.usable_bytes)
        yield used
        yield total
        yield usable
