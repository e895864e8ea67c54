"""Vigía's exporter and kafka_exporter 1.9.0 side by side, like for like (issue 42 §1).

Both run at the same time on one real 3-node Kafka 4.0 cluster (the harness's,
tests/realstack) under the same load: `exporter_cost_curve.py`'s topic base (`--partitions`
partitions in topics of `--topic-partitions` (40), RF `--replication` (3), a live producer of
≈100 messages a second) and `--groups` consumer groups of one shape (`--shape`: each group
commits every partition of one topic of 6, or of 100, partitions, at an offset of its own behind
a backlog that a trickle keeps growing; the first `--live-groups` have a live member). Each
exporter has one scraper thread that scrapes it every 15 s as Prometheus does, or at once when a
scrape took longer. After a warm-up (Vigía's second collection and kafka_exporter's first
completed scrape), each of `--repetitions` windows of `--window` seconds (one value, or one per
size: kafka_exporter's scrapes take minutes at thousands of groups) reports, for each exporter
over the same wall window:

- whole-process CPU (utime+stime of every thread, /proc/PID/stat) per fresh view of the cluster
  (a Vigía collection; a completed kafka_exporter scrape) and per 15 s of wall time;
- peak RSS (VmHWM), the series of its last scrape, scrape latency (median, max), gaps (15-s
  intervals of the window in which the exporter produced no fresh value: no completed
  kafka_exporter scrape, no Vigía collection end).

`--vigia-variant ARGS` runs one more Vigía with these extra flags beside them, measured the same
way (`--vigia-variant=--no-probe`: the view kafka_exporter gives, without Vigía's end-to-end
probe). Repetitions are consecutive windows of the same processes. The load average is printed
with each window: the machine is shared. The arithmetic is `side_by_side_stats.py`'s.

    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporters_side_by_side \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --groups 50 --shape 6 \\
        --window 150 --repetitions 3
    # the first table: a window at least twice kafka_exporter's scrape at each size
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporters_side_by_side \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --groups 50,500,2000,4000 --shape 6 \\
        --window 240,240,240,450 --repetitions 3
    # kafka_exporter issue 509's shape: 3,000 topics of 4 partitions, 2,000 groups, RF 1
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporters_side_by_side \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --groups 2000 --shape 6 \\
        --partitions 12000 --topic-partitions 4 --replication 1

Results: docs/performance.md, "Side by side, like for like".
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import shlex
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx

from benchmarks import side_by_side_stats as stats
from benchmarks.exporter_cost_curve import (
    GROUP_TOPIC,
    GROUP_TOPIC_PARTITIONS,
    KAFKA_EXPORTER,
    add_base_arguments,
    add_groups,
    benchmark_cluster,
    cpu_seconds,
    group_topic_with_backlog,
    live_member,
    memory_mb,
    sizes,
    start_base,
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

log = logging.getLogger("benchmarks.exporters_side_by_side")

TOTAL_DURATION = '\nvigia_exporter_collection_duration_seconds{phase="total"} '
VIGIA, ANCHOR = "Vigía", "kafka_exporter"


# -- the load ---------------------------------------------------------------------------------


def group_topic(bootstrap: str, shape: int, replication: int = 3) -> str:
    """The topic the groups commit on: build_base's `orders` for 6 partitions, else one of
    `shape` partitions (RF `replication`, as the base) with the same backlog."""
    if shape == GROUP_TOPIC_PARTITIONS:
        return GROUP_TOPIC
    topic = f"orders-{shape}"
    group_topic_with_backlog(bootstrap, topic, shape, replication)
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
    """One thread scraping one exporter every 15 s (at once when a scrape took longer);
    `read` also gets each completed scrape's exposition."""

    url: str
    stop: threading.Event
    read: Callable[[float, str], None] | None = None  # (the scrape's start, its exposition)
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
            if ok and self.read is not None:
                self.read(started, text)
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


