"""Two exporters' cost on one real cluster: this checkout's and another's (a change's before/after).

`exporter_cost_curve`'s load (a topic base, `orders` with a backlog, groups committed on it, the
first `--live-groups` with a live member) on one harness cluster; at each size of `--groups`, one
`vigia-exporter` at its defaults from `--before` (a checkout of the code before the change, put
first on PYTHONPATH) and then one from this checkout, each measured as `exporter_cost_curve`
measures it (CPU-s per collection after warm-up collections, phase medians, RSS, series, and the
admin requests the brokers served per collection). kafka_exporter is left out: the comparison is
between the two exporters, in the same run so that the machine's load is the same.

`--measure collect` measures instead only what the Kafka adapter's `collect` costs (process CPU of a
child that runs `KafkaAdapter.collect` every 15 s, librdkafka's and kafka-python's threads
included, after 2 warm-up collections), without derive, render, the probe and record times: the
part a change to exporter/kafka/ moves, which the whole exporter's noise on a shared machine hides.

    git archive BASE | tar -x -C /tmp/before
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_before_after \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --before /tmp/before \\
        --partitions 400 --groups 50,500 --collections 3 [--measure collect|both]
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.exporter_collect_real import produce
from benchmarks.exporter_cost_curve import (
    ADMIN_APIS,
    VigiaRun,
    add_groups,
    build_base,
    group_id,
    live_member,
    measure_vigia,
    per_unit,
    request_counts,
    sizes,
    trickle,
)
from tests.realstack.kafka_cluster import KafkaCluster
from vigia.common.logs import setup_logging

log = logging.getLogger("exporter_before_after")


REPO = Path(__file__).resolve().parents[1]


def measured(
    before: Path | None, bootstrap: str, jmx: list[str], workdir: Path, warm: int, n: int
) -> VigiaRun:
    """One exporter's run; `before`: the checkout whose `exporter` package it imports. The child
    inherits the working directory, which `python -m` puts first on sys.path, before PYTHONPATH:
    both are the checkout's."""
    saved = os.environ.get("PYTHONPATH")
    source = before or REPO
    os.environ["PYTHONPATH"] = str(source)
    os.chdir(source)
    try:
        return measure_vigia(bootstrap, jmx, workdir, warm, n)
    finally:
        os.chdir(REPO)
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


COLLECT_ONLY = """
import inspect, sys, time
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters
slow = {"slow_phase_interval": 60.0}
if "slow_phase_interval" not in inspect.signature(KafkaAdapter).parameters:
    slow = {}
from vigia import exporter
print(f"exporter from {exporter.__file__}", file=sys.stderr)
adapter = KafkaAdapter(sys.argv[1], {}, Filters(), **slow)
spent, failed = [], 0
for n in range(2 + int(sys.argv[2])):
    began, cpu = time.monotonic(), time.process_time()
    snapshot = adapter.collect(10)
    if n >= 2:
        spent.append(time.process_time() - cpu)
        failed += not snapshot.ok
    time.sleep(max(0.0, 15 - (time.monotonic() - began)))
adapter.close()
spent.sort()
print(f"{sum(spent) / len(spent):.3f} mean, {spent[len(spent) // 2]:.3f} median CPU-s per collect "
      f"({len(spent)} collections, {failed} not ok)")
"""


def collect_only(before: Path | None, bootstrap: str, jmx: list[str], n: int) -> str:
    """The adapter's collect alone, in a child importing `before`'s code (or this checkout's)."""
    source = before or REPO
    # `python -c` puts the working directory first on sys.path: the checkout's, as PYTHONPATH.
    env = {**os.environ, "PYTHONPATH": str(source)}
    served = request_counts(jmx)
    done = subprocess.run(
        [sys.executable, "-c", COLLECT_ONLY, bootstrap, str(n)],
        capture_output=True,
        text=True,
        cwd=source,
        env=env,
        timeout=60 + 15 * (n + 2),
        check=False,
    )
    requests = per_unit(served, request_counts(jmx), n + 2)
    counted = ", ".join(f"{api} {requests[api]:,.1f}" for api in ADMIN_APIS if requests.get(api))
    imported = next((t for t in done.stderr.splitlines() if t.startswith("exporter from")), "")
    out = f"{done.stdout.strip() or done.stderr[-2000:]} [{imported}]"
    return f"{out}\n    requests per collection (warm-up included): {counted}"


def line(label: str, groups: int, run: VigiaRun) -> str:
    requests = ", ".join(
        f"{api} {run.requests[api]:,.1f}" for api in ADMIN_APIS if run.requests.get(api)
    )
    phases = ", ".join(f"{p} {s:.2f}" for p, s in sorted(run.phases.items()))
    busiest = sorted(run.threads.items(), key=lambda kv: -kv[1])[:8]
    threads = ", ".join(f"{name} {cpu:.3f}" for name, cpu in busiest)
    return (
        f"{label:6} {groups:>5} groups: {run.cpu_per_collection:.3f} CPU-s/collection, "
        f"RSS {run.rss_mb:.0f} MB, {run.series:,} series, {run.groups_seen} groups seen, "
        f"up {run.up}\n    phases (s): {phases}\n    CPU-s per collection by thread: {threads}"
        f"\n    requests per collection: {requests}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True, help="checkout of the old code")
    parser.add_argument("--groups", type=sizes, default=[50, 500])
    parser.add_argument("--partitions", type=int, default=400, help="the topic base")
    parser.add_argument("--live-groups", type=int, default=10, help="groups with a live member")
    parser.add_argument("--warm-collections", type=int, default=2)
    parser.add_argument("--collections", type=int, default=3)
    parser.add_argument(
        "--measure",
        choices=("exporter", "collect", "both"),
        default="exporter",
        help="the whole exporter, the adapter's collect alone, or both",
    )
    args = parser.parse_args()
    setup_logging("INFO")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="vigia-before-after-"))
    cluster = KafkaCluster(args.kafka_home, workdir / "kafka")
    stop = threading.Event()
    workers: list[threading.Thread] = []
    lines: list[str] = []

    def start(target: object, *targs: object) -> None:
        worker = threading.Thread(target=target, args=targs, daemon=True)  # type: ignore[arg-type]
        worker.start()
        workers.append(worker)

    try:
        cluster.start_all()
        bootstrap = cluster.bootstrap
        topics = build_base(bootstrap, args.partitions, 5)
        start(produce, bootstrap, topics, stop)
        start(trickle, bootstrap, stop)
        made = 0
        for size in args.groups:
            add_groups(bootstrap, made, size)
            for n in range(min(made, args.live_groups), min(size, args.live_groups)):
                start(live_member, bootstrap, group_id(n), stop)
            made = size
            time.sleep(5)  # the members join before the exporters look
            jmx = list(cluster.jmx_urls().values())
            for label, source in (("before", args.before), ("after", None)):
                if args.measure in ("collect", "both"):
                    text = collect_only(source, bootstrap, jmx, args.collections)
                    lines.append(f"{label:6} {size:>5} groups, collect: {text}")
                    print(lines[-1], flush=True)
                if args.measure in ("exporter", "both"):
                    run = measured(
                        source, bootstrap, jmx, workdir, args.warm_collections, args.collections
                    )
                    lines.append(line(label, size, run))
                    print(lines[-1], flush=True)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
        cluster.close()
        print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
