"""Brokers and cluster: membership, controller, partition leadership per broker."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import StateCollector, gauge
from vigia.exporter.model.state import ExporterState


class ClusterCollector(StateCollector):
    def families(self, state: ExporterState) -> Iterator[Metric]:
        snap = state.snapshot
        if snap.has_metadata:
            yield GaugeMetricFamily(
                "kafka_brokers", "Brokers in the cluster metadata.", value=len(snap.brokers)
            )
        info = GaugeMetricFamily(
            "kafka_broker_info",
            "Broker in the cluster metadata (value 1); is_controller from the KRaft quorum leader.",
            labels=["id", "address", "rack", "is_controller"],
        )
        for b in snap.brokers:
            is_controller = "true" if b.id == snap.controller_id else "false"
            info.add_metric([str(b.id), f"{b.host}:{b.port}", b.rack or "", is_controller], 1)
        yield info
        yield gauge(
            "kafka_broker_up",
            "1 if the broker is in the metadata, 0 if the cluster expects it (replica "
            "assignments, KRaft voters) but it is absent.",
            ["broker"],
            {broker: int(up) for broker, up in state.broker_up.items()},
        )

        if snap.cluster_id is not None:
            cluster = GaugeMetricFamily(
                "kafka_cluster_info",
                "Cluster id and active controller (KRaft quorum leader when known); value 1.",
                labels=["cluster_id", "controller_id"],
            )
            controller = "" if snap.controller_id is None else str(snap.controller_id)
            cluster.add_metric([snap.cluster_id, controller], 1)
            yield cluster

        leader = GaugeMetricFamily(
            "kafka_broker_leader_partitions",
            "Partitions this broker leads.",
            labels=["broker"],
        )
        follower = GaugeMetricFamily(
            "kafka_broker_follower_partitions",
            "In-sync follower replicas on this broker (replica in the ISR, not the leader).",
            labels=["broker"],
        )
        preferred = GaugeMetricFamily(
            "kafka_broker_preferred_leader_partitions",
            "Partitions whose preferred (first) replica is this broker.",
            labels=["broker"],
        )
        for broker, counts in state.broker_counts.items():
            labels = [str(broker)]
            leader.add_metric(labels, counts.leader)
            follower.add_metric(labels, counts.follower_in_sync)
            preferred.add_metric(labels, counts.preferred_leader)
        yield leader
        yield follower
        yield preferred

        yield gauge(
            "kafka_topic_broker_leader_partitions",
            "Partitions of this topic led by this broker (brokers holding a replica of the topic).",
            ["topic", "broker"],
            state.topic_broker_leaders,
        )
