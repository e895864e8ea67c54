"""Vigía's exporter and kafka_exporter 1.9.0 side by side, like for like (issue 42 §1).

Both run at the same time on one real 3-node Kafka 4.0 cluster (the harness's,
tests/realstack) under the same load: `exporter_cost_curve.py`'s topic base (`--partitions`
partitions in topics of 40, RF 3, a live producer of ≈100 messages a second) and `--groups`
consumer groups of one shape (`--shape`: each group commits every partition of one topic of 6,
or of 100, partitions, at an offset of its own behind a backlog that a trickle keeps growing; the
first `--live-groups` have a live member). Each exporter has one scraper thread that scrapes it
every 15 s as Prometheus does, or at once when a scrape took longer. After a warm-up (Vigía's
second collection and kafka_exporter's first completed scrape), each of `--repetitions` windows
of `--window` seconds reports, for each exporter over the same wall window:

- whole-process CPU (utime+stime of every thread, /proc/PID/stat) per fresh view of the cluster
  (a Vigía collection; a completed kafka_exporter scrape) and per 15 s of wall time;
- peak RSS (VmHWM), the series of its last scrape, scrape latency (median, max), gaps (15-s
  intervals of the window in which the scraper received no fresh value).

Repetitions are consecutive windows of the same two processes. The load average is printed
with each window: the machine is shared. The arithmetic is `side_by_side_stats.py`'s.

    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporters_side_by_side \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --groups 50 --shape 6 \\
        --window 150 --repetitions 3

Results: docs/performance.md, "Side by side, like for like".
"""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from tqdm import tqdm

from benchmarks import side_by_side_stats as stats
from benchmarks.exporter_collect_real import produce
from benchmarks.exporter_cost_curve import (
    COMMIT_CHUNK,
    GROUP_TOPIC,
    GROUP_TOPIC_PARTITIONS,
    KAFKA_EXPORTER,
    build_base,
    chunks,
    memory_mb,
    sizes,
)
from tests.conftest import free_port
from tests.realstack.exporters import (
    LAST_COLLECTION,
    exporter_argv,
    gauge,
    kafka_exporter_argv,
    running,
    scrape,
    series_count,
    wait_listening,
)
from tests.realstack.groups import commit_groups
from tests.realstack.kafka_cluster import KafkaCluster
from tests.realstack.topics import create_topic
from vigia.common.logs import setup_logging

log = logging.getLogger("benchmarks.exporters_side_by_side")

CLOCK_TICK = os.sysconf("SC_CLK_TCK")
BACKLOG = 200  # messages per partition of a group topic before any group commits
TOTAL_DURATION = '\nvigia_exporter_collection_duration_seconds{phase="total"} '
VIGIA, ANCHOR = "Vigía", "kafka_exporter"


# -- the load ---------------------------------------------------------------------------------


def group_topic(bootstrap: str, shape: int) -> str:
    """The topic the groups commit on: build_base's `orders` for 6 partitions, else one of
    `shape` partitions (RF 3) with the same backlog."""
    if shape == GROUP_TOPIC_PARTITIONS:
        return GROUP_TOPIC
    topic = f"orders-{shape}"
    create_topic(bootstrap, topic, shape, replication=3)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition, n in itertools.product(range(shape), range(BACKLOG)):
        producer.produce(topic, value=b'{"n": %d}' % n, partition=partition)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"the backlog of {topic} could not be written in 2 minutes")
    return topic


def group_id(shape: int, n: int) -> str:
    return f"side-{shape}p-{n:05d}"


def add_groups(bootstrap: str, topic: str, shape: int, start: int, stop: int) -> None:
    """Groups start…stop-1, each committed on every partition of `topic` at an offset of its own
    (1 to 100) behind the backlog."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    numbers = range(start, stop)
    with tqdm(total=len(numbers), desc="committing groups", unit="group") as bar:
        for chunk in chunks(numbers, max(1, COMMIT_CHUNK * 6 // shape)):
            commit_groups(
                admin,
                {
                    group_id(shape, n): [
                        TopicPartition(topic, p, 1 + n % 100) for p in range(shape)
                    ]
                    for n in chunk
                },
            )
            bar.update(len(chunk))


def live_member(bootstrap: str, topic: str, group: str, stop: threading.Event) -> None:
    """A member that polls and never commits: the group is STABLE and its lag stays."""
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


def trickle(bootstrap: str, topic: str, partitions: int, stop: threading.Event) -> None:
    """About 10 messages a second round the group topic: lag grows and end offsets move."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for partition in itertools.cycle(range(partitions)):
        if stop.wait(0.1):
            break
        producer.produce(topic, value=b"{}", partition=partition)
        producer.poll(0)
    producer.flush(10)


# -- scraping as Prometheus does ------------------------------------------------------------------


