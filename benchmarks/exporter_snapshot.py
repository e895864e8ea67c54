"""CPU time per collection of the exporter, phase by phase, at 2,000 and 10,000 partitions.

For each size, in process CPU seconds (time.process_time: every thread of this process,
librdkafka's included; the machine is shared, so wall time would measure the neighbours):
- collect: `KafkaAdapter.collect` against librdkafka's mock cluster, run in a child process so
  that its own CPU is not counted (topics of 4 partitions, the mock's only kind; 55 groups
  committing 23 topics each). The mock has no DescribeLogDirs, DescribeQuorum, DescribeConfigs or
  DescribeGroups: those phases fail at once, so a real cluster adds their answers' parsing.
- derive: snapshot → state in steady state (after a full lag-status window of collections 15 s
  apart: rates, lag seconds, statuses and ISR history all computed), on a synthetic cluster of
  50-partition topics, RF 3, 55 groups reading 2 topics each.
- render: state → /metrics bytes at each granularity (docs/metrics.md, "Series budget"), done once
  per collection and only when scraped; plus the probe's part, rendered at each scrape, and the
  JSON of /api/v1/cluster (only when requested).
Goal (issue 10): ≤ 0.3 CPU-s per collection at 2,000 partitions and 55 groups, everything
included, against kafka_exporter's 1.62 CPU-s per scrape. Also reports the history's memory and
the process's peak RSS (goal ≤ 300 MB at 10,000 partitions).

    python benchmarks/exporter_snapshot.py                       # 2,000 and 10,000 partitions
    python benchmarks/exporter_snapshot.py --partitions 2000 --no-collect
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import resource
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FunctionType, MappingProxyType, MethodType, ModuleType
from typing import Any, TypeVar

from benchmarks.mock_cluster import MockGapsAdmin, MockShape, mock_cluster
from vigia.common.logs import setup_logging
from vigia.exporter.cli import tune_gc
from vigia.exporter.collectors import render, render_probe
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters
from vigia.exporter.model.granularity import DEFAULT, FULL, Granularity, Level, Replicas
from vigia.exporter.model.lag_status import DEFAULT_WINDOW_SIZE
from vigia.exporter.model.snapshot import (
    Broker,
    BrokerLogDirs,
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    GroupMember,
    LogDir,
    LogDirPartition,
    Partition,
    Quorum,
    RecordTime,
    Topic,
    TopicPartitionRef,
)
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.probe.runner import ProbeRunner, ProbeSettings
from vigia.exporter.probe.tracker import LatencyTracker, ProbeStats
from vigia.exporter.web import api

log = logging.getLogger("benchmarks.exporter_snapshot")
T = TypeVar("T")
# What the mock cluster cannot answer (see benchmarks/mock_cluster.py).
MOCK_FAILS = frozenset({"cluster", "configs", "groups", "log_dirs"})


@dataclass(frozen=True)
class Shape:
    """A cluster's size: topics as (name, partitions, replication factor), groups as (group id,
    the topics it reads, all of whose partitions it commits)."""

    brokers: int
    topics: tuple[tuple[str, int, int], ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...]


def uniform_shape(
    brokers: int, partitions: int, rf: int, groups: int, partitions_per_topic: int = 100
) -> Shape:
    """Topics of `partitions_per_topic` partitions; group i reads topic i mod topics."""
    n_topics = max(1, -(-partitions // partitions_per_topic))
    topics = tuple(
        (f"topic-{t:05d}", min(partitions_per_topic, partitions - t * partitions_per_topic), rf)
        for t in range(n_topics)
    )
    return Shape(
        brokers,
        topics,
        tuple((f"group-{g:04d}", (topics[g % n_topics][0],)) for g in range(groups)),
    )


def _topics_of(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}-{t:02d}" for t in range(count))


# The cluster of issue 10, where kafka_exporter 1.9.0 served 24,893 series: 3 brokers, 2,090
# partitions (40 topics of 50, __consumer_offsets, Kafka Connect's and a schema topic) holding
# 6,231 replicas; 55 groups committing 5,018 partitions of 102 topics.
_TOPIC = _topics_of("topic", 40)
ISSUE_10_CLUSTER = Shape(
    brokers=3,
    topics=(
        *((t, 50, 3) for t in _TOPIC),
        ("__consumer_offsets", 50, 3),
        ("connect-offsets", 21, 2),
        ("connect-status", 13, 2),
        ("connect-configs", 5, 2),
        ("_schemas", 1, 3),
    ),
    groups=(
        *((f"app-{g:02d}", (_TOPIC[g % 40],)) for g in range(45)),
        *((f"pipeline-{g}", tuple(_TOPIC[(5 * g + k) % 40] for k in range(5))) for g in range(9)),
        ("pipeline-9", (*_TOPIC[25:35], "connect-status", "connect-configs")),
    ),
)


def shaped_snapshot(
    shape: Shape, *, collected_at: float = 1_800_000_000.0, offset_base: int = 1_000_000
) -> ClusterSnapshot:
    """A healthy cluster of this shape: replicas round-robin, all in sync, every group 500
    messages behind on every partition it reads."""
    brokers = shape.brokers
    topics = []
    replicas_on: dict[int, list[LogDirPartition]] = {b: [] for b in range(1, brokers + 1)}
    made = 0
    for name, count, topic_rf in shape.topics:
        rf = min(topic_rf, brokers)
        parts = []
        for p in range(count):
            replicas = tuple((made + p + r) % brokers + 1 for r in range(rf))
            latest = offset_base + 1000 * p
            parts.append(Partition(p, replicas[0], replicas, replicas, (), 0, latest))
            for b in replicas:
                replicas_on[b].append(LogDirPartition(name, p, latest * 150, 0, False))
        made += len(parts)
        topics.append(
            Topic(name, False, tuple(parts), MappingProxyType({"min.insync.replicas": "2"}))
        )
    by_name = {t.name: t for t in topics}
    group_list = []
    for g, (group_id, read) in enumerate(shape.groups):
        owned = [(by_name[t], p) for t in read for p in by_name[t].partitions]
        committed = tuple(
            CommittedOffset(t.name, p.partition, (p.latest_offset or 0) - 500) for t, p in owned
        )
        member = GroupMember(
            f"consumer-{g}-member",
            f"consumer-{g}",
            "/10.0.0.1",
            tuple(TopicPartitionRef(t.name, p.partition) for t, p in owned),
        )
        group_list.append(
            ConsumerGroup(group_id, "STABLE", "CLASSIC", "range", 1, (member,), committed)
        )
    return healthy_snapshot(collected_at, topics, replicas_on, group_list)


def healthy_snapshot(
    collected_at: float,
    topics: Sequence[Topic],
    replicas_on: Mapping[int, Sequence[LogDirPartition]],
    groups: Sequence[ConsumerGroup],
    record_times: tuple[RecordTime, ...] = (),
) -> ClusterSnapshot:
    """A synthetic cluster's collection: the brokers of `replicas_on` (id → the replicas in its
    one log dir), all up, broker 1 the quorum's controller."""
    return ClusterSnapshot(
        collected_at=collected_at,
        cluster_id="synthetic",
        controller_id=1,
        controller_source="quorum",
        brokers=tuple(Broker(b, f"broker-{b}", 9092) for b in replicas_on),
        topics=tuple(topics),
        log_dirs=tuple(
            BrokerLogDirs(b, None, (LogDir("/var/lib/kafka", None, 10**12, 5 * 10**11, tuple(ps)),))
            for b, ps in replicas_on.items()
        ),
        groups=tuple(groups),
        quorum=Quorum(1, (), ()),
        broker_min_insync_replicas=2,
        record_times=record_times,
    )


