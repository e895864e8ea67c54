"""Two or more checkouts' `vigia-exporter` at once on one real cluster: CPU per collection in the
same wall windows, so that a change's before and after share the machine's load.

`exporters_side_by_side`'s load (the topic base with its live producer, `orders` with a backlog
and a trickle, groups of 6 partitions committed behind it, the first 10 with a live member) on one
harness cluster. Each `--checkout NAME=PATH` runs `PATH/.venv/bin/python -m vigia.exporter.cli` at
its defaults from PATH, all started together and each scraped every 15 s as Prometheus would. At
each size of `--groups`, after `--warm` seconds, `--windows` windows of `--window` seconds: each
exporter's whole-process CPU (utime+stime, every thread) over the window, as CPU-s per 15 s (its
collection interval, so per collection while none overruns) and the collections its scrapes saw.

    git worktree add /tmp/before BASE   # and a venv in it: python3 -m venv .venv; pip install -e .
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_checkouts_same_window \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 \\
        --checkout before=/tmp/before --checkout after=. --groups 50,500

Results: docs/performance.md ("Before and after, same window").
"""

from __future__ import annotations

import argparse
import logging
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx

from benchmarks.exporter_collect_real import produce
from benchmarks.exporter_cost_curve import (
    add_groups,
    build_base,
    cpu_seconds,
    live_member,
    sizes,
    start_thread,
    trickle,
)
from benchmarks.exporters_side_by_side import group_id, group_topic, load_average
from tests.conftest import free_port
from tests.realstack.exporters import exporter_argv
from tests.realstack.kafka_cluster import KafkaCluster
from vigia.common.logs import setup_logging

log = logging.getLogger("benchmarks.exporter_checkouts_same_window")
STAMP = "\nvigia_exporter_last_collection_timestamp_seconds "
SHAPE = 6
INTERVAL = 15.0


def _stamp(text: str) -> float | None:
    start = text.find(STAMP)
    if start < 0:
        return None
    start += len(STAMP)
    return float(text[start : text.index("\n", start)])


@dataclass
class Exporter:
    name: str
    process: subprocess.Popen[bytes]
    url: str
    stamps: set[float] = field(default_factory=set)

    def scrape_every_interval(self, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            try:
                stamp = _stamp(httpx.get(f"{self.url}/metrics", timeout=120).text)
                if stamp is not None:
                    self.stamps.add(stamp)
            except httpx.HTTPError as exc:
                log.warning("scrape of %s failed: %s", self.name, exc)
            stop.wait(max(0.0, INTERVAL - (time.monotonic() - started)))


def start_exporter(name: str, checkout: Path, bootstrap: str, workdir: Path) -> Exporter:
    port = free_port()
    with open(workdir / f"{name}.log", "wb") as output:
        # The harness's argv, run by the checkout's own interpreter.
        argv = [str(checkout / ".venv/bin/python"), *exporter_argv(bootstrap, port)[1:]]
        process = subprocess.Popen(
            argv,
            cwd=checkout,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Exporter(name, process, f"http://127.0.0.1:{port}")


def measure(exporters: list[Exporter], groups: int, windows: int, window: float) -> None:
    for n in range(windows):
        load = load_average()
        start = time.time()
        began = {e.name: cpu_seconds(e.process.pid) for e in exporters}
        time.sleep(window)
        end = time.time()
        cells = []
        for e in exporters:
            spent = cpu_seconds(e.process.pid) - began[e.name]
            seen = sum(1 for s in e.stamps if start <= s <= end)
            cells.append(
                f"{e.name} {spent / (end - start) * INTERVAL:.3f} CPU-s/15 s ({seen} collections)"
            )
        print(f"{groups} groups, window {n + 1} (load {load}): {' | '.join(cells)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--checkout", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--groups", type=sizes, default=[50, 500], help="sizes, comma-separated")
    parser.add_argument("--warm", type=float, default=50.0, help="seconds before each size's")
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--window", type=float, default=90.0, help="seconds")
    args = parser.parse_args()
    setup_logging("INFO")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="vigia-checkouts-"))
    cluster = KafkaCluster(args.kafka_home, workdir / "kafka")
    stop = threading.Event()
    workers: list[threading.Thread] = []
    exporters: list[Exporter] = []
    try:
        cluster.start_all()
        bootstrap = cluster.bootstrap
        topics = build_base(bootstrap, 2000, 5)
        topic = group_topic(bootstrap, SHAPE)
        workers.append(start_thread(produce, bootstrap, topics, stop))
        workers.append(start_thread(trickle, bootstrap, stop, topic, SHAPE))
        made = 0
        for size in args.groups:
            add_groups(bootstrap, made, size, partial(group_id, SHAPE), topic, SHAPE)
            for n in range(min(made, 10), min(size, 10)):
                workers.append(
                    start_thread(live_member, bootstrap, group_id(SHAPE, n), stop, topic)
                )
            made = size
            if not exporters:
                for spec in args.checkout:
                    name, _, path = spec.partition("=")
                    exporters.append(start_exporter(name, Path(path).resolve(), bootstrap, workdir))
                for e in exporters:
                    workers.append(start_thread(e.scrape_every_interval, stop))
            time.sleep(args.warm)
            measure(exporters, size, args.windows, args.window)
    finally:
        stop.set()
        for e in exporters:
            e.process.terminate()
            try:
                e.process.wait(30)
            except subprocess.TimeoutExpired:
                e.process.kill()
        for worker in workers:
            worker.join(30)
        cluster.close()


if __name__ == "__main__":
    main()
