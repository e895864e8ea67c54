"""Cost of reading record timestamps at committed offsets (exporter/kafka/record_times.py).

Fills librdkafka's mock cluster (in this process) or a real cluster (--bootstrap-servers, with
--topic naming an existing topic with data) and times `RecordTimeReader.read` for N partitions at
once, each at an offset inside its data, several rounds with the same long-lived consumer. Prints
wall time and this process's CPU per read. With the mock cluster the CPU includes the mock
brokers, which run in this process: an upper bound of the exporter's own cost.

    python benchmarks/record_time_read.py --partitions 200 2000
"""

from __future__ import annotations

import argparse
import logging
import resource
import time

from confluent_kafka import Producer

from vigia.common.logs import setup_logging
from vigia.exporter.kafka.record_times import RecordTimeReader
from vigia.exporter.model.record_time import RecordBudget

log = logging.getLogger("benchmarks.record_time_read")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _fill_mock(partitions: int, per_partition: int) -> tuple[object, str, list[tuple[str, int]]]:
    cluster = Producer({"test.mock.num.brokers": 3, "log_level": 3})
    metadata = cluster.list_topics(timeout=10)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values())
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    producer.produce("bench-0", value=b"")  # auto-created with the mock's default partitions
    producer.flush(10)
    per_topic = len(producer.list_topics("bench-0", timeout=10).topics["bench-0"].partitions)
    tps = [(f"bench-{t}", p) for t in range(-(-partitions // per_topic)) for p in range(per_topic)][
        :partitions
    ]
    first_ms = int((time.time() - 2700) * 1000)
    for topic, p in tps:
        for i in range(per_partition):
            producer.produce(topic, value=b"x" * 150, partition=p, timestamp=first_ms + i)
        producer.poll(0)
    producer.flush(120)
    return cluster, bootstrap, tps


def _existing(bootstrap: str, topic: str, partitions: int) -> list[tuple[str, int]]:
    metadata = Producer({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return [(topic, p) for p in sorted(metadata.topics[topic].partitions)][:partitions]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-partition", type=int, default=50, help="messages (mock only)")
    parser.add_argument("--bootstrap-servers", help="a real cluster instead of the mock")
    parser.add_argument("--topic", help="with --bootstrap-servers: topic to read")
    args = parser.parse_args()
    setup_logging("INFO")
    print("partitions  round  read  wall_s  cpu_s")
    for n in args.partitions:
        if args.bootstrap_servers:
            cluster, bootstrap = None, args.bootstrap_servers
            tps = _existing(bootstrap, args.topic, n)
        else:
            cluster, bootstrap, tps = _fill_mock(n, args.per_partition)
        reader = RecordTimeReader(bootstrap, {}, RecordBudget(n, 30.0))
        try:
            for r in range(args.rounds):
                targets = [(t, p, r + 1) for t, p in tps]
                wall, cpu = time.monotonic(), _cpu()
                reads, failures = reader.read(targets, 30.0)
                wall, cpu = time.monotonic() - wall, _cpu() - cpu
                print(f"{len(tps):10d}  {r:5d}  {len(reads):4d}  {wall:6.3f}  {cpu:5.3f}")
                if failures:
                    log.warning("%d failed, first: %s", len(failures), failures[0])
        finally:
            reader.close()
            del cluster


if __name__ == "__main__":
    main()
