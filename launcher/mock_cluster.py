"""`python -m vigia.launcher.mock_cluster`: hosts librdkafka's mock Kafka cluster for `--demo`.

The mock cluster lives inside a librdkafka handle and dies with the process holding it, so this
small process only creates it, lays out the demo's topics as a Kafka cluster would have them, writes
the bootstrap address to a file and waits. It stops on SIGINT/SIGTERM, and by itself when the
process that started it is gone: a killed launcher leaves no broker behind.

Where the mock differs from Kafka in ways an operator would read as faults, the topics are laid out
here so that the demo shows none:
- the mock gives a new partition a random one of its replicas as leader, where Kafka makes the
  first (preferred) replica the leader: each partition's leader is moved to its preferred replica;
- with as many replicas as brokers, the mock gives every partition the same replica order, so one
  broker would be the preferred leader of all of them and the others of none, and the exporter's
  probe (which needs a partition led by each broker and cannot make one: the mock has no
  CreateTopics, CreatePartitions or ElectLeaders) would probe a single broker. With replication
  factor 2 the mock rotates the order, as Kafka's assignment does.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Producer

from vigia.common.logs import setup_logging
from vigia.launcher.rdkafka_mock import MockCluster

log = logging.getLogger("vigia.mock-cluster")

PARENT_CHECK_SECONDS = 1.0
PARTITIONS = 4
REPLICATION_FACTOR = 2


def start(num_brokers: int, topics: Sequence[str]) -> MockCluster:
    """The cluster, with `topics` created and each partition led by its preferred replica."""
    cluster = MockCluster(num_brokers)
    for topic in topics:
        cluster.create_topic(topic, PARTITIONS, min(REPLICATION_FACTOR, num_brokers))
    client = Producer({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 3})
    for topic in topics:
        found = client.list_topics(topic, timeout=10).topics[topic]
        if found.error is not None:
            raise RuntimeError(f"cannot create topic {topic}: {found.error}")
        for partition in found.partitions.values():
            cluster.set_leader(topic, partition.id, partition.replicas[0])
    return cluster


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vigia.launcher.mock_cluster", description=__doc__
    )
    parser.add_argument("--brokers", type=int, default=3, help="number of brokers (3)")
    parser.add_argument("--topic", action="append", default=[], help="topic to create, repeatable")
    parser.add_argument("--bootstrap-file", type=Path, required=True, help="write the address here")
    args = parser.parse_args(argv)
    setup_logging(os.environ.get("VIGIA_LOG_LEVEL", "INFO"))

    parent = os.getppid()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    cluster = start(args.brokers, args.topic)
    temporary = args.bootstrap_file.with_suffix(".tmp")
    temporary.write_text(cluster.bootstrap_servers + "\n", encoding="utf-8")
    temporary.replace(args.bootstrap_file)  # readers never see half an address
    log.info(
        "mock cluster of %d brokers at %s (topics %s)",
        args.brokers,
        cluster.bootstrap_servers,
        args.topic,
    )
    while not stop.wait(PARENT_CHECK_SECONDS):
        if os.getppid() != parent:
            log.warning("the launcher is gone: stopping")
            break
    cluster.close()
    log.info("mock cluster stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