def synthetic_snapshot(
    brokers: int,
    partitions: int,
    rf: int,
    groups: int,
    *,
    partitions_per_topic: int = 100,
    collected_at: float = 1_800_000_000.0,
    offset_base: int = 1_000_000,
) -> ClusterSnapshot:
    """A healthy cluster of `uniform_shape`."""
    shape = uniform_shape(brokers, partitions, rf, groups, partitions_per_topic)
    return shaped_snapshot(shape, collected_at=collected_at, offset_base=offset_base)


def _deep_size(root: object) -> int:
    """Bytes of `root` and everything it references (each object once), as sys.getsizeof sees
    them; modules, classes and functions are not followed."""
    seen: set[int] = set()
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type | ModuleType | FunctionType | MethodType):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset | deque):
            stack.extend(obj)
        elif not isinstance(obj, str | bytes | int | float | array):
            stack.extend(getattr(obj, "__dict__", {}).values())
            for cls in type(obj).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if hasattr(obj, slot):
                        stack.append(getattr(obj, slot))
    return total


class _MeasuredProbe(ProbeRunner):
    """A running probe's counters (one round trip per broker per interval for an hour), no Kafka."""

    def __init__(self, brokers: int) -> None:
        super().__init__({}, ProbeSettings())
        self._status = "running"
        tracker = LatencyTracker()
        for n in range(720):
            for broker in range(1, brokers + 1):
                for acks, latency in (("all", 0.003), ("1", 0.001)):
                    message = f"{n}:{broker}:{acks}"
                    tracker.sent(
                        message, partition=broker, broker=broker, acks=acks, round_id=n, at=n
                    )
                    tracker.delivered(message, at=n, latency=latency)
                    tracker.received(message, at=n + 0.01)
        self._stats = tracker.stats()

    def stats(self) -> ProbeStats | None:
        return self._stats


