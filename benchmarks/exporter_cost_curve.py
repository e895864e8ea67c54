"""The exporter's cost as consumer groups grow, kafka_exporter 1.9.0 side by side (issue 24 §1).

Starts the harness's real 3-node Kafka 4.0 cluster (tests/realstack), a topic base of
`--partitions` partitions (topics of `--topic-partitions`, 40 by default, at `--replication`, RF 3
by default, a trickle of writes so that offsets move), one 6-partition topic `orders` (RF
`--replication` too) holding a backlog, and then, for each size of `--groups`, adds groups
(never restarting the cluster) that committed offsets on `orders` behind its end (lag); the first
`--live-groups` of them have a live member (a consumer that polls and never commits). At each size
it runs, one after the other on the same cluster so that neither's wall time holds the other's CPU:

- one `vigia-exporter` at its defaults (`python -m vigia.exporter.cli --bootstrap-servers …
  --port …`: 15 s interval, default granularity, probe on), scraped once per collection as
  Prometheus would.
  Its cost is the process's utime+stime (/proc/PID/stat) over `--collections` collections, counted
  by the exporter's own `vigia_exporter_last_collection_timestamp_seconds`, after
  `--warm-collections` (connections, first reads of record times, histories); the scrape that sees
  each collection is in the window, so a collection's cost includes its one rendering. Phase times
  are the medians of `vigia_exporter_collection_duration_seconds{phase}`;
- one kafka_exporter (`--kafka-exporter`), which does all its Kafka work inside a scrape: CPU-s per
  scrape is the utime+stime delta around each of `--scrapes` scrapes after a first one (its metadata
  refresh), as ../shared/kafka-exporter/README.md measured it.

Prints a line per size as it goes and, at the end, a markdown table with the ratios (CPU Vigía /
kafka_exporter, series Vigía / kafka_exporter). `--profile-at N` also profiles, at N groups, a few
collections of the exporter's own code in a child process (cProfile per thread with a CPU-time
timer, plus each thread's CPU from /proc, so librdkafka's C threads show too).

    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_cost_curve \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --groups 50,500,2000,4000 \\
        --profile-at 2000
    # kafka_exporter issue 509's shape: 3,000 topics of 4 partitions, 2,000 groups, RF 1
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_cost_curve \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --groups 2000 \\
        --partitions 12000 --topic-partitions 4 --replication 1

Results and the machine: docs/performance.md.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from tqdm import tqdm

from benchmarks.exporter_collect_real import fill, produce
from benchmarks.exporter_restarts import PARTITIONS, seed
from benchmarks.side_by_side_stats import stat_cpu_seconds
from tests.conftest import free_port
from tests.exporter.exposition import samples, value
from tests.realstack.exporters import (
    exporter_argv,
    kafka_exporter_argv,
    next_collection,
    running,
    scrape,
    series_count,
    wait_listening,
)
from tests.realstack.groups import commit_groups
from tests.realstack.kafka_cluster import KafkaCluster
from tests.realstack.topics import create_topic
from vigia.common.logs import setup_logging

log = logging.getLogger("benchmarks.exporter_cost_curve")
T = TypeVar("T")

KAFKA_EXPORTER = Path("/work/shared/kafka-exporter/kafka_exporter")
GROUP_TOPIC = "orders"
GROUP_TOPIC_PARTITIONS = 6
BACKLOG = 200  # messages written to each partition of `orders` before any group commits
COMMIT_CHUNK = 250  # groups per commit_groups call: the progress bar's step
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
TOTAL = "total"


# -- reading a process from /proc ---------------------------------------------------------------


def cpu_seconds(pid: int, task: int | None = None) -> float:
    """utime + stime of the process (or of one of its threads)."""
    path = f"/proc/{pid}/stat" if task is None else f"/proc/{pid}/task/{task}/stat"
    with open(path) as f:
        return stat_cpu_seconds(f.read(), CLOCK_TICK)


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, peak RSS) in MB."""
    found = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(rest.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def cpu_by_thread(pid: int) -> dict[str, float]:
    """CPU seconds per thread name; librdkafka names its threads `rdk:…`, Python's are `python`
    (3.11 does not name them), so the split says what C clients cost against the interpreter."""
    totals: dict[str, float] = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                name = f.read().strip()
            spent = cpu_seconds(pid, int(task))
        except OSError:  # the thread ended meanwhile
            continue
        # rdk:broker1, rdk:broker-1 (a bootstrap server)… are one kind of thread.
        kind = name.rstrip("0123456789-")
        totals[kind] = totals.get(kind, 0.0) + spent
    return totals


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """itertools.batched, which Python 3.11 lacks."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- the load -------------------------------------------------------------------------------------


def group_id(n: int) -> str:
    return f"curve-group-{n:05d}"


CREATE_PARTITIONS = 1000  # partitions per CreateTopics call


def base_topics(partitions: int, topic_partitions: int) -> list[str]:
    """The base's topic names: `partitions // topic_partitions` topics (at least one), numbered
    wide enough to sort in order (`base-000`… up to 1,000 topics, `base-0000`… beyond)."""
    count = max(1, partitions // topic_partitions)
    width = max(3, len(str(count - 1)))
    return [f"base-{n:0{width}d}" for n in range(count)]


def create_batches(topics: Sequence[str], topic_partitions: int) -> list[Sequence[str]]:
    """The topics in CreateTopics calls of about CREATE_PARTITIONS partitions each: one call of
    10,000 partitions outlasts its timeout, and the partitions, not the topics, are the work."""
    return list(chunks(topics, max(1, CREATE_PARTITIONS // topic_partitions)))


def build_base(
    bootstrap: str,
    partitions: int,
    messages: int,
    topic_partitions: int = PARTITIONS,
    replication: int = 3,
) -> list[str]:
    """Topics of `topic_partitions` partitions (RF `replication`) adding up to `partitions`,
    `messages` in each partition, and `orders` with its backlog (RF `replication` too)."""
    topics = base_topics(partitions, topic_partitions)
    log.info(
        "creating %d topics of %d partitions (RF %d)", len(topics), topic_partitions, replication
    )
    for batch in create_batches(topics, topic_partitions):
        seed(bootstrap, list(batch), 0, topic_partitions, replication)
    if messages:
        try:
            fill(bootstrap, topics, messages, topic_partitions)
        except RuntimeError as exc:
            # Seen on the saturated shared machine right after the base was created: the live
            # producer writes into every partition anyway, so the run goes on.
            log.warning("the topic base's first messages: %s; going on without them", exc)
    group_topic_with_backlog(bootstrap, GROUP_TOPIC, GROUP_TOPIC_PARTITIONS, replication)
    return topics


def group_topic_with_backlog(
    bootstrap: str, topic: str, partitions: int, replication: int = 3
) -> None:
    """The topic the groups commit on (RF `replication`), BACKLOG messages in each partition."""
    create_topic(bootstrap, topic, partitions, replication=replication)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition, n in itertools.product(range(partitions), range(BACKLOG)):
        producer.produce(topic, value=b'{"n": %d}' % n, partition=partition)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"the backlog of {topic} could not be written in 2 minutes")


def add_groups(
    bootstrap: str,
    start: int,
    stop: int,
    name: Callable[[int], str] = group_id,
    topic: str = GROUP_TOPIC,
    partitions: int = GROUP_TOPIC_PARTITIONS,
) -> None:
    """Groups start…stop-1, each committed on every partition of `topic` at an offset of its own
    (1 to 100) behind the backlog: varied offsets, so that reading record times has work too."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    numbers = range(start, stop)
    # The same number of committed partitions per call, whatever the groups' shape.
    step = max(1, COMMIT_CHUNK * GROUP_TOPIC_PARTITIONS // partitions)
    with tqdm(total=len(numbers), desc="committing groups", unit="group") as bar:
        for chunk in chunks(numbers, step):
            commit_groups(
                admin,
                {
                    name(n): [TopicPartition(topic, p, 1 + n % 100) for p in range(partitions)]
                    for n in chunk
                },
            )
            bar.update(len(chunk))


def live_member(
    bootstrap: str, group: str, stop: threading.Event, topic: str = GROUP_TOPIC
) -> None:
    """A member of `group` that polls `topic` and never commits: the group is STABLE with one
    member and its committed lag stays."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        while not stop.is_set():
            consumer.poll(0.5)
    finally:
        consumer.close()


def trickle(
    bootstrap: str,
    stop: threading.Event,
    topic: str = GROUP_TOPIC,
    partitions: int = GROUP_TOPIC_PARTITIONS,
) -> None:
    """About 10 messages a second into `topic`: the groups' lag grows and end offsets move."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for partition in itertools.cycle(range(partitions)):
        if stop.wait(0.1):
            break
        producer.produce(topic, value=b"{}", partition=partition)
        producer.poll(0)
    producer.flush(10)


# -- the two exporters ----------------------------------------------------------------------------


@dataclass
class VigiaRun:
    cpu_per_collection: float
    collections: int
    phases: dict[str, float]  # median seconds per phase
    rss_mb: float
    peak_rss_mb: float
    series: int
    groups_seen: int
    up: float | None
    threads: dict[str, float] = field(default_factory=dict)  # CPU-s per collection by thread
    requests: dict[str, float] = field(default_factory=dict)  # per collection, by API


@dataclass
class AnchorRun:
    cpu_per_scrape: list[float]
    scrape_seconds: list[float]
    rss_mb: float
    peak_rss_mb: float
    series: int
    requests: dict[str, float] = field(default_factory=dict)  # per scrape, by API


def measure_vigia(
    bootstrap: str, jmx: Sequence[str], workdir: Path, warm: int, collections: int
) -> VigiaRun:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running("vigia-exporter", exporter_argv(bootstrap, port), workdir) as process:
        pid = process.pid
        assert pid is not None
        deadline = time.monotonic() + 60 * (warm + collections + 2)
        text = next_collection(url, None, 0, deadline)
        found = samples(text)
        interval = value(found, "vigia_exporter_collection_interval_seconds") or 15.0
        stamp = value(found, "vigia_exporter_last_collection_timestamp_seconds")
        for _ in range(warm - 1):
            text = next_collection(url, stamp, interval, deadline)
            stamp = value(samples(text), "vigia_exporter_last_collection_timestamp_seconds")
        served = request_counts(jmx)
        began, threads_began = cpu_seconds(pid), cpu_by_thread(pid)
        phases: dict[str, list[float]] = {}
        for _ in tqdm(range(collections), desc="vigia collections", unit="collection"):
            text = next_collection(url, stamp, interval, deadline)
            found = samples(text)
            stamp = value(found, "vigia_exporter_last_collection_timestamp_seconds")
            for (name, labels), seconds in found.items():
                if name == "vigia_exporter_collection_duration_seconds":
                    phases.setdefault(dict(labels)["phase"], []).append(seconds)
        spent = cpu_seconds(pid) - began
        requests = per_unit(served, request_counts(jmx), collections)
        threads_now = cpu_by_thread(pid)
        rss, peak = memory_mb(pid)
    return VigiaRun(
        cpu_per_collection=spent / collections,
        collections=collections,
        phases={phase: statistics.median(times) for phase, times in phases.items()},
        rss_mb=rss,
        peak_rss_mb=peak,
        series=series_count(text),
        groups_seen=sum(1 for name, _ in found if name == "kafka_consumergroup_members"),
        up=value(found, "vigia_exporter_up"),
        threads={
            name: (threads_now[name] - threads_began.get(name, 0.0)) / collections
            for name in threads_now
        },
        requests=requests,
    )


def measure_anchor(
    binary: Path, bootstrap: str, jmx: Sequence[str], workdir: Path, scrapes: int
) -> AnchorRun:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = kafka_exporter_argv(binary, bootstrap, port)
    with running("kafka_exporter", argv, workdir) as process:
        pid = process.pid
        assert pid is not None
        wait_listening(url)
        scrape(url)  # its first scrape refreshes the metadata: not measured
        cpu, took = [], []
        served = request_counts(jmx)
        text = ""
        for _ in tqdm(range(scrapes), desc="kafka_exporter scrapes", unit="scrape"):
            began, started = cpu_seconds(pid), time.monotonic()
            text = scrape(url)
            took.append(time.monotonic() - started)
            cpu.append(cpu_seconds(pid) - began)
        requests = per_unit(served, request_counts(jmx), scrapes)
        rss, peak = memory_mb(pid)
    return AnchorRun(cpu, took, rss, peak, series_count(text), requests)


def request_counts(jmx: Sequence[str]) -> dict[str, float]:
    """Requests the brokers have served, by API, summed over the brokers: the JMX agent's count of
    kafka.network RequestMetrics TotalTimeMs. Counted around a measurement, it says how many
    round trips an exporter makes (the benchmark's own clients add Fetch, Produce, Heartbeat and
    Metadata, never the group admin requests)."""
    totals: dict[str, float] = {}
    for url in jmx:
        try:
            text = httpx.get(url, timeout=30).text
        except (httpx.HTTPError, OSError):
            continue
        for line in text.splitlines():
            # The rules lowercase the names (lowercaseOutputName): totaltimems.
            if line.lower().startswith("kafka_network_requestmetrics_totaltimems_count{"):
                found = re.search(r'request="([^"]+)"', line)
                if found:
                    totals[found[1]] = totals.get(found[1], 0.0) + float(line.rsplit(" ", 1)[1])
    return totals


def per_unit(before: dict[str, float], after: dict[str, float], units: int) -> dict[str, float]:
    return {api: (after[api] - before.get(api, 0.0)) / units for api in after}


# -- the profile (a child process: the benchmark's own threads stay out of it) -------------------


def profile_child(bootstrap: str, collections: int) -> None:
    """Collections as `vigia-exporter` runs them (collect, record times, derive, render), each
    thread under its own cProfile with a CPU-time timer; prints per-phase CPU and the top costs."""
    import cProfile
    import pstats

    from vigia.exporter.cli import tune_gc
    from vigia.exporter.collectors import render
    from vigia.exporter.kafka.adapter import KafkaAdapter
    from vigia.exporter.kafka.record_times import RecordTimeReader
    from vigia.exporter.model.filters import Filters
    from vigia.exporter.model.record_time import RecordBudget
    from vigia.exporter.model.state import History, derive

    profilers: list[cProfile.Profile] = []
    original_run = threading.Thread.run

    def profiled_run(self: threading.Thread) -> None:
        profiler = cProfile.Profile(time.thread_time)
        profilers.append(profiler)
        profiler.enable()
        try:
            original_run(self)
        finally:
            profiler.disable()

    threading.Thread.run = profiled_run  # type: ignore[method-assign]
    main = cProfile.Profile(time.thread_time)
    profilers.append(main)
    adapter = KafkaAdapter(bootstrap, {}, Filters())
    reader = RecordTimeReader(bootstrap, {}, RecordBudget())
    history = History.create()
    tune_gc()

    def one(previous: object) -> tuple[object, dict[str, float]]:
        steps: dict[str, float] = {}
        began = time.process_time()
        snapshot = adapter.collect(10)
        steps["collect (process CPU)"] = time.process_time() - began
        began = time.process_time()
        snapshot = reader(snapshot, previous, 10)  # type: ignore[arg-type]
        steps["record_times (process CPU)"] = time.process_time() - began
        main.enable()
        began = time.thread_time()
        state = derive(previous, snapshot, history)  # type: ignore[arg-type]
        steps["derive (thread CPU)"] = time.thread_time() - began
        began = time.thread_time()
        render(state)
        steps["render (thread CPU)"] = time.thread_time() - began
        main.disable()
        for phase, seconds in snapshot.durations.items():
            steps[f"phase {phase} (wall)"] = seconds
        return state, steps

    state: object = None
    for _ in range(2):  # connections, first record reads, histories: not profiled
        state, _ = one(state)
        time.sleep(1)
    for profiler in profilers:
        profiler.clear()  # only what the measured collections cost
    pid = os.getpid()
    threads_began, began = cpu_by_thread(pid), time.process_time()
    measured: dict[str, list[float]] = {}
    for _ in range(collections):
        state, steps = one(state)
        for step, seconds in steps.items():
            measured.setdefault(step, []).append(seconds)
        time.sleep(1)
    spent = time.process_time() - began
    threads = cpu_by_thread(pid)
    reader.close()
    adapter.close()
    print(f"profile: {collections} collections, process CPU {spent / collections:.3f} s each")
    for step, values in measured.items():
        print(f"  {step}: median {statistics.median(values):.3f} s")
    print("  CPU per collection by thread name:")
    for name, total in sorted(threads.items(), key=lambda kv: -kv[1]):
        delta = (total - threads_began.get(name, 0.0)) / collections
        if delta >= 0.001:
            print(f"    {name}: {delta:.3f} s")
    stats = pstats.Stats(profilers[0])
    for profiler in profilers[1:]:
        try:
            stats.add(profiler)
        except TypeError:  # a thread that never ran Python under its profiler
            continue
    stats.stats = {  # type: ignore[attr-defined]
        key: (cc, nc, tt / collections, ct / collections, callers)
        for key, (cc, nc, tt, ct, callers) in stats.stats.items()  # type: ignore[attr-defined]
    }
    print("  cumulative CPU per collection of the exporter's steps:")
    stats.sort_stats("cumulative").print_stats(r"exporter/", 40)
    print("  own CPU per collection, top 30:")
    stats.sort_stats("tottime").print_stats(30)


def profile(bootstrap: str, collections: int) -> str:
    code = (
        "import sys; from benchmarks.exporter_cost_curve import profile_child; "
        "profile_child(sys.argv[1], int(sys.argv[2]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, bootstrap, str(collections)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[1],
    )
    return done.stdout + (done.stderr[-3000:] if done.returncode else "")


# -- the run --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    groups: int
    vigia: VigiaRun
    anchor: AnchorRun | None


def sizes(text: str) -> list[int]:
    values = sorted({int(s) for s in text.split(",") if s.strip()})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("sizes are positive integers, comma-separated")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--kafka-exporter", type=Path, default=KAFKA_EXPORTER)
    parser.add_argument("--groups", type=sizes, default=[50, 500, 2000, 4000])
    add_base_arguments(parser)
    parser.add_argument("--live-groups", type=int, default=10, help="groups with a live member")
    parser.add_argument("--warm-collections", type=int, default=2)
    parser.add_argument("--collections", type=int, default=4)
    parser.add_argument("--scrapes", type=int, default=3)
    parser.add_argument("--profile-at", type=int, help="profile collections at this many groups")
    parser.add_argument("--profile-collections", type=int, default=3)
    args = parser.parse_args()
    cluster, workdir = benchmark_cluster(args.kafka_home, args.workdir, "vigia-curve-")
    stop = threading.Event()
    workers: list[threading.Thread] = []
    rows: list[Row] = []
    began = time.monotonic()
    try:
        bootstrap, producer = start_base(cluster, args, stop)
        workers.append(producer)
        workers.append(start_thread(trickle, bootstrap, stop))
        made = 0
        for size in args.groups:
            add_groups(bootstrap, made, size)
            for n in range(min(made, args.live_groups), min(size, args.live_groups)):
                workers.append(start_thread(live_member, bootstrap, group_id(n), stop))
            made = size
            time.sleep(5)  # the members join before the exporters look
            log.info("%d groups (%.0f s into the run): measuring", size, time.monotonic() - began)
            jmx = list(cluster.jmx_urls().values())
            vigia = measure_vigia(bootstrap, jmx, workdir, args.warm_collections, args.collections)
            anchor = _anchor(args, bootstrap, jmx, workdir)
            rows.append(Row(size, vigia, anchor))
            print(row_line(rows[-1]), flush=True)
            if args.profile_at == size:
                print(profile(bootstrap, args.profile_collections), flush=True)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
        cluster.close()
        # Whatever was measured before an error or a Ctrl-C is still printed.
        print_report(rows, args.partitions)


def _anchor(
    args: argparse.Namespace, bootstrap: str, jmx: Sequence[str], workdir: Path
) -> AnchorRun | None:
    if not args.kafka_exporter.exists():
        log.warning("no kafka_exporter at %s: Vigía alone", args.kafka_exporter)
        return None
    return measure_anchor(args.kafka_exporter, bootstrap, jmx, workdir, args.scrapes)


def add_base_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--partitions", type=int, default=2000, help="the topic base's partitions in all"
    )
    parser.add_argument(
        "--topic-partitions",
        type=int,
        default=PARTITIONS,
        help=f"partitions per base topic (default {PARTITIONS}); the base has "
        "--partitions // --topic-partitions topics",
    )
    parser.add_argument(
        "--replication",
        type=int,
        default=3,
        help="replication factor of the base topics and of the groups' topics (default 3; "
        "the cluster has 3 brokers either way)",
    )
    parser.add_argument("--messages", type=int, default=5, help="per base partition")
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temporary one)")


