"""prometheus-client custom collectors, one per metric family group.

Each collector builds its families afresh from an `ExporterState` whenever it is collected, so
topics and groups that disappeared from the cluster disappear from /metrics at the next
collection. They only read that state, never Kafka; the app renders each state once, on the
collection thread, and serves the text from cache.

The probe's families are the exception: the probe runs on its own threads and schedule, so they
are rendered from the runner's counters at each scrape (`render_probe`, a few dozen lines; reading
the counters takes a lock the probe holds only around in-memory bookkeeping, never a Kafka call)
and appended to the cached text.
"""

from __future__ import annotations

from collections.abc import Callable

from exporter.collectors.cluster import ClusterCollector
from exporter.collectors.groups import ConsumerGroupCollector
from exporter.collectors.health import HealthCollector
from exporter.collectors.isr import IsrHistoryCollector
from exporter.collectors.kafka_errors import KafkaErrorCollector
from exporter.collectors.lag import LagCollector
from exporter.collectors.replicas import ReplicaCollector
from exporter.collectors.topics import TopicCollector
from exporter.exposition import text
from exporter.probe.collector import ProbeCollector
from exporter.probe.runner import DISABLED, ProbeRunner
from exporter.state import ExporterState
from exporter.version import VERSION

StateSource = Callable[[], ExporterState | None]


Collector = (
    ClusterCollector
    | TopicCollector
    | ReplicaCollector
    | IsrHistoryCollector
    | ConsumerGroupCollector
    | LagCollector
    | HealthCollector
    | KafkaErrorCollector
)


def collectors(source: StateSource, version: str = VERSION) -> list[Collector]:
    """Every family group, in exposition order; each can be registered in a CollectorRegistry."""
    return [
        ClusterCollector(source),
        TopicCollector(source),
        ReplicaCollector(source),
        IsrHistoryCollector(source),
        ConsumerGroupCollector(source),
        LagCollector(source),
        HealthCollector(source, version),
        KafkaErrorCollector(source),
    ]


def render(state: ExporterState | None) -> str:
    """The Prometheus text exposition of the collection families for this state."""
    return text(m for c in collectors(lambda: state) for m in c.collect())


def probe_collector(probe: ProbeRunner | None) -> ProbeCollector:
    """The probe's families; no runner is the same as a disabled one (only vigia_probe_up 0)."""
    if probe is None:
        return ProbeCollector(lambda: None, lambda: DISABLED)
    return ProbeCollector(probe.stats, lambda: probe.status, probe.coverage)


def render_probe(probe: ProbeRunner | None) -> str:
    return text(probe_collector(probe).collect())


def exposition(state: ExporterState | None, probe: ProbeRunner | None = None) -> str:
    """Everything /metrics serves for this state and probe."""
    return render(state) + render_probe(probe)
