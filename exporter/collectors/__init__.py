"""prometheus-client custom collectors, one per metric family group.

Each collector builds its families afresh from an `ExporterState` whenever it is collected, so
topics and groups that disappeared from the cluster disappear from /metrics at the next
collection. They only read that state, never Kafka; the app renders each state once, on the
collection thread, and serves the text from cache.
"""

from __future__ import annotations

from collections.abc import Callable

from exporter.collectors.cluster import ClusterCollector
from exporter.collectors.groups import ConsumerGroupCollector
from exporter.collectors.health import HealthCollector
from exporter.collectors.replicas import ReplicaCollector
from exporter.collectors.topics import TopicCollector
from exporter.exposition import text
from exporter.state import ExporterState
from exporter.version import VERSION

StateSource = Callable[[], ExporterState | None]


Collector = (
    ClusterCollector | TopicCollector | ReplicaCollector | ConsumerGroupCollector | HealthCollector
)


def collectors(source: StateSource, version: str = VERSION) -> list[Collector]:
    """Every family group, in exposition order; each can be registered in a CollectorRegistry."""
    return [
        ClusterCollector(source),
        TopicCollector(source),
        ReplicaCollector(source),
        ConsumerGroupCollector(source),
        HealthCollector(source, version),
    ]


def render(state: ExporterState | None) -> str:
    """The Prometheus text exposition /metrics serves for this state."""
    return text(m for c in collectors(lambda: state) for m in c.collect())
