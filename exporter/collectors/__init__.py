"""The Prometheus side: one collector per family group, and the text format /metrics serves.
May import the model, `version`, prometheus-client, and `probe` and `hes` (rendered per scrape).

Each collector builds its families afresh from an `ExporterState` whenever it is collected, so
topics and groups that disappeared from the cluster disappear from /metrics at the next
collection. They only read that state, never Kafka; the app renders each state at most once, when
it is first scraped, and serves the bytes from cache. Per-partition and per-replica families are
built only at the granularity asked for (`exporter.model.granularity`).

The probe's families are the exception (and, like them, whether collections keep to their
interval): the probe runs on its own threads and schedule, so they are rendered from the runner's
counters at each scrape (`render_probe`, a few dozen lines; reading
the counters takes a lock the probe holds only around in-memory bookkeeping, never a Kafka call)
and appended to the cached text.
"""

from __future__ import annotations

from vigia.exporter.collectors.base import StateSource
from vigia.exporter.collectors.binlog import BinlogCollector
from vigia.exporter.collectors.cluster import ClusterCollector
from vigia.exporter.collectors.groups import ConsumerGroupCollector
from vigia.exporter.collectors.health import HealthCollector, PaceCollector
from vigia.exporter.collectors.hes import HesCollector
from vigia.exporter.collectors.isr import IsrHistoryCollector
from vigia.exporter.collectors.kafka_errors import KafkaErrorCollector
from vigia.exporter.collectors.lag import LagCollector
from vigia.exporter.collectors.loss_horizon import LossHorizonCollector
from vigia.exporter.collectors.replicas import ReplicaCollector
from vigia.exporter.collectors.retention import RetentionCollector
from vigia.exporter.collectors.text_format import encoded, text
from vigia.exporter.collectors.topics import TopicCollector
from vigia.exporter.hes.horizon import leg_horizon
from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.model.granularity import DEFAULT, Granularity
from vigia.exporter.model.state import ExporterState
from vigia.exporter.probe.collector import ProbeCollector
from vigia.exporter.probe.runner import DISABLED, ProbeRunner
from vigia.exporter.version import VERSION

Collector = (
    ClusterCollector
    | TopicCollector
    | ReplicaCollector
    | IsrHistoryCollector
    | ConsumerGroupCollector
    | LagCollector
    | RetentionCollector
    | HealthCollector
    | KafkaErrorCollector
)


def collectors(
    source: StateSource, version: str = VERSION, granularity: Granularity = DEFAULT
) -> list[Collector]:
    """Every family group, in exposition order; each can be registered in a CollectorRegistry."""
    return [
        ClusterCollector(source),
        TopicCollector(source, granularity),
        ReplicaCollector(source, granularity.replicas),
        IsrHistoryCollector(source, granularity.replicas),
        ConsumerGroupCollector(source, granularity.group_offsets),
        LagCollector(source, granularity.group_lag),
        RetentionCollector(source, granularity.group_lag),
        HealthCollector(source, version),
        KafkaErrorCollector(source),
    ]


def render(state: ExporterState | None, granularity: Granularity = DEFAULT) -> str:
    """The Prometheus text exposition of the collection families for this state."""
    return render_bytes(state, granularity).decode("utf-8")


def render_bytes(state: ExporterState | None, granularity: Granularity = DEFAULT) -> bytes:
    """`render`, UTF-8 encoded, as /metrics serves it."""
    return encoded(
        m for c in collectors(lambda: state, granularity=granularity) for m in c.collect()
    )


def probe_collector(probe: ProbeRunner | None) -> ProbeCollector:
    """The probe's families; no runner is the same as a disabled one (only vigia_probe_up 0)."""
    if probe is None:
        return ProbeCollector(lambda: None, lambda: DISABLED)
    return ProbeCollector(probe.stats, lambda: probe.status, probe.coverage)


def render_probe(probe: ProbeRunner | None) -> str:
    return text(probe_collector(probe).collect())


def render_pace(interval: float, overrunning: bool) -> str:
    return text(PaceCollector(interval, lambda: overrunning).collect())


def render_source(source: SourceWatcher | None, state: ExporterState | None) -> str:
    """The HES leg's families (nothing without --hes-dsn): rendered at each scrape like the
    probe's, from the source watch's last round and this collection's lag seconds and retention
    view (the leg's loss horizon)."""
    if source is None:
        return ""
    hes = text(
        HesCollector(lambda: source.look, lambda: state, source.group, source.topic).collect()
    )
    horizon = text(LossHorizonCollector(leg_horizon(source, state)).collect())
    if source.binlog is None:
        return hes + horizon
    binlog = text(BinlogCollector(source.binlog.connector, source.binlog.verdict).collect())
    return hes + binlog + horizon


def exposition(
    state: ExporterState | None,
    probe: ProbeRunner | None = None,
    granularity: Granularity = DEFAULT,
) -> str:
    """What /metrics serves for this state and probe, but for the loop's pace (`render_pace`)
    and the HES and Connect families."""
    return render(state, granularity) + render_probe(probe)
