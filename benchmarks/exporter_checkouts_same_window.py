"""Two or more checkouts' `vigia-exporter` at once on one real cluster: CPU per collection in the
same wall windows, so that a change's before and after share the machine's load.

`exporters_side_by_side`'s load (the topic base with its live producer, `orders` with a backlog
and a trickle, groups of 6 partitions committed behind it, the first 10 with a live member) on one
harness cluster. Each `--checkout NAME=PATH` runs `PATH/.venv/bin/python -m vigia.exporter.cli` at
its defaults from PATH, all started together and each scraped every 15 s as Prometheus would. At
each size of `--groups`, after `--warm` seconds, `--windows` windows of `--window` seconds: each
exporter's whole-process CPU (utime+stime, every thread) over the window, as CPU-s per 15 s (its
collection interval, so per collection while none overruns) and the collections its scrapes saw.
`--args NAME=ARGS` gives one exporter extra flags (`--args noprobe=--no-probe`: a checkout's
exporter with and without a component, to price the component), `--env NAME=VAR=VALUE` an
environment variable (`--env arena2=MALLOC_ARENA_MAX=2`); each window ends with each exporter's
resident memory then and its peak so far (VmRSS, VmHWM); `--threads` adds each exporter's
CPU by thread name (`rdk:broker…`, `rdk:main`, … for librdkafka's; Python's threads are all
`python…`), polled every 0.3 s so that short-lived threads are counted too.

    git worktree add /tmp/before BASE   # and a venv in it: python3 -m venv .venv; pip install -e .
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_checkouts_same_window \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 \\
        --checkout before=/tmp/before --checkout after=. --groups 50,500

Results: docs/performance.md ("Before and after, same window").
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
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


class ThreadCpu:
    """CPU by thread name of a process, polled: a thread's CPU counts up to its last poll."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._last: dict[int, tuple[str, float]] = {}

    def poll(self) -> None:
        for task in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{task}/comm") as f:
                    name = f.read().strip()
                self._last[int(task)] = (name, cpu_seconds(self.pid, int(task)))
            except OSError:
                continue  # the thread ended between the listing and the read

    def totals(self) -> dict[str, float]:
        by_name: dict[str, float] = defaultdict(float)
        for name, spent in self._last.values():
            by_name[name.rstrip("0123456789")] += spent
        return by_name

    def keep_polling(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.poll()
            except OSError:
                return  # the process ended
            stop.wait(0.3)


def memory_mb(pid: int) -> tuple[float, float]:
    """Resident memory now and its peak so far (VmRSS, VmHWM), MB."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmRSS"].split()[0]) / 1000, int(fields["VmHWM"].split()[0]) / 1000


def start_exporter(
    name: str,
    checkout: Path,
    bootstrap: str,
    workdir: Path,
    extra: list[str],
    env: dict[str, str],
) -> Exporter:
    port = free_port()
    with open(workdir / f"{name}.log", "wb") as output:
        # The harness's argv, run by the checkout's own interpreter.
        argv = [str(checkout / ".venv/bin/python"), *exporter_argv(bootstrap, port, *extra)[1:]]
        process = subprocess.Popen(
            argv,
            cwd=checkout,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env},
        )
    return Exporter(name, process, f"http://127.0.0.1:{port}")


def measure(
    exporters: list[Exporter],
    threads: dict[str, ThreadCpu],
    groups: int,
    windows: int,
    window: float,
) -> None:
    for n in range(windows):
        load = load_average()
        start = time.time()
        began = {e.name: cpu_seconds(e.process.pid) for e in exporters}
        by_name = {name: t.totals() for name, t in threads.items()}
        time.sleep(window)
        end = time.time()
        per_15s = INTERVAL / (end - start)
        cells = []
        for e in exporters:
            spent = cpu_seconds(e.process.pid) - began[e.name]
            seen = sum(1 for s in e.stamps if start <= s <= end)
            rss, peak = memory_mb(e.process.pid)
            cells.append(
                f"{e.name} {spent * per_15s:.3f} CPU-s/15 s ({seen} collections), "
                f"RSS {rss:.0f} MB (peak {peak:.0f})"
            )
        print(f"{groups} groups, window {n + 1} (load {load}): {' | '.join(cells)}", flush=True)
        for name, tracked in threads.items():
            now, before = tracked.totals(), by_name[name]
            spent_by_name = {thread: cpu - before.get(thread, 0.0) for thread, cpu in now.items()}
            shares = ", ".join(
                f"{thread} {cpu * per_15s:.3f}"
                for thread, cpu in sorted(spent_by_name.items(), key=lambda kv: -kv[1])
            )
            print(f"    {name} by thread, CPU-s/15 s: {shares}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--checkout", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--args", action="append", default=[], help="NAME=ARGS, extra flags")
    parser.add_argument("--env", action="append", default=[], help="NAME=VAR=VALUE")
    parser.add_argument("--threads", action="store_true", help="CPU by thread name too")
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
    threads: dict[str, ThreadCpu] = {}
    extra = {name: shlex.split(flags) for name, _, flags in (a.partition("=") for a in args.args)}
    envs: dict[str, dict[str, str]] = defaultdict(dict)
    for name, _, assignment in (e.partition("=") for e in args.env):
        var, _, value = assignment.partition("=")
        envs[name][var] = value
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
                    exporters.append(
                        start_exporter(
                            name,
                            Path(path).resolve(),
                            bootstrap,
                            workdir,
                            extra.get(name, []),
                            envs[name],
                        )
                    )
                for e in exporters:
                    workers.append(start_thread(e.scrape_every_interval, stop))
                    if args.threads:
                        threads[e.name] = ThreadCpu(e.process.pid)
                        workers.append(start_thread(threads[e.name].keep_polling, stop))
            time.sleep(args.warm)
            measure(exporters, threads, size, args.windows, args.window)
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
