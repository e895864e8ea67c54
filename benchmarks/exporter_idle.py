"""What the exporter costs between collections: its CPU while it collects nothing (issue 24).

Starts the harness's real 3-node Kafka 4.0 cluster (tests/realstack, no topic), then one
`vigia-exporter` at a time with `--collection-interval 3600`: after its first collection and
`--warm` seconds, the process's utime+stime over `--window` seconds is what the web server, the
probe (when on) and the clients' own threads cost when nothing is collected. Printed per 15 s (the
default collection interval, so comparable with a collection's CPU-s) and split by thread kind
(librdkafka's `rdk:…`, the interpreter's `python`).

    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.exporter_idle \\
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0

Results: docs/performance.md ("Between collections").
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.exporter_cost_curve import cpu_by_thread, cpu_seconds, exporter_argv, running
from tests.conftest import free_port
from tests.realstack.kafka_cluster import KafkaCluster
from vigia.common.logs import setup_logging

PER = 15.0  # seconds: the default collection interval
VARIANTS: list[list[str]] = [[], ["--no-probe"]]


def idle_cost(bootstrap: str, extra: list[str], workdir: Path, warm: float, window: float) -> None:
    argv = exporter_argv(bootstrap, free_port(), "--collection-interval", "3600", *extra)
    with running("vigia-exporter", argv, workdir) as process:
        pid = process.pid
        assert pid is not None
        time.sleep(warm)
        began, threads_began = cpu_seconds(pid), cpu_by_thread(pid)
        time.sleep(window)
        spent = cpu_seconds(pid) - began
        threads = {
            kind: (seconds - threads_began.get(kind, 0.0)) * PER / window
            for kind, seconds in cpu_by_thread(pid).items()
        }
    split = ", ".join(f"{kind} {cpu:.3f}" for kind, cpu in sorted(threads.items()))
    print(f"{' '.join(extra) or 'defaults'}: {spent * PER / window:.3f} CPU-s per 15 s ({split})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--warm", type=float, default=40.0, help="seconds before measuring")
    parser.add_argument("--window", type=float, default=120.0, help="seconds measured")
    args = parser.parse_args()
    setup_logging("INFO")
    workdir = Path(tempfile.mkdtemp(prefix="vigia-idle-"))
    cluster = KafkaCluster(args.kafka_home, workdir / "kafka")
    try:
        cluster.start_all()
        for extra in VARIANTS:
            idle_cost(cluster.bootstrap, extra, workdir, args.warm, args.window)
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