@dataclass(frozen=True)
class Scrape:
    started: float  # Unix time
    ended: float
    ok: bool
    series: int
    stamp: float | None  # Vigía: its last collection's end; None for kafka_exporter
    collection_seconds: float | None  # Vigía: that collection's total duration
    overrunning: bool


@dataclass
class Scraper:
    """One thread scraping one exporter every 15 s (at once when a scrape took longer)."""

    url: str
    stop: threading.Event
    scrapes: list[Scrape] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.time()
            try:
                text, ok = scrape(self.url), True
            except (httpx.HTTPError, OSError) as exc:
                log.warning("scrape of %s failed: %s", self.url, exc)
                text, ok = "", False
            done = Scrape(
                started,
                time.time(),
                ok,
                series_count(text),
                gauge(text, LAST_COLLECTION),
                _total_duration(text),
                gauge(text, "vigia_exporter_collection_overrunning") == 1.0,
            )
            with self.lock:
                self.scrapes.append(done)
            self.stop.wait(max(0.0, started + stats.SCRAPE_INTERVAL - time.time()))

    def taken(self) -> list[Scrape]:
        with self.lock:
            return list(self.scrapes)


def _total_duration(text: str) -> float | None:
    at = text.find(TOTAL_DURATION)
    if at < 0:
        return None
    return float(text[at + len(TOTAL_DURATION) :].split("\n", 1)[0])


def fresh_views(scrapes: Sequence[Scrape], vigia: bool) -> list[Scrape]:
    """The scrapes that brought a fresh view: for kafka_exporter every completed one, for Vigía
    those whose last-collection timestamp changed."""
    if not vigia:
        return [s for s in scrapes if s.ok]
    fresh, last = [], None
    for s in scrapes:
        if s.ok and s.stamp is not None and s.stamp != last:
            fresh.append(s)
            last = s.stamp
    return fresh


# -- one window -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    exporter: str
    cpu_per_view: float
    cpu_per_15s: float
    views: float  # fresh views the window holds at the measured period
    scrape_median: float
    scrape_max: float
    gaps: int
    intervals: int
    peak_rss_mb: float
    series: int
    overrunning: bool


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        return stats.stat_cpu_seconds(f.read(), CLOCK_TICK)


def judge(
    name: str,
    scrapes: Sequence[Scrape],
    start: float,
    end: float,
    cpu: float,
    peak_rss_mb: float,
) -> Window:
    vigia = name == VIGIA
    views = fresh_views(scrapes, vigia)
    # The last view before the window too: the period between views spans its edge.
    around = [v for v in views if v.ended < end]
    before = [v for v in around if v.ended < start][-1:]
    inside = [v for v in around if v.ended >= start]
    if vigia:
        seen = [*before, *inside]
        starts = [v.stamp - (v.collection_seconds or 0.0) for v in seen if v.stamp is not None]
        duration = statistics.median([v.collection_seconds or 0.0 for v in seen] or [0.0])
        count = stats.collections_seen(starts, stats.SCRAPE_INTERVAL, duration)
        period = stats.view_period(starts, count or None)
    else:
        period = stats.view_period([v.ended for v in (*before, *inside)])
    window = end - start
    latencies = [s.ended - s.started for s in scrapes if start <= s.started < end and s.ok]
    last = [s for s in scrapes if s.ok and s.ended < end][-1:]
    return Window(
        name,
        stats.cpu_per_view(cpu, window, period),
        stats.cpu_per_wall(cpu, window),
        window / period if not math.isnan(period) else math.nan,
        statistics.median(latencies) if latencies else math.nan,
        max(latencies) if latencies else math.nan,
        stats.gaps([v.ended for v in inside], start, end),
        stats.intervals_in(start, end),
        peak_rss_mb,
        last[0].series if last else 0,
        any(s.overrunning for s in scrapes if start <= s.started < end),
    )


def wait_warm(vigia: Scraper, anchor: Scraper, deadline: float) -> None:
    """Vigía's second collection seen (connections, first record-time reads, histories) and
    kafka_exporter's first scrape completed (its metadata refresh)."""
    while time.monotonic() < deadline:
        if len(fresh_views(vigia.taken(), True)) >= 2 and fresh_views(anchor.taken(), False):
            return
        time.sleep(1.0)
    raise TimeoutError("the exporters did not warm up before the deadline")


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


@dataclass(frozen=True)
class Repetition:
    load: str
    vigia: Window
    anchor: Window


