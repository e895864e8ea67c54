"""Replicas and sizes: per-replica ISR membership, DescribeLogDirs sizes, log dir capacity."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import StateCollector, StateSource, gauge
from vigia.exporter.model.granularity import Replicas
from vigia.exporter.model.state import ExporterState

_TPB = ["topic", "partition", "broker"]
_BD = ["broker", "log_dir"]


class ReplicaCollector(StateCollector):
    def __init__(self, source: StateSource, replicas: Replicas = Replicas.OUT_OF_SYNC) -> None:
        super().__init__(source)
        self._replicas = replicas

    def families(self, state: ExporterState) -> Iterator[Metric]:
        if self._replicas is not Replicas.OFF:
            yield from self._replica_families(state)

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
        yield from _log_dir_families(state)

    def _replica_families(self, state: ExporterState) -> Iterator[Metric]:
        every = self._replicas is Replicas.ALL
        in_sync = GaugeMetricFamily(
            "kafka_partition_replica_in_sync",
            "1 if this replica is in the ISR, else 0.",
            labels=_TPB,
        )
        size = GaugeMetricFamily(
            "kafka_partition_replica_size_bytes",
            "Size of this replica on disk (DescribeLogDirs).",
            labels=_TPB,
        )
        out_of_sync: list[tuple[str, int, int]] = []
        for topic in state.snapshot.topics:
            for p in topic.partitions:
                isr = p.isr
                for r in p.replicas:
                    ok = r in isr
                    if every or not ok:
                        in_sync.add_metric([topic.name, str(p.partition), str(r)], int(ok))
                    if not ok:
                        out_of_sync.append((topic.name, p.partition, r))
        if every:
            known_topics = {t.name for t in state.snapshot.topics}
            sizes = {k: v for k, v in state.replica_sizes.items() if k[0] in known_topics}
        else:
            sizes = {k: state.replica_sizes[k] for k in out_of_sync if k in state.replica_sizes}
        for (topic_name, partition, broker_id), nbytes in sizes.items():
            size.add_metric([topic_name, str(partition), str(broker_id)], nbytes)
        yield in_sync
        yield size


def _log_dir_families(state: ExporterState) -> Iterator[Metric]:
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
