"""What every collector shares: reading the latest state without ever blocking on Kafka."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

from vigia.exporter.model.state import ExporterState

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
_Key = TypeVar("_Key", bound=LabelKey)


class KeyedFamily(Metric, Generic[_Key]):
    """A gauge or counter family held as {label values: value}, one series per entry, in the
    mapping's order. `text_format` writes it straight from the mapping: building a `Sample` per
    series was most of the rendering's time at 2,000 groups (issue 24); `samples` builds them for
    other readers (a CollectorRegistry)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        typ: str,
        labels: list[str],
        values: Mapping[_Key, float],
    ) -> None:
        super().__init__(name, documentation, typ)
        self.label_names = tuple(labels)
        self.values = values
        # As prometheus_client's CounterMetricFamily names a counter's samples.
        self.sample_name = f"{name}_total" if typ == "counter" else name

    @property
    def samples(self) -> list[Sample]:
        return [
            Sample(
                self.sample_name, dict(zip(self.label_names, _label_values(key), strict=True)), v
            )
            for key, v in self.values.items()
        ]

    @samples.setter
    def samples(self, value: list[Sample]) -> None:
        # Metric.__init__ starts every family with no samples; this one's come from `values`.
        if value:
            raise ValueError(f"{self.name}: samples come from its values")


def _label_values(key: LabelKey) -> list[str]:
    return [str(part) for part in key] if isinstance(key, tuple) else [str(key)]


def gauge(
    name: str, documentation: str, labels: list[str], values: Mapping[_Key, float]
) -> KeyedFamily[_Key]:
    """A gauge family with one series per entry of `values`, keyed by label values."""
    return KeyedFamily(name, documentation, "gauge", labels, values)


def counter(
    name: str, documentation: str, labels: list[str], values: Mapping[_Key, float]
) -> KeyedFamily[_Key]:
    """A counter family with one series per entry of `values` (name without `_total`)."""
    return KeyedFamily(name, documentation, "counter", labels, values)
