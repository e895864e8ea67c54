"""Vigía's exporter under consumer-group churn, kafka_exporter 1.9.0 beside it.

Proves that Vigía's memory does not grow with groups that no longer exist (RSS flat under churn)
and that its series drop deleted groups. On the harness's real 3-node Kafka 4.0 cluster
(tests/realstack), under `exporter_cost_curve.py`'s base load (`--partitions` partitions in
topics of `--topic-partitions` (40), RF `--replication` (3), its live producer, the 6-partition
`orders` topic and its trickle), `--groups` groups that committed offsets on `orders` live at
all times; every `--period` seconds for `--minutes`, the `--turnover` oldest are deleted (one
DeleteGroups per coordinator) and as many are created under new names, so that the groups ever
seen grow to thousands while the live count stays. One `vigia-exporter` at its defaults and one
kafka_exporter watch the cluster, each scraped every 15 s as Prometheus does.

Every 30 s it prints: minutes since the churn began, live groups, groups created so far, Vigía's
RSS and peak RSS (VmRSS/VmHWM), its series, its group-labelled series and distinct
`consumergroup` values in its last scrape (and how many of those were deleted over
`STALE_AFTER` s before that scrape), kafka_exporter's RSS and distinct groups in its last
completed scrape, and the load average. At the end: Vigía's RSS after the warm-up against the
last minutes' highest, the least-squares slope in MB per hour from the warm-up on, and whether
a collection that started after the churn stopped names exactly the live groups. The arithmetic
is `churn_stats.py`'s.

    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_group_churn \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --minutes 30
    # kafka_exporter issue 509's shape: 3,000 topics of 4 partitions, 2,000 groups, RF 1
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_group_churn \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --minutes 30 \\
        --partitions 12000 --topic-partitions 4 --replication 1 --groups 2000

Results: docs/performance.md.
"""

from __future__ import annotations

import argparse
import collections
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import churn_stats as stats
from benchmarks.exporter_cost_curve import (
    KAFKA_EXPORTER,
    add_base_arguments,
    add_groups,
    benchmark_cluster,
    memory_mb,
    start_base,
    start_thread,
    trickle,
)
from benchmarks.exporters_side_by_side import Scraper, load_average
from tests.conftest import free_port
from tests.exporter.exposition import samples, value
from tests.realstack.exporters import (
    LAST_COLLECTION,
    exporter_argv,
    kafka_exporter_argv,
    next_collection,
    running,
    series_count,
    wait_listening,
)
from tests.realstack.groups import delete_groups

log = logging.getLogger("benchmarks.exporter_group_churn")

PREFIX = "churn-"
REPORT_EVERY = 30.0  # seconds between printed lines
# A deleted group may still show in a collection that began before it went (a collection can
# take a minute on the loaded machine): only one gone for longer counts as kept.
STALE_AFTER = 120.0


def churn_id(n: int) -> str:
    return f"{PREFIX}{n:06d}"


@dataclass
class Population:
    """The churned groups: which live, how many were ever created, when each deleted one went."""

    live: collections.deque[int] = field(default_factory=collections.deque)
    created: int = 0
    deleted_at: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, bootstrap: str, count: int) -> None:
        start = self.created
        add_groups(bootstrap, start, start + count, churn_id)
        with self.lock:
            self.live.extend(range(start, start + count))
            self.created = start + count

    def delete_oldest(self, bootstrap: str, count: int) -> None:
        with self.lock:
            oldest = [self.live.popleft() for _ in range(min(count, len(self.live)))]
        kept = delete_groups(bootstrap, [churn_id(n) for n in oldest])
        if kept:
            log.warning("%d groups could not be deleted, e.g. %s", len(kept), kept[0])
        with self.lock:
            self.live.extendleft(n for n in reversed(oldest) if churn_id(n) in kept)
            gone = time.time()
            self.deleted_at.update({churn_id(n): gone for n in oldest if churn_id(n) not in kept})

    def names(self) -> set[str]:
        with self.lock:
            return {churn_id(n) for n in self.live}

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return len(self.live), self.created

    def stale(self, groups: set[str], scraped: float) -> int:
        """Groups a scrape taken at `scraped` shows that were deleted STALE_AFTER s before it."""
        with self.lock:
            return sum(1 for g in groups if self.deleted_at.get(g, scraped) < scraped - STALE_AFTER)


@dataclass
class LastScrape:
    """What one exporter's last completed scrape showed."""

    started: float = 0.0
    series: int = 0
    group_series: int = 0
    groups: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, started: float, text: str) -> None:
        found = (stats.group_series(text), stats.group_labels(text))
        with self.lock:
            self.started, self.series = started, series_count(text)
            self.group_series, self.groups = found

    def taken(self) -> tuple[float, int, int, set[str]]:
        with self.lock:
            return self.started, self.series, self.group_series, set(self.groups)


def churned(groups: set[str]) -> set[str]:
    return {g for g in groups if g.startswith(PREFIX)}


