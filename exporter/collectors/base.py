"""What every collector shares: reading the latest state without ever blocking on Kafka."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from exporter.model.state import ExporterState

StateSource = Callable[[], ExporterState | None]


class StateCollector(ABC):
    """Builds its families from the latest state; yields nothing before the first collection."""

    def __init__(self, source: StateSource) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        state = self._source()
        if state is not None:
            yield from self.families(state)

    @abstractmethod
    def families(self, state: ExporterState) -> Iterator[Metric]: ...


# A series' label values, in label order: one value, or a tuple of them (ints become strings).
LabelKey = str | int | tuple[str | int, ...]
_Family = TypeVar("_Family", GaugeMetricFamily, CounterMetricFamily)
_Key = TypeVar("_Key", bound=LabelKey)


def _filled(family: _Family, values: Mapping[_Key, float]) -> _Family:
    for key, value in values.items():
        parts = key if isinstance(key, tuple) else (key,)
        family.add_metric([str(part) for part in parts], value)
    return family


def gauge(
    name: str, documentation: str, labels: list[str], values: Mapping[_Key, float]
) -> GaugeMetricFamily:
    """A gauge family with one series per entry of `values`, keyed by label values."""
    return _filled(GaugeMetricFamily(name, documentation, labels=labels), values)


def counter(
    name: str, documentation: str, labels: list[str], values: Mapping[_Key, float]
) -> CounterMetricFamily:
    """A counter family with one series per entry of `values` (name without `_total`)."""
    return _filled(CounterMetricFamily(name, documentation, labels=labels), values)
