"""The exporter against librdkafka's mock cluster, which lacks several admin APIs: how long each
collection takes, whether it counts as complete (vigia_exporter_up), which capabilities it found
missing, and how many log lines a running exporter writes (one per state change is the goal,
not one per collection).

    python benchmarks/exporter_on_mock.py --collections 5 --run-seconds 40
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.conftest import start_mock_cluster
from tests.exporter.live import exporter_process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=10.0, help="--collection-timeout")
    parser.add_argument("--run-seconds", type=float, default=40.0, help="exporter process run")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # the adapter's own lines are counted in the process run

    cluster = start_mock_cluster()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for _ in range(100):
        producer.produce("readings", b"{}")
    producer.flush(10)

    adapter = KafkaAdapter(cluster.bootstrap_servers, {}, Filters())
    try:
        for i in range(1, args.collections + 1):
            started = time.monotonic()
            snapshot = adapter.collect(args.timeout)
            off = sorted(c for c, on in snapshot.capabilities.items() if not on)
            print(
                f"collection {i}: {time.monotonic() - started:.2f} s, up {int(snapshot.ok)}, "
                f"failed phases {sorted(snapshot.failed_phases)}, capabilities off {off}"
            )
    finally:
        adapter.close()

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "exporter.log"
        interval = ("--collection-interval", "1", "--collection-timeout", "3")
        with exporter_process(log, "--bootstrap-servers", cluster.bootstrap_servers, *interval):
            time.sleep(args.run_seconds)
        lines = log.read_text().splitlines()
    print(f"exporter process, {args.run_seconds:g} s at 1 collection/s: {len(lines)} log lines")


if __name__ == "__main__":
    main()