def report_line(
    began: float, population: Population, vigia: LastScrape, anchor: LastScrape, pids: list[int]
) -> tuple[float, float]:
    minutes = (time.monotonic() - began) / 60
    live, created = population.counts()
    rss, peak = memory_mb(pids[0])
    anchor_rss, _ = memory_mb(pids[1])
    scraped, series, group_series, groups = vigia.taken()
    stale = population.stale(groups, scraped)
    print(
        f"{minutes:5.1f} min | live {live} | created {created} | Vigía RSS {rss:.1f} MB "
        f"peak {peak:.1f} MB, series {series}, group series {group_series}, groups "
        f"{len(groups)} (deleted still shown {stale}) | kafka_exporter RSS {anchor_rss:.1f} MB, "
        f"groups {len(anchor.taken()[3])} | load {load_average()}",
        flush=True,
    )
    return minutes, rss


def reporter(
    began: float,
    population: Population,
    scraped: tuple[LastScrape, LastScrape],
    pids: list[int],
    stop: threading.Event,
    rss: list[tuple[float, float]],
) -> None:
    while not stop.wait(max(0.0, REPORT_EVERY - (time.monotonic() - began) % REPORT_EVERY)):
        rss.append(report_line(began, population, *scraped, pids))


def churn(bootstrap: str, population: Population, args: argparse.Namespace, began: float) -> None:
    """Every `--period` s until `--minutes` have passed: the oldest out, as many new ones in.
    A round that outlasts the period is followed at once by the next."""
    rounds = int(args.minutes * 60 // args.period)
    for n in range(1, rounds + 1):
        time.sleep(max(0.0, began + n * args.period - time.monotonic()))
        started = time.monotonic()
        population.delete_oldest(bootstrap, args.turnover)
        population.add(bootstrap, args.turnover)
        log.info("round %d/%d took %.0f s", n, rounds, time.monotonic() - started)
    time.sleep(max(0.0, began + args.minutes * 60 - time.monotonic()))


def final_groups(url: str, after: float) -> set[str]:
    """The groups of Vigía's first collection that started after `after` (the second to end
    after it)."""
    deadline = time.monotonic() + 600
    text = next_collection(url, after, 0.0, deadline)
    stamp = value(samples(text), LAST_COLLECTION)
    text = next_collection(url, stamp, 15.0, deadline)
    return stats.group_labels(text)


def summary(args: argparse.Namespace, rss: list[tuple[float, float]]) -> None:
    warm_up, tail = stats.warm_up_and_tail(args.minutes, args.warm_up, args.tail)
    found = stats.growth(rss, warm_up, tail)
    print(
        f"\nVigía RSS at minute {warm_up:g}: {found.after_warm_up:.1f} MB; highest over the last "
        f"{tail:g} minutes: {found.tail_max:.1f} MB; slope {found.slope_mb_per_hour:+.1f} MB/h "
        f"over {found.samples} samples.",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--kafka-exporter", type=Path, default=KAFKA_EXPORTER)
    parser.add_argument("--minutes", type=float, default=30.0, help="of churn")
    parser.add_argument("--groups", type=int, default=2000, help="live at all times")
    parser.add_argument("--turnover", type=int, default=500, help="groups replaced per round")
    parser.add_argument("--period", type=float, default=60.0, help="seconds between rounds")
    parser.add_argument("--warm-up", type=float, default=5.0, help="minutes (summary)")
    parser.add_argument("--tail", type=float, default=5.0, help="last minutes (summary)")
    add_base_arguments(parser)
    args = parser.parse_args()
    cluster, workdir = benchmark_cluster(args.kafka_home, args.workdir, "vigia-churn-")
    stop = threading.Event()
    workers: list[threading.Thread] = []
    try:
        bootstrap, producer = start_base(cluster, args, stop)
        workers.append(producer)
        workers.append(start_thread(trickle, bootstrap, stop))
        population = Population()
        population.add(bootstrap, args.groups)
        run(args, bootstrap, workdir, population, stop, workers)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
        cluster.close()


def run(
    args: argparse.Namespace,
    bootstrap: str,
    workdir: Path,
    population: Population,
    stop: threading.Event,
    workers: list[threading.Thread],
) -> None:
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    scraped = (LastScrape(), LastScrape())
    rss: list[tuple[float, float]] = []
    with (
        running("vigia-exporter", exporter_argv(bootstrap, ports[0]), workdir) as vigia,
        running(
            "kafka_exporter", kafka_exporter_argv(args.kafka_exporter, bootstrap, ports[1]), workdir
        ) as anchor,
    ):
        assert vigia.pid is not None and anchor.pid is not None
        pids = [vigia.pid, anchor.pid]
        for url in urls:
            wait_listening(url)
        for url, seen in zip(urls, scraped, strict=True):
            workers.append(start_thread(Scraper(url, stop, seen.read).run))
        began = time.monotonic()
        workers.append(start_thread(reporter, began, population, scraped, pids, stop, rss))
        churn(bootstrap, population, args, began)
        ended = time.time()
        rss.append(report_line(began, population, *scraped, pids))
        last = churned(final_groups(urls[0], ended))
        live = population.names()
        summary(args, rss)
        print(
            f"Vigía's first collection after the churn names {len(last)} churned groups; live "
            f"{len(live)}: {'equal, deleted groups dropped' if last == live else 'NOT equal'} "
            f"(deleted still shown {len(last - live)}, live missing {len(live - last)}).",
            flush=True,
        )


if __name__ == "__main__":
    main()
