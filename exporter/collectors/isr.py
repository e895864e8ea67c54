"""ISR history: how long each replica has been out of the ISR, shrinks and expands per broker."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import StateCollector, StateSource, counter
from vigia.exporter.model.granularity import Replicas
from vigia.exporter.model.isr_history import (
    ISR_EXPANDS_HELP,
    ISR_SHRINKS_HELP,
    OUT_OF_SYNC_SECONDS_HELP,
)
from vigia.exporter.model.state import ExporterState


class IsrHistoryCollector(StateCollector):
    def __init__(self, source: StateSource, replicas: Replicas = Replicas.OUT_OF_SYNC) -> None:
        super().__init__(source)
        self._replicas = replicas

    def families(self, state: ExporterState) -> Iterator[Metric]:
        if self._replicas is not Replicas.OFF:
            yield self._out_of_sync(state)
        yield counter("kafka_broker_isr_shrinks", ISR_SHRINKS_HELP, ["broker"], state.isr_shrinks)
        yield counter("kafka_broker_isr_expands", ISR_EXPANDS_HELP, ["broker"], state.isr_expands)

    def _out_of_sync(self, state: ExporterState) -> Metric:
        out_of_sync = GaugeMetricFamily(
            "kafka_partition_replica_out_of_sync_seconds",
            OUT_OF_SYNC_SECONDS_HELP,
            labels=["topic", "partition", "broker"],
        )
        seconds = state.out_of_sync_seconds
        if self._replicas is Replicas.ALL:
            for topic in state.snapshot.topics:
                for p in topic.partitions:
                    for r in p.replicas:
                        value = seconds.get((topic.name, p.partition, r), 0.0)
                        out_of_sync.add_metric([topic.name, str(p.partition), str(r)], value)
        else:  # the state keeps exactly the replicas out of the ISR
            for (topic_name, partition, broker), value in seconds.items():
                out_of_sync.add_metric([topic_name, str(partition), str(broker)], value)
        return out_of_sync