GRANULARITIES = {
    "default": DEFAULT,
    "full (partition, all replicas)": FULL,
    "topic (every group at topic, replicas off)": Granularity(
        Level.TOPIC, Level.TOPIC, Level.TOPIC, Level.TOPIC, Replicas.OFF
    ),
}


def benchmark_shape(partitions: int, groups: int) -> Shape:
    """Topics of 50 partitions, RF 3; group g reads topics 2g and 2g + 1 (mod topics)."""
    n_topics = max(1, partitions // 50)
    topics = tuple((f"topic-{t:05d}", 50, 3) for t in range(n_topics))
    return Shape(
        3,
        topics,
        tuple(
            (f"group-{g:03d}", (topics[2 * g % n_topics][0], topics[(2 * g + 1) % n_topics][0]))
            for g in range(groups)
        ),
    )


def _cpu(fn: Callable[[], T], repeat: int = 1) -> tuple[T, float]:
    """The last result and the mean process CPU seconds of `repeat` calls."""
    started = time.process_time()
    for _ in range(repeat):
        result = fn()
    return result, (time.process_time() - started) / repeat


def _no_legacy_admin(config: Mapping[str, Any]) -> Any:
    raise RuntimeError("the mock cluster has no DescribeLogDirs or DescribeQuorum")


def measure_collect(partitions: int, groups: int, repeat: int) -> float:
    shape = MockShape(brokers=3, topics=partitions // 4, groups=groups, topics_per_group=23)
    committed = shape.group_topics()
    with mock_cluster(shape) as bootstrap:
        adapter = KafkaAdapter(
            bootstrap,
            {},
            Filters(),
            admin_factory=lambda config: MockGapsAdmin(config, committed),
            legacy_admin_factory=_no_legacy_admin,
        )
        try:
            snap = adapter.collect(30)  # connections, metadata cache: not per collection
            snap, cpu = _cpu(lambda: adapter.collect(30), repeat)
        finally:
            adapter.close()
    found = sum(len(t.partitions) for t in snap.topics)
    commits = sum(len(g.committed or ()) for g in snap.groups)
    unexpected = snap.failed_phases - MOCK_FAILS
    log.info(
        "collect (mock cluster, %d partitions in %d topics, %d groups, %d committed partitions): "
        "%.3f CPU-s per collection%s",
        found,
        len(snap.topics),
        len(snap.groups),
        commits,
        cpu,
        f"; FAILED phases {sorted(unexpected)}: {snap.errors}" if unexpected else "",
    )
    return cpu


def measure_pipeline(
    partitions: int, groups: int, warmup: int, repeat: int
) -> tuple[float, float, float]:
    """CPU-s per collection of derive, render at the default granularity, probe part per scrape."""
    shape = benchmark_shape(partitions, groups)

    def collection(i: int) -> ClusterSnapshot:
        # ~2,000 msg/s per partition; every group keeps 500 messages behind.
        at = 1_800_000_000.0 + 15 * i
        return shaped_snapshot(shape, collected_at=at, offset_base=1_000_000 + 30_000 * i)

    history = History.create()
    state: ExporterState | None = None
    for i in range(warmup):
        state = derive(state, collection(i), history)
    measured = [collection(warmup + i) for i in range(repeat)]
    gc.collect()
    derive_cpu = 0.0
    for snap in measured:
        previous = state
        state, cpu = _cpu(lambda: derive(previous, snap, history))  # noqa: B023 — called now
        derive_cpu += cpu / repeat
    assert state is not None
    log.info(
        "derive (%d partitions, %d groups, %d group-partitions; history %.1f MB): "
        "%.3f CPU-s per collection",
        sum(len(t.partitions) for t in state.snapshot.topics),
        len(state.snapshot.groups),
        len(state.group_lags),
        _deep_size(history) / 1e6,
        derive_cpu,
    )
    render_default = 0.0
    for name, granularity in GRANULARITIES.items():
        body, cpu = _cpu(lambda: render(state, granularity).encode("utf-8"), repeat)  # noqa: B023
        if granularity == DEFAULT:
            render_default = cpu
        log.info(
            "render /metrics at %s: %d series, %.1f MB, %.3f CPU-s per collection",
            name,
            sum(1 for line in body.splitlines() if not line.startswith(b"#")),
            len(body) / 1e6,
            cpu,
        )
    _, json_cpu = _cpu(lambda: json.dumps(api.state_json(state)).encode("utf-8"), repeat)
    log.info("render /api/v1/cluster (when requested): %.3f CPU-s per collection", json_cpu)
    probe = _MeasuredProbe(len(state.snapshot.brokers))
    _, probe_cpu = _cpu(lambda: render_probe(probe).encode("utf-8"), 20)
    log.info("probe families, at each scrape: %.4f CPU-s", probe_cpu)
    return derive_cpu, render_default, probe_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--partitions", default="2000,10000", help="comma-separated sizes (default 2000,10000)"
    )
    parser.add_argument("--groups", type=int, default=55)
    parser.add_argument("--repeat", type=int, default=3, help="collections measured per phase")
    parser.add_argument(
        "--collect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure the collection against the mock cluster (slow to fill at 10,000)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=DEFAULT_WINDOW_SIZE + 1,
        help="collections before the measured ones (default: enough to fill the status windows)",
    )
    args = parser.parse_args()
    setup_logging("INFO")
    tune_gc()  # as vigia-exporter does
    logging.getLogger("exporter").setLevel(logging.ERROR)  # the mock's missing APIs, each time

    for partitions in (int(p) for p in args.partitions.split(",")):
        log.info("--- %d partitions, %d groups", partitions, args.groups)
        collect = measure_collect(partitions, args.groups, args.repeat) if args.collect else 0.0
        derive_cpu, render_cpu, probe_cpu = measure_pipeline(
            partitions, args.groups, args.warmup, args.repeat
        )
        total = collect + derive_cpu + render_cpu + probe_cpu
        log.info(
            "total per collection at the default granularity (collect%s + derive + render + "
            "one scrape's probe part): %.3f CPU-s (goal at 2,000 partitions: <= 0.3)",
            "" if args.collect else " not measured",
            total,
        )
    log.info(
        "process max RSS: %.1f MB (goal <= 300 MB at 10,000 partitions)",
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )


if __name__ == "__main__":
    main()
