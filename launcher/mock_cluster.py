"""`python -m launcher.mock_cluster`: hosts librdkafka's mock Kafka cluster for `--demo`.

The mock cluster (`test.mock.num.brokers`) lives inside a librdkafka client and dies with the
process holding it, so this small process only creates it, creates the topics the demo uses (the
mock creates a topic, 4 partitions and up to 3 replicas, when a client asks for its metadata),
writes the bootstrap address to a file and waits. It stops on SIGINT/SIGTERM, and by itself when
the process that started it is gone: a killed launcher leaves no broker behind.
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

from common.logs import setup_logging

log = logging.getLogger("vigia.mock-cluster")

PARENT_CHECK_SECONDS = 1.0


def start(num_brokers: int, topics: Sequence[str]) -> tuple[Producer, str]:
    """The client holding the cluster, and the cluster's bootstrap address."""
    handle = Producer({"test.mock.num.brokers": num_brokers, "log_level": 3})
    metadata = handle.list_topics(timeout=10)
    brokers = sorted(metadata.brokers.values(), key=lambda b: b.id)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers)
    for topic in topics:
        found = handle.list_topics(topic, timeout=10).topics[topic]
        if found.error is not None:
            raise RuntimeError(f"cannot create topic {topic}: {found.error}")
    return handle, bootstrap


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launcher.mock_cluster", description=__doc__)
    parser.add_argument("--brokers", type=int, default=3, help="number of brokers (3)")
    parser.add_argument("--topic", action="append", default=[], help="topic to create, repeatable")
    parser.add_argument("--bootstrap-file", type=Path, required=True, help="write the address here")
    args = parser.parse_args(argv)
    setup_logging(os.environ.get("VIGIA_LOG_LEVEL", "INFO"))

    parent = os.getppid()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    handle, bootstrap = start(args.brokers, args.topic)
    temporary = args.bootstrap_file.with_suffix(".tmp")
    temporary.write_text(bootstrap + "\n", encoding="utf-8")
    temporary.replace(args.bootstrap_file)  # readers never see half an address
    log.info("mock cluster of %d brokers at %s (topics %s)", args.brokers, bootstrap, args.topic)
    while not stop.wait(PARENT_CHECK_SECONDS):
        if os.getppid() != parent:
            log.warning("the launcher is gone: stopping")
            break
    del handle
    log.info("mock cluster stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