def seconds(text: str) -> list[float]:
    try:
        values = [float(s) for s in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError("seconds are positive numbers, comma-separated")
    return values


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
    vigia = name.startswith(VIGIA)
    views = fresh_views(scrapes, vigia)
    # The last view before the window too: the period between views spans its edge.
    around = [v for v in views if v.ended < end]
    before = [v for v in around if v.ended < start][-1:]
    inside = [v for v in around if v.ended >= start]
    # A fresh value is produced when a Vigía collection ends, or a kafka_exporter scrape does.
    produced_at = [v.ended for v in inside]
    if vigia:
        seen = [*before, *inside]
        starts = [v.stamp - (v.collection_seconds or 0.0) for v in seen if v.stamp is not None]
        duration = statistics.median([v.collection_seconds or 0.0 for v in seen] or [0.0])
        count = stats.collections_seen(starts, stats.SCRAPE_INTERVAL, duration)
        period = stats.view_period(starts, count or None)
        # Up to the window's end: the next seen collection tells whether one ended unseen.
        ends = [v.stamp for v in views if v.stamp is not None and v.stamp < end + period]
        produced_at = stats.produced(ends, max(stats.SCRAPE_INTERVAL, duration))
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
        stats.gaps(produced_at, start, end),
        stats.intervals_in(start, end),
        peak_rss_mb,
        last[0].series if last else 0,
        any(s.overrunning for s in scrapes if start <= s.started < end),
    )


def wait_warm(vigias: Sequence[Scraper], anchor: Scraper, deadline: float) -> None:
    """Each Vigía's second collection seen (connections, first record-time reads, histories) and
    kafka_exporter's first scrape completed (its metadata refresh)."""
    while time.monotonic() < deadline:
        warm = all(len(fresh_views(v.taken(), True)) >= 2 for v in vigias)
        if warm and fresh_views(anchor.taken(), False):
            return
        time.sleep(1.0)
    raise TimeoutError("the exporters did not warm up before the deadline")


def wait_scraped_after(scrapers: Sequence[Scraper], moment: float, deadline: float) -> None:
    while time.monotonic() < deadline:
        if all(any(s.ok and s.started > moment for s in x.taken()) for x in scrapers):
            return
        time.sleep(1.0)
    # Judged anyway: the last window's last interval may then count a gap it did not have.
    log.warning("not every Vigía was scraped after the last window; its last interval may be a gap")


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


@dataclass(frozen=True)
class Repetition:
    load: str
    vigias: tuple[Window, ...]  # at its defaults first, then each variant
    anchor: Window


def vigia_name(variant: str) -> str:
    return f"{VIGIA} {variant}" if variant else VIGIA


