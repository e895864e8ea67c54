"""Speed and memory of the exporter's pure pipeline on a large synthetic cluster.

Times snapshot → state (derive) → metric families → Prometheus exposition text, plus the JSON
API, for a collection in steady state: after `--warmup` earlier collections 15 s apart, so rates,
lag in seconds (offset history), full lag-status windows and the ISR history are all computed.
Also times the probe's families as rendered at each scrape, measures what the history keeps in
memory, and reports the peak memory. Goal for the defaults (3 brokers, 10,000 partitions, RF 3,
100 groups): ≤ 2 s and ≤ 300 MB on 2 cores.

    python benchmarks/exporter_snapshot.py --brokers 3 --partitions 10000 --rf 3 --groups 100
"""

from __future__ import annotations

import argparse
import gc
import logging
import resource
import sys
import time
import tracemalloc
from array import array
from collections import deque
from dataclasses import dataclass
from types import FunctionType, MappingProxyType, MethodType, ModuleType

from common.logs import setup_logging
from exporter import api
from exporter.collectors import render, render_probe
from exporter.lag_status import DEFAULT_WINDOW_SIZE
from exporter.probe.runner import ProbeRunner, ProbeSettings
from exporter.probe.tracker import LatencyTracker, ProbeStats
from exporter.snapshot import (
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
    Topic,
    TopicPartitionRef,
)
from exporter.state import ExporterState, History, derive

log = logging.getLogger("benchmarks.exporter_snapshot")


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
    return ClusterSnapshot(
        collected_at=collected_at,
        cluster_id="synthetic",
        controller_id=1,
        controller_source="quorum",
        brokers=tuple(Broker(b, f"broker-{b}", 9092) for b in range(1, brokers + 1)),
        topics=tuple(topics),
        log_dirs=tuple(
            BrokerLogDirs(b, None, (LogDir("/var/lib/kafka", None, 10**12, 5 * 10**11, tuple(ps)),))
            for b, ps in replicas_on.items()
        ),
        groups=tuple(group_list),
        quorum=Quorum(1, (), ()),
        broker_min_insync_replicas=2,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rf", type=int, default=3)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument(
        "--warmup",
        type=int,
        default=DEFAULT_WINDOW_SIZE + 1,
        help="collections before the measured one (default: enough to fill the status windows)",
    )
    args = parser.parse_args()
    setup_logging("INFO")

    sizes = (args.brokers, args.partitions, args.rf, args.groups)

    def collection(i: int) -> ClusterSnapshot:
        # ~2,000 msg/s per partition; every group keeps 500 messages behind.
        at = 1_800_000_000.0 + 15 * i
        return synthetic_snapshot(*sizes, collected_at=at, offset_base=1_000_000 + 30_000 * i)

    history = History.create()
    previous: ExporterState | None = None
    for i in range(args.warmup):
        previous = derive(previous, collection(i), history)
    history_bytes = _deep_size(history)
    measured = collection(args.warmup)
    probe = _MeasuredProbe(args.brokers)
    gc.collect()

    c0, t0 = time.process_time(), time.perf_counter()
    state = derive(previous, measured, history)
    c1, t1 = time.process_time(), time.perf_counter()
    text = render(state)
    c2, t2 = time.process_time(), time.perf_counter()
    doc = api.state_json(state)
    c3, t3 = time.process_time(), time.perf_counter()
    probe_text = render_probe(probe)
    c4, t4 = time.process_time(), time.perf_counter()

    # tracemalloc's own bookkeeping inflates the RSS: read it before.
    rss_untraced_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tracemalloc.start()
    derive(previous, collection(args.warmup + 1), history)
    render(state)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    statuses = {int(e.status) for e in state.lag_status.values()}
    log.info(
        "cluster: %d brokers, %d partitions × RF %d (%d topics), %d groups (%d group-partitions); "
        "exposition %d lines, %.1f MB; JSON %d topics",
        args.brokers,
        args.partitions,
        args.rf,
        len(measured.topics),
        args.groups,
        len(state.group_lags),
        text.count("\n"),
        len(text) / 1e6,
        len(doc["topics"]),
    )
    log.info(
        "history after %d collections: %d lag-seconds estimates, %d full status windows "
        "(statuses %s), ISR history of %d partitions; %.1f MB kept by the trackers",
        args.warmup,
        len(state.lag_seconds),
        sum(e.window_complete for e in state.lag_status.values()),
        sorted(statuses),
        len(history.isr),
        history_bytes / 1e6,
    )
    # CPU time as well as wall time: on a shared machine the wall time includes waiting for a core.
    log.info("derive (snapshot → state, with history): %.3f s wall, %.3f s CPU", t1 - t0, c1 - c0)
    log.info("families + exposition (state → text): %.3f s wall, %.3f s CPU", t2 - t1, c2 - c1)
    log.info(
        "snapshot → exposition total:         %.3f s wall, %.3f s CPU  (goal ≤ 2 s)",
        t2 - t0,
        c2 - c0,
    )
    log.info("JSON API (state → dict), extra:      %.3f s wall, %.3f s CPU", t3 - t2, c3 - c2)
    log.info(
        "probe families per scrape:           %.2f ms wall, %.2f ms CPU (%d lines)",
        (t4 - t3) * 1e3,
        (c4 - c3) * 1e3,
        probe_text.count("\n"),
    )
    log.info("peak traced memory (derive + render): %.1f MB", peak / 1e6)
    log.info(
        "process max RSS: %.1f MB before tracemalloc (goal ≤ 300 MB), %.1f MB with it",
        rss_untraced_mb,
        rss_mb,
    )


if __name__ == "__main__":
    main()
