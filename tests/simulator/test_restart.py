"""vigia-simulate's manifest across broker trouble, on librdkafka's mock cluster driven through its
control API (`tests.rdkafka_mock`): what it counts as delivered is exactly what the topic holds.
The simulator runs as a child process, so a hang fails the test instead of freezing it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from tests.rdkafka_mock import PRODUCE, ControlledCluster, controlled_cluster, leaders
from vigia.ingest.simulator.manifest import Manifest, load_manifest

TOPIC = "measure"
PARTITIONS = 4
RUN_TIMEOUT_S = 120


@pytest.fixture
def cluster() -> Iterator[ControlledCluster]:
    with controlled_cluster() as found:
        found.create_topic(TOPIC, PARTITIONS)
        yield found


def simulate(cluster: ControlledCluster, manifest: Path, *extra: str) -> int:
    """Three days of 100 meters (115,200 measures) at 20,000 msg/s: about six seconds."""
    command = [
        sys.executable,
        "-m",
        "vigia.ingest.simulator.cli",
        "backfill",
        "--bootstrap-servers",
        cluster.bootstrap_servers,
        "--topic",
        TOPIC,
        "--start-date",
        "2026-11-01",
        "--days",
        "3",
        "--meters",
        "100",
        "--rate",
        "20000",
        "--manifest",
        str(manifest),
        "--metrics-port",
        "0",
        *extra,
    ]
    done = subprocess.run(command, timeout=RUN_TIMEOUT_S, capture_output=True, check=False)
    return done.returncode


def in_topic(cluster: ControlledCluster) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "count"})
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
            for p in range(PARTITIONS)
        )
    finally:
        consumer.close()


def later(delay_s: float, action: object) -> threading.Thread:
    def run() -> None:
        time.sleep(delay_s)
        action()  # type: ignore[operator]

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def check(manifest: Manifest, cluster: ControlledCluster) -> None:
    """Nothing counted is lost, nothing lost is counted."""
    assert manifest.produced == in_topic(cluster)


def test_backfill_delivers_everything_across_a_broker_restart(
    cluster: ControlledCluster, tmp_path: Path
) -> None:
    victim = leaders(cluster.bootstrap_servers, TOPIC)[0]

    def restart() -> None:
        cluster.broker_down(victim)
        time.sleep(1.5)
        spare = victim % cluster.brokers + 1
        for partition, leader in leaders(cluster.bootstrap_servers, TOPIC).items():
            if leader == victim:
                cluster.set_leader(TOPIC, partition, spare)
        time.sleep(2)
        cluster.broker_up(victim)

    chaos = later(1.0, restart)
    try:
        code = simulate(cluster, tmp_path / "m.json")
    finally:
        chaos.join()
    manifest = load_manifest(tmp_path / "m.json")
    assert (code, manifest.failed) == (0, 0)
    assert manifest.produced == 100 * 96 * 4 * 3 == in_topic(cluster)


def test_messages_outlasting_their_timeout_are_failed_not_counted(
    cluster: ControlledCluster, tmp_path: Path
) -> None:
    # The mock places leaders at random: with one broker leading all four partitions, nothing
    # could be delivered at all. Broker 1 leads partitions 0 and 3, brokers 2 and 3 the others.
    for partition in range(PARTITIONS):
        cluster.set_leader(TOPIC, partition, partition % cluster.brokers + 1)
    victim = 1
    cluster.broker_down(victim)  # and no new leader: its partitions cannot take anything
    try:
        code = simulate(cluster, tmp_path / "m.json", "--kafka-option", "message.timeout.ms=3000")
    finally:
        cluster.broker_up(victim)
    manifest = load_manifest(tmp_path / "m.json")
    assert code == 1 and manifest.failed > 0 and manifest.produced > 0
    assert manifest.produced + manifest.failed == 100 * 96 * 4 * 3
    check(manifest, cluster)


def test_a_fatal_producer_error_ends_the_run_with_its_manifest(
    cluster: ControlledCluster, tmp_path: Path
) -> None:
    """An idempotent producer that lost its sequence numbers cannot go on: the run stops (it used
    to wait forever for room in a queue nothing drained), and the manifest counts what got in."""
    chaos = later(
        1.0,
        lambda: cluster.push_errors(PRODUCE, *[KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER] * 5),
    )
    try:
        code = simulate(cluster, tmp_path / "m.json")
    finally:
        chaos.join()
    manifest = load_manifest(tmp_path / "m.json")
    assert code == 1 and manifest.failed > 0
    check(manifest, cluster)