def measure(
    binary: Path,
    bootstrap: str,
    workdir: Path,
    window: float,
    repetitions: int,
    variants: Sequence[str],
) -> list[Repetition]:
    names = [*(vigia_name(v) for v in ("", *variants)), ANCHOR]
    ports = [free_port() for _ in names]
    argvs = [
        exporter_argv(bootstrap, port, *shlex.split(v))
        for port, v in zip(ports, ("", *variants), strict=False)
    ]
    argvs.append(kafka_exporter_argv(binary, bootstrap, ports[-1]))
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    stop = threading.Event()
    done: list[Repetition] = []
    with contextlib.ExitStack() as processes:
        pids = []
        for n, argv in enumerate(argvs):
            log_name = "kafka_exporter" if n == len(names) - 1 else f"vigia-exporter-{n}"
            process = processes.enter_context(running(log_name, argv, workdir))
            assert process.pid is not None
            pids.append(process.pid)
        for url in urls:
            wait_listening(url)
        scrapers = [Scraper(url, stop) for url in urls]
        threads = [threading.Thread(target=s.run, daemon=True) for s in scrapers]
        for thread in threads:
            thread.start()
        try:
            wait_warm(scrapers[:-1], scrapers[-1], time.monotonic() + 600)
            marks = []
            for _ in range(repetitions):
                load = load_average()
                start, began = time.time(), [cpu_seconds(pid) for pid in pids]
                time.sleep(window)
                end = time.time()
                used = [cpu_seconds(pid) - cpu for pid, cpu in zip(pids, began, strict=True)]
                marks.append((load, start, end, used, [memory_mb(pid)[1] for pid in pids]))
            # A Vigía collection that ended in a window's last interval shows only in the scrape
            # after it: judged at the window's end, that interval would count as a gap.
            wait_scraped_after(scrapers[:-1], marks[-1][2], time.monotonic() + 60)
            for n, (load, start, end, used, peaks) in enumerate(marks):
                windows = [
                    judge(name, s.taken(), start, end, cpu, peak)
                    for name, s, cpu, peak in zip(names, scrapers, used, peaks, strict=True)
                ]
                done.append(Repetition(load, tuple(windows[:-1]), windows[-1]))
                log.info("repetition %d (load %s): %s", n + 1, load, " | ".join(map(str, windows)))
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
    rows = [[r.vigias[n] for r in reps] for n in range(len(reps[0].vigias))]
    for ws in [*rows, [r.anchor for r in reps]]:
        print(
            f"| {ws[0].exporter} | {_cells([w.cpu_per_view for w in ws], 3)} | "
            f"{_cells([w.cpu_per_15s for w in ws], 3)} | {_cells([w.views for w in ws], 1)} | "
            f"{_cells([w.scrape_median for w in ws], 2)} | "
            f"{_cells([w.scrape_max for w in ws], 2)} | "
            f"{', '.join(f'{w.gaps}/{w.intervals}' for w in ws)} | "
            f"{_cells([w.peak_rss_mb for w in ws], 0)} | "
            f"{_cells([float(w.series) for w in ws], 0)} |"
        )
    anchor = [r.anchor for r in reps]
    for ws in rows:
        per_view = stats.worst_ratio([w.cpu_per_view for w in ws], [w.cpu_per_view for w in anchor])
        per_wall = stats.worst_ratio([w.cpu_per_15s for w in ws], [w.cpu_per_15s for w in anchor])
        print(
            f"\nRatio {ws[0].exporter} / kafka_exporter at the worst repetition: CPU per fresh "
            f"view {per_view:.2f}, CPU per 15 s {per_wall:.2f}. Overrunning: "
            f"{', '.join(str(w.overrunning) for w in ws)}.",
            flush=True,
        )
    print(f"Load average at each window: {'; '.join(r.load for r in reps)}.", flush=True)


# -- the run --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--kafka-exporter", type=Path, default=KAFKA_EXPORTER)
    parser.add_argument("--groups", type=sizes, default=[50], help="sizes, comma-separated")
    parser.add_argument("--shape", type=int, choices=(6, 100), default=6, help="partitions/group")
    parser.add_argument(
        "--window",
        type=seconds,
        default=[150.0],
        help="seconds per repetition: one, or one per size, smallest first",
    )
    parser.add_argument("--repetitions", type=int, default=3)
    add_base_arguments(parser)
    parser.add_argument("--live-groups", type=int, default=10, help="groups with a live member")
    parser.add_argument(
        "--vigia-variant", action="append", default=[], help="one more Vigía with these flags"
    )
    args = parser.parse_args()
    if len(args.window) not in (1, len(args.groups)):
        parser.error(f"--window: one value, or one per size ({len(args.groups)})")
    windows = args.window * len(args.groups) if len(args.window) == 1 else args.window
    cluster, workdir = benchmark_cluster(args.kafka_home, args.workdir, "vigia-side-")
    stop = threading.Event()
    workers: list[threading.Thread] = []
    try:
        bootstrap, producer = start_base(cluster, args, stop)
        workers.append(producer)
        topic = group_topic(bootstrap, args.shape, args.replication)
        workers.append(start_thread(trickle, bootstrap, stop, topic, args.shape))
        made = 0
        for size, window in zip(args.groups, windows, strict=True):
            add_groups(bootstrap, made, size, partial(group_id, args.shape), topic, args.shape)
            for n in range(min(made, args.live_groups), min(size, args.live_groups)):
                group = group_id(args.shape, n)
                workers.append(start_thread(live_member, bootstrap, group, stop, topic))
            made = size
            log.info("%d groups of %d partitions: measuring", size, args.shape)
            reps = measure(
                args.kafka_exporter,
                bootstrap,
                workdir,
                window,
                args.repetitions,
                args.vigia_variant,
            )
            print_report(size, args.shape, reps)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
        cluster.close()


if __name__ == "__main__":
    main()