def measure(
    binary: Path, bootstrap: str, workdir: Path, window: float, repetitions: int
) -> list[Repetition]:
    ports = free_port(), free_port()
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    stop = threading.Event()
    done: list[Repetition] = []
    with (
        running("vigia-exporter", exporter_argv(bootstrap, ports[0]), workdir) as v,
        running("kafka_exporter", kafka_exporter_argv(binary, bootstrap, ports[1]), workdir) as k,
    ):
        assert v.pid is not None and k.pid is not None
        for url in urls:
            wait_listening(url)
        scrapers = [Scraper(url, stop) for url in urls]
        threads = [threading.Thread(target=s.run, daemon=True) for s in scrapers]
        for thread in threads:
            thread.start()
        try:
            wait_warm(*scrapers, time.monotonic() + 600)
            for n in range(repetitions):
                load = load_average()
                start, cpu = time.time(), (cpu_seconds(v.pid), cpu_seconds(k.pid))
                time.sleep(window)
                end, spent = time.time(), (cpu_seconds(v.pid) - cpu[0], cpu_seconds(k.pid) - cpu[1])
                rep = Repetition(
                    load,
                    judge(VIGIA, scrapers[0].taken(), start, end, spent[0], memory_mb(v.pid)[1]),
                    judge(ANCHOR, scrapers[1].taken(), start, end, spent[1], memory_mb(k.pid)[1]),
                )
                done.append(rep)
                log.info("repetition %d (load %s): %s | %s", n + 1, load, rep.vigia, rep.anchor)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
    return done


# -- the report -----------------------------------------------------------------------------------


def _cells(values: Sequence[float], digits: int) -> str:
    s = stats.spread(values)
    return f"{s.least:.{digits}f} / {s.median:.{digits}f} / {s.most:.{digits}f}"


def print_report(groups: int, shape: int, reps: Sequence[Repetition]) -> None:
    print(
        f"\n### {groups:,} groups of {shape} partitions, {len(reps)} windows (min / median / max)\n"
    )
    print(
        "| exporter | CPU-s / fresh view | CPU-s / 15 s | fresh views / window | scrape s "
        "(median) | scrape s (max) | gaps / 15-s intervals | peak RSS MB | series |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in (VIGIA, ANCHOR):
        ws = [r.vigia if name == VIGIA else r.anchor for r in reps]
        print(
            f"| {name} | {_cells([w.cpu_per_view for w in ws], 3)} | "
            f"{_cells([w.cpu_per_15s for w in ws], 3)} | {_cells([w.views for w in ws], 1)} | "
            f"{_cells([w.scrape_median for w in ws], 2)} | "
            f"{_cells([w.scrape_max for w in ws], 2)} | "
            f"{', '.join(f'{w.gaps}/{w.intervals}' for w in ws)} | "
            f"{_cells([w.peak_rss_mb for w in ws], 0)} | "
            f"{_cells([float(w.series) for w in ws], 0)} |"
        )
    per_view = stats.worst_ratio(
        [r.vigia.cpu_per_view for r in reps], [r.anchor.cpu_per_view for r in reps]
    )
    per_wall = stats.worst_ratio(
        [r.vigia.cpu_per_15s for r in reps], [r.anchor.cpu_per_15s for r in reps]
    )
    print(
        f"\nRatio Vigía / kafka_exporter at the worst repetition: CPU per fresh view "
        f"{per_view:.2f}, CPU per 15 s {per_wall:.2f}. Load average at each window: "
        f"{'; '.join(r.load for r in reps)}. Vigía overrunning: "
        f"{', '.join(str(r.vigia.overrunning) for r in reps)}.",
        flush=True,
    )


# -- the run --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--kafka-exporter", type=Path, default=KAFKA_EXPORTER)
    parser.add_argument("--groups", type=sizes, default=[50], help="sizes, comma-separated")
    parser.add_argument("--shape", type=int, choices=(6, 100), default=6, help="partitions/group")
    parser.add_argument("--window", type=float, default=150.0, help="seconds per repetition")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=2000, help="the topic base")
    parser.add_argument("--messages", type=int, default=5, help="per base partition")
    parser.add_argument("--live-groups", type=int, default=10, help="groups with a live member")
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temporary one)")
    args = parser.parse_args()
    setup_logging("INFO")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    # A stop by PID still stops the exporters, the members and the cluster (finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="vigia-side-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = KafkaCluster(args.kafka_home, workdir / "kafka")
    stop = threading.Event()
    workers: list[threading.Thread] = []
    try:
        cluster.start_all()
        bootstrap = cluster.bootstrap
        topics = build_base(bootstrap, args.partitions, args.messages)
        topic = group_topic(bootstrap, args.shape)
        workers.append(_thread(produce, bootstrap, topics, stop))
        workers.append(_thread(trickle, bootstrap, topic, args.shape, stop))
        made = 0
        for size in args.groups:
            add_groups(bootstrap, topic, args.shape, made, size)
            for n in range(min(made, args.live_groups), min(size, args.live_groups)):
                group = group_id(args.shape, n)
                workers.append(_thread(live_member, bootstrap, topic, group, stop))
            made = size
            log.info("%d groups of %d partitions: measuring", size, args.shape)
            reps = measure(args.kafka_exporter, bootstrap, workdir, args.window, args.repetitions)
            print_report(size, args.shape, reps)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
        cluster.close()


def _thread(target: Callable[..., None], *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


if __name__ == "__main__":
    main()
