"""Broker restarts and KRaft controller failovers under one exporter process (issue 20 §0, §1).

Starts the harness's 3-node cluster (tests/realstack), `--topics` topics of 40 partitions with a
live producer, `--groups` groups with committed offsets (lag), one `vigia-exporter` at its
defaults (probe on) under PYTHONFAULTHANDLER=1 with core dumps allowed, scrapes /metrics every
second, and restarts brokers one after another: `--restarts` stops of a broker that is not the
active controller, then `--failovers` stops of the active controller (the KRaft quorum leader),
each down `--down-seconds`, the next stop once every partition has its full ISR again. Prints:

    restarts 30, controller failovers 5, exporter alive yes
    longest scrape gap 1.0 s, longest collection gap 10.3 s (collection interval 5 s)
    up 0 in 0 of 2412 scrapes

    PYTHONPATH=. python -m benchmarks.exporter_restarts \
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --restarts 30 --failovers 5
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from tests.conftest import free_port
from tests.exporter.exposition import samples, value
from tests.realstack.exporters import exporter_argv
from tests.realstack.groups import commit_groups
from tests.realstack.kafka_cluster import NODES, KafkaCluster
from tests.realstack.process import LoggedProcess
from vigia.common.logs import setup_logging

PARTITIONS = 40

log = logging.getLogger("benchmarks.exporter_restarts")


@dataclass
class Scrapes:
    """What a Prometheus scraping the exporter every second would have seen."""

    times: list[float] = field(default_factory=list)  # successful scrapes (monotonic)
    collections: list[float] = field(default_factory=list)  # each new last-collection timestamp
    down: list[tuple[float, str]] = field(default_factory=list)  # (when, why) of up 0
    failed: int = 0

    @staticmethod
    def longest_gap(times: list[float]) -> float:
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def scrape_loop(url: str, stop: threading.Event, into: Scrapes) -> None:
    last_collection = None
    began = time.monotonic()
    while not stop.wait(1.0):
        try:
            found = samples(httpx.get(f"{url}/metrics", timeout=5).text)
        except (httpx.HTTPError, OSError):
            into.failed += 1
            continue
        now = time.monotonic()
        into.times.append(now)
        collected = value(found, "vigia_exporter_last_collection_timestamp_seconds")
        if collected is not None and collected != last_collection:
            into.collections.append(collected)
            last_collection = collected
        if value(found, "vigia_exporter_up") == 0 and collected is not None:
            try:
                errors = httpx.get(f"{url}/api/v1/cluster", timeout=5).json().get("errors")
            except (httpx.HTTPError, OSError, ValueError):
                errors = "?"
            into.down.append((now - began, str(errors)[:300]))


def seed(
    bootstrap: str,
    topics: list[str],
    groups: int,
    partitions: int = PARTITIONS,
    replication: int = 3,
) -> None:
    """The topics (`partitions` each, RF `replication`), and `groups` groups that committed
    offsets on one of them (no members)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(t, partitions, replication) for t in topics], request_timeout=120
    ).values():
        future.result(timeout=180)
    commit_groups(
        admin,
        {
            f"drill-group-{n}": [
                TopicPartition(topics[n % len(topics)], p, 1) for p in range(min(20, partitions))
            ]
            for n in range(groups)
        },
    )


def produce(bootstrap: str, topics: list[str], stop: threading.Event) -> None:
    """Live traffic: 200 messages a second over the topics, through every restart."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    sent = 0
    while not stop.wait(0.1):
        for _ in range(20):
            try:
                producer.produce(topics[sent % len(topics)], b"{}")
            except BufferError:
                break
            sent += 1
        producer.poll(0)
    producer.flush(10)


def quorum_leader(bootstrap: str) -> int:
    client = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=10_000)
    try:
        quorum = client.describe_metadata_quorum()
    finally:
        client.close()
    return int(quorum["topics"][0]["partitions"][0]["leader_id"])


def wait_in_sync(bootstrap: str, timeout: float) -> float:
    """Seconds until every partition has all its replicas in sync (bounded by `timeout`)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        try:
            metadata = admin.list_topics(timeout=10)
        except Exception:  # a node just started: ask again
            time.sleep(1)
            continue
        behind = sum(
            1
            for t in metadata.topics.values()
            for p in t.partitions.values()
            if set(p.isrs) != set(p.replicas)
        )
        if behind == 0 and set(metadata.brokers) == set(NODES):
            break
        time.sleep(1)
    return time.monotonic() - began


