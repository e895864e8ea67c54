"""The exporter's own health: did the last collection work, how long did it take, what failed."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from vigia.exporter.model.state import ExporterState


class HealthCollector:
    """Unlike the Kafka collectors, answers before the first collection too (up 0)."""

    def __init__(self, source: Callable[[], ExporterState | None], version: str) -> None:
        self._source = source
        self._version = version

    def collect(self) -> Iterator[Metric]:
        state = self._source()
        yield GaugeMetricFamily(
            "vigia_exporter_up",
            "1 when every phase of the last collection succeeded (groups it may not describe "
            "excepted), else 0.",
            value=1 if state is not None and state.up else 0,
        )
        duration = GaugeMetricFamily(
            "vigia_exporter_collection_duration_seconds",
            "Duration of the last collection, per phase and in total.",
            labels=["phase"],
        )
        errors = CounterMetricFamily(
            "vigia_exporter_collection_errors",
            "Collections in which this phase failed (partial failures included).",
            labels=["phase"],
        )
        if state is not None:
            for phase, seconds in state.snapshot.durations.items():
                duration.add_metric([phase], seconds)
            for phase, count in state.errors_total.items():
                errors.add_metric([phase], count)
        yield duration
        if state is not None:
            yield GaugeMetricFamily(
                "vigia_exporter_last_collection_timestamp_seconds",
                "Unix time at which the last collection finished.",
                value=state.snapshot.collected_at + state.snapshot.durations.get("total", 0.0),
            )
        yield errors
        broker_errors = CounterMetricFamily(
            "vigia_exporter_broker_errors",
            "Collections in which this broker's own answer for this phase could not be had (the "
            "broker is starting or just back); the collection itself still succeeds.",
            labels=["broker", "phase"],
        )
        if state is not None:
            for (broker, phase), count in sorted(state.broker_errors_total.items()):
                broker_errors.add_metric([str(broker), phase], count)
        yield broker_errors
        if state is not None:
            capability = GaugeMetricFamily(
                "vigia_exporter_capability",
                "1 if the cluster answers this optional API, 0 if it does not support it "
                "(its families are then left out); no series while unknown.",
                labels=["capability"],
            )
            for name, on in sorted(state.snapshot.capabilities.items()):
                capability.add_metric([name], int(on))
            yield capability
        build = GaugeMetricFamily(
            "vigia_exporter_build_info", "Exporter version (value 1).", labels=["version"]
        )
        build.add_metric([self._version], 1)
        yield build


class PaceCollector:
    """Whether collections keep to their interval; from the collection loop, at each scrape (it
    changes when a collection ends, not with the state a scrape's cached text was made from)."""

    def __init__(self, interval: float, overrunning: Callable[[], bool]) -> None:
        self._interval = interval
        self._overrunning = overrunning

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "vigia_exporter_collection_interval_seconds",
            "Time from the start of one collection to the start of the next (--collection-"
            "interval), unless a collection takes longer.",
            value=self._interval,
        )
        yield GaugeMetricFamily(
            "vigia_exporter_collection_overrunning",
            "1 when the last collection took longer than the interval: collections then run "
            "back to back, and each value is as old as a collection takes.",
            value=int(self._overrunning()),
        )
