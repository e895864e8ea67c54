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
import logging
import math
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx

from benchmarks import side_by_side_stats as stats
from benchmarks.exporter_collect_real import produce
from benchmarks.exporter_cost_curve import (
    GROUP_TOPIC,
    GROUP_TOPIC_PARTITIONS,
    KAFKA_EXPORTER,
    add_groups,
    build_base,
    cpu_seconds,
    group_topic_with_backlog,
    live_member,
    memory_mb,
    sizes,
    start_thread,
    trickle,
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
from tests.realstack.kafka_cluster import KafkaCluster
from vigia.common.logs import setup_logging

log = logging.getLogger("benchmarks.exporters_side_by_side")

TOTAL_DURATION = '\nvigia_exporter_collection_duration_seconds{phase="total"} '
VIGIA, ANCHOR = "Vigía", "kafka_exporter"


# -- the load ---------------------------------------------------------------------------------


def group_topic(bootstrap: str, shape: int) -> str:
    """The topic the groups commit on: build_base's `orders` for 6 partitions, else one of
    `shape` partitions with the same backlog."""
    if shape == GROUP_TOPIC_PARTITIONS:
        return GROUP_TOPIC
    topic = f"orders-{shape}"
    group_topic_with_backlog(bootstrap, topic, shape)
    return topic


def group_id(shape: int, n: int) -> str:
    return f"side-{shape}p-{n:05d}"


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
        workers.append(start_thread(produce, bootstrap, topics, stop))
        workers.append(start_thread(trickle, bootstrap, stop, topic, args.shape))
        made = 0
        for size in args.groups:
            add_groups(bootstrap, made, size, partial(group_id, args.shape), topic, args.shape)
            for n in range(min(made, args.live_groups), min(size, args.live_groups)):
                group = group_id(args.shape, n)
                workers.append(start_thread(live_member, bootstrap, group, stop, topic))
            made = size
            log.info("%d groups of %d partitions: measuring", size, args.shape)
            reps = measure(args.kafka_exporter, bootstrap, workdir, args.window, args.repetitions)
            print_report(size, args.shape, reps)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
        cluster.close()


if __name__ == "__main__":
    main()
