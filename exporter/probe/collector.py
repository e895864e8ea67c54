"""Prometheus collector for the end-to-end probe: families rebuilt from `ProbeStats` on each scrape.

    registry.register(ProbeCollector(runner.stats, lambda: runner.status, runner.coverage))

`stats` is any callable returning the current `ProbeStats` (or None: no probe series at all, e.g.
probing disabled); `status` returns the runner's status, and `vigia_probe_up` is 1 only while it
is "running", so alerts can tell "the probe sees no traffic" from "the probe is off".
`coverage` returns broker → whether it leads a probe partition (`vigia_probe_broker_covered`).
Label values: `broker` is the id of the broker leading the probe partition when the message was
sent, `acks` is `all` or `1`, `outcome` is `ok`, `failed` or `lost`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from vigia.exporter.probe.runner import RUNNING
from vigia.exporter.probe.tracker import HistogramSnapshot, ProbeStats

UP = "vigia_probe_up"
PRODUCE_LATENCY = "vigia_probe_produce_latency_seconds"
REPLICATION_LATENCY = "vigia_probe_replication_latency_seconds"
ROUNDTRIP_LATENCY = "vigia_probe_roundtrip_latency_seconds"
MESSAGES = "vigia_probe_messages"  # exposed as vigia_probe_messages_total
COVERED = "vigia_probe_broker_covered"

UP_HELP = (
    "1 while the end-to-end probe runs, 0 when it is disabled (--no-probe) or off (e.g. the probe "
    "topic cannot be created; the exporter log and /api/v1/cluster say why)."
)
PRODUCE_LATENCY_HELP = (
    "Time from producing a probe message to its delivery report, by the broker leading the probe "
    "partition and the producer's acks setting (all: written to every in-sync replica; "
    "1: leader only)."
)
REPLICATION_LATENCY_HELP = (
    "Estimated replication latency of the broker's probe partition: median over the last probe "
    "rounds of the acks=all minus the acks=1 produce latency of the same round (clamped at 0)."
)
ROUNDTRIP_LATENCY_HELP = (
    "Time from producing a probe message to the exporter's probe consumer reading it, by the "
    "broker leading the probe partition."
)
MESSAGES_HELP = (
    "Probe messages by leading broker and outcome: ok = consumed before the deadline, failed = the "
    "produce failed, lost = produced but not consumed before the deadline."
)
COVERED_HELP = (
    "1 when the broker leads a probe partition, so the probe measures it; 0 when it leads none "
    "(stopped, or leadership moved away and could not be moved back). One series per broker in "
    "the cluster metadata or holding a probe replica."
)


class ProbeCollector(Collector):
    def __init__(
        self,
        stats: Callable[[], ProbeStats | None],
        status: Callable[[], str],
        coverage: Callable[[], Mapping[int, bool]] = dict,
    ) -> None:
        self._stats = stats
        self._status = status
        self._coverage = coverage

    def describe(self) -> Iterator[Metric]:
        # Names only, so registering never calls into the probe.
        yield GaugeMetricFamily(UP, UP_HELP)
        yield HistogramMetricFamily(
            PRODUCE_LATENCY, PRODUCE_LATENCY_HELP, labels=["broker", "acks"]
        )
        yield GaugeMetricFamily(REPLICATION_LATENCY, REPLICATION_LATENCY_HELP, labels=["broker"])
        yield HistogramMetricFamily(ROUNDTRIP_LATENCY, ROUNDTRIP_LATENCY_HELP, labels=["broker"])
        yield CounterMetricFamily(MESSAGES, MESSAGES_HELP, labels=["broker", "outcome"])
        yield GaugeMetricFamily(COVERED, COVERED_HELP, labels=["broker"])

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(UP, UP_HELP, value=int(self._status() == RUNNING))
        stats = self._stats()
        if stats is None:
            return
        produce = HistogramMetricFamily(
            PRODUCE_LATENCY, PRODUCE_LATENCY_HELP, labels=["broker", "acks"]
        )
        for (broker, acks), histogram in sorted(stats.produce_latency.items()):
            _add(produce, [str(broker), acks], histogram)
        yield produce

        replication = GaugeMetricFamily(
            REPLICATION_LATENCY, REPLICATION_LATENCY_HELP, labels=["broker"]
        )
        for broker, seconds in sorted(stats.replication_latency.items()):
            replication.add_metric([str(broker)], seconds)
        yield replication

        roundtrip = HistogramMetricFamily(
            ROUNDTRIP_LATENCY, ROUNDTRIP_LATENCY_HELP, labels=["broker"]
        )
        for broker, histogram in sorted(stats.roundtrip_latency.items()):
            _add(roundtrip, [str(broker)], histogram)
        yield roundtrip

        messages = CounterMetricFamily(MESSAGES, MESSAGES_HELP, labels=["broker", "outcome"])
        for (broker, outcome), count in sorted(stats.messages.items()):
            messages.add_metric([str(broker), outcome], count)
        yield messages

        covered = GaugeMetricFamily(COVERED, COVERED_HELP, labels=["broker"])
        for broker, is_covered in sorted(self._coverage().items()):
            covered.add_metric([str(broker)], int(is_covered))
        yield covered


def _add(family: HistogramMetricFamily, labels: list[str], histogram: HistogramSnapshot) -> None:
    family.add_metric(
        labels,
        buckets=[("+Inf" if math.isinf(b) else str(b), count) for b, count in histogram.buckets],
        sum_value=histogram.sum,
    )
