"""What every collector shares: reading the latest state without ever blocking on Kafka."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import Metric

from exporter.state import ExporterState


class StateCollector(ABC):
    """Builds its families from the latest state; yields nothing before the first collection."""

    def __init__(self, source: Callable[[], ExporterState | None]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        state = self._source()
        if state is not None:
            yield from self.families(state)

    @abstractmethod
    def families(self, state: ExporterState) -> Iterator[Metric]: ...