@contextmanager
def exporter(bootstrap: str, workdir: Path, interval: float) -> Iterator[tuple[str, LoggedProcess]]:
    port = free_port()

    def allow_cores() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        os.chdir(workdir)  # core_pattern `core` writes into the working directory

    env = {**os.environ, "PYTHONFAULTHANDLER": "1", "VIGIA_LOG_LEVEL": "INFO"}
    argv = exporter_argv(bootstrap, port, "--collection-interval", str(interval))
    out = (workdir / "exporter.log").open("ab")
    process = subprocess.Popen(
        argv, stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=allow_cores
    )
    handle = LoggedProcess("exporter", argv, workdir / "exporter.log", env)
    handle._process = process  # reuse its stop-by-PID with a deadline
    try:
        yield f"http://127.0.0.1:{port}", handle
    finally:
        handle.stop(30)
        out.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temporary one)")
    parser.add_argument("--restarts", type=int, default=30, help="stops of non-controller brokers")
    parser.add_argument("--failovers", type=int, default=5, help="stops of the active controller")
    parser.add_argument("--down-seconds", type=float, default=30.0)
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--collection-interval", type=float, default=5.0)
    parser.add_argument("--in-sync-timeout", type=float, default=180.0)
    args = parser.parse_args()
    setup_logging("INFO")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per scrape otherwise
    # A stop by PID still stops the cluster and the exporter (the finally blocks below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="vigia-restarts-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = KafkaCluster(args.kafka_home, workdir / "kafka")
    stop = threading.Event()
    try:
        cluster.start_all()
        topics = [f"drill-{n}" for n in range(args.topics)]
        seed(cluster.bootstrap, topics, args.groups)
        threading.Thread(
            target=produce, args=(cluster.bootstrap, topics, stop), daemon=True
        ).start()
        log.info("cluster up at %s, workdir %s", cluster.bootstrap, workdir)
        drill(cluster, workdir, args)
    finally:
        stop.set()
        cluster.close()


def drill(cluster: KafkaCluster, workdir: Path, args: argparse.Namespace) -> None:
    scrapes = Scrapes()
    stop = threading.Event()
    restarts = failovers = 0
    with exporter(cluster.bootstrap, workdir, args.collection_interval) as (url, process):
        scraper = threading.Thread(target=scrape_loop, args=(url, stop, scrapes), daemon=True)
        time.sleep(3)
        scraper.start()
        time.sleep(2 * args.collection_interval)
        plan = ["broker"] * args.restarts + ["controller"] * args.failovers
        others = itertools.cycle(NODES)
        try:
            for step, kind in enumerate(plan, 1):
                if not process.running:
                    break
                leader = quorum_leader(cluster.bootstrap)
                node = leader if kind == "controller" else next(n for n in others if n != leader)
                log.info("step %d/%d: stopping %s %d", step, len(plan), kind, node)
                cluster.stop(node)
                time.sleep(args.down_seconds)
                cluster.start(node, timeout=600)  # a loaded machine: minutes
                restarts += kind == "broker"
                failovers += kind == "controller"
                synced = wait_in_sync(cluster.bootstrap, args.in_sync_timeout)
                log.info("node %d back, every replica in sync %.0f s later", node, synced)
            time.sleep(2 * args.collection_interval)
        finally:
            stop.set()
            scraper.join(10)
            alive = process.running
    code = None if alive else process._process.returncode
    cores = sorted(str(p) for p in workdir.glob("core*"))
    print(
        f"restarts {restarts}, controller failovers {failovers}, exporter alive "
        f"{'yes' if alive else f'no (exit status {code})'}"
    )
    print(
        f"longest scrape gap {Scrapes.longest_gap(scrapes.times):.1f} s, longest collection gap "
        f"{Scrapes.longest_gap(scrapes.collections):.1f} s (collection interval "
        f"{args.collection_interval:g} s), failed scrapes {scrapes.failed}"
    )
    print(f"up 0 in {len(scrapes.down)} of {len(scrapes.times)} scrapes")
    for when, why in scrapes.down[:20]:
        print(f"  up 0 at +{when:.0f} s: {why}")
    if cores:
        print(f"core dumps: {cores}")
    print(f"exporter log: {workdir / 'exporter.log'}")


if __name__ == "__main__":
    main()