def start_base(
    cluster: KafkaCluster, args: argparse.Namespace, stop: threading.Event
) -> tuple[str, threading.Thread]:
    """The cluster started, the topic base built (`--partitions`, `--topic-partitions`,
    `--replication`, `--messages`) and its live producer running until `stop`: the bootstrap
    servers and the producer's thread."""
    cluster.start_all()
    bootstrap = cluster.bootstrap
    topics = build_base(
        bootstrap, args.partitions, args.messages, args.topic_partitions, args.replication
    )
    return bootstrap, start_thread(produce, bootstrap, topics, stop, args.topic_partitions)


def benchmark_cluster(
    kafka_home: Path, workdir: Path | None, prefix: str
) -> tuple[KafkaCluster, Path]:
    """A benchmark's logging and the harness's cluster (not started) in `workdir`, kept
    afterwards, or in a temporary one."""
    setup_logging("INFO")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per scrape otherwise
    # A stop by PID still stops the exporters, the members and the cluster (finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = workdir or Path(tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    return KafkaCluster(kafka_home, workdir / "kafka"), workdir


def start_thread(target: Callable[..., None], *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


# -- the report -----------------------------------------------------------------------------------


def row_line(row: Row) -> str:
    v = row.vigia
    text = (
        f"{row.groups} groups: Vigía {v.cpu_per_collection:.3f} CPU-s per collection "
        f"({v.collections}), total {v.phases.get(TOTAL, float('nan')):.2f} s, "
        f"RSS {v.rss_mb:.0f} MB "
        f"(peak {v.peak_rss_mb:.0f}), {v.series} series, {v.groups_seen} groups seen, up {v.up}"
    )
    if row.anchor is not None:
        a = row.anchor
        text += (
            f"; kafka_exporter {statistics.median(a.cpu_per_scrape):.3f} CPU-s per scrape "
            f"({', '.join(f'{c:.2f}' for c in a.cpu_per_scrape)}), "
            f"{statistics.median(a.scrape_seconds):.2f} s, RSS {a.rss_mb:.0f} MB "
            f"(peak {a.peak_rss_mb:.0f}), {a.series} series"
        )
    return text


def print_report(rows: list[Row], partitions: int) -> None:
    if not rows:
        return
    print(f"\n### {partitions:,} base partitions\n")
    print(
        "| groups | Vigía CPU-s / collection | Vigía collection time | Vigía RSS (peak) | "
        "Vigía series | kafka_exporter CPU-s / scrape | scrape time | kafka_exporter RSS (peak) "
        "| kafka_exporter series | CPU ratio | series ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        v, a = row.vigia, row.anchor
        cells = [
            f"{row.groups:,}",
            f"{v.cpu_per_collection:.3f}",
            f"{v.phases.get(TOTAL, float('nan')):.2f} s",
            f"{v.rss_mb:.0f} MB ({v.peak_rss_mb:.0f})",
            f"{v.series:,}",
        ]
        if a is None:
            cells += ["–"] * 6
        else:
            cpu = statistics.median(a.cpu_per_scrape)
            cells += [
                f"{cpu:.3f}",
                f"{statistics.median(a.scrape_seconds):.2f} s",
                f"{a.rss_mb:.0f} MB ({a.peak_rss_mb:.0f})",
                f"{a.series:,}",
                f"{v.cpu_per_collection / cpu:.2f}",
                f"{v.series / a.series:.2f}",
            ]
        print("| " + " | ".join(cells) + " |")
    phases = sorted({p for row in rows for p in row.vigia.phases} - {TOTAL})
    print(
        "\nVigía's collection time per phase (median seconds; phases after `metadata` overlap):\n"
    )
    print("| groups | " + " | ".join(phases) + " | total |")
    print("|---|" + "---|" * (len(phases) + 1))
    for row in rows:
        cells = [f"{row.vigia.phases.get(p, float('nan')):.2f}" for p in (*phases, TOTAL)]
        print(f"| {row.groups:,} | " + " | ".join(cells) + " |")
    print_requests(rows)
    names = sorted({n for row in rows for n in row.vigia.threads})
    print("\nVigía's CPU-s per collection by thread (librdkafka's threads are `rdk:…`):\n")
    print("| groups | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for row in rows:
        cells = [f"{row.vigia.threads.get(n, 0.0):.3f}" for n in names]
        print(f"| {row.groups:,} | " + " | ".join(cells) + " |")


# The admin requests an exporter sends; the benchmark's own clients send none of these but
# Metadata (its producers' refreshes), FindCoordinator and OffsetFetch (a live member's join).
ADMIN_APIS = (
    "Metadata",
    "ListOffsets",
    "ListGroups",
    "FindCoordinator",
    "DescribeGroups",
    "ConsumerGroupDescribe",
    "OffsetFetch",
    "DescribeConfigs",
    "DescribeLogDirs",
    "DescribeCluster",
    "DescribeQuorum",
    "Fetch",
)


def print_requests(rows: list[Row]) -> None:
    """Requests the brokers served per Vigía collection and per kafka_exporter scrape."""
    if not any(row.vigia.requests for row in rows):
        return
    print("\nRequests the brokers served per collection (Vigía) / per scrape (kafka_exporter):\n")
    print("| groups | " + " | ".join(ADMIN_APIS) + " |")
    print("|---|" + "---|" * len(ADMIN_APIS))
    for row in rows:
        anchor = row.anchor.requests if row.anchor is not None else {}
        cells = [
            f"{row.vigia.requests.get(api, 0.0):,.0f} / {anchor.get(api, 0.0):,.0f}"
            for api in ADMIN_APIS
        ]
        print(f"| {row.groups:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
