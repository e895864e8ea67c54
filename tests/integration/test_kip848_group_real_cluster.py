"""Issue 20: a consumer group of Kafka 4's new protocol (KIP-848, `group.protocol=consumer`) on a
real cluster reads as what it is: type CONSUMER, state STABLE, its member and its assignment, its
lag, and a lag status that sees the live member. Described through the classic API (a client
older than confluent-kafka 2.16.1's floor in pyproject) such a group read as DEAD without
members, and its lag status turned STOP for a healthy group.

Written for a shared, busy cluster: a topic and group named vigia-it-kip848-<random>, deleted at
the end; the exporter is filtered to them; offsets are read from the cluster before the
collection that is checked; every wait has a deadline.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.exporter.exposition import value
from tests.exporter.live import exporter_process, wait_for
from tests.realstack.topics import create_topic

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 100
COMMITTED = 40  # per partition: 60 unread messages each
DEADLINE = 120.0  # any one condition, on a loaded machine
WINDOW = 3  # --lag-status-window: the status is judged within a few seconds


@pytest.fixture
def kip848_member(real_kafka_bootstrap: str) -> Iterator[tuple[str, Consumer]]:
    """(topic = group name, a live KIP-848 member owning every partition, having committed
    COMMITTED of each partition's PER_PARTITION messages)."""
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap})
    name = f"vigia-it-kip848-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka_bootstrap, name, PARTITIONS)
    consumer: Consumer | None = None
    try:
        producer = Producer({"bootstrap.servers": real_kafka_bootstrap, "acks": "all"})
        for p in range(PARTITIONS):
            for _ in range(PER_PARTITION):
                producer.produce(name, value=b"{}", partition=p)
        assert producer.flush(60) == 0
        # The new protocol's settings live on the broker: session.timeout.ms, heartbeat and
        # partition.assignment.strategy are refused client-side.
        consumer = Consumer(
            {
                "bootstrap.servers": real_kafka_bootstrap,
                "group.id": name,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([name])
        member = consumer

        def assigned() -> bool:
            member.poll(0.2)  # the assignment arrives through the poll loop
            return len(member.assignment()) == PARTITIONS

        wait_for(assigned, DEADLINE, "the broker to assign the KIP-848 member every partition")
        consumer.commit(
            offsets=[TopicPartition(name, p, COMMITTED) for p in range(PARTITIONS)],
            asynchronous=False,
        )
        yield name, consumer
    finally:
        if consumer is not None:
            consumer.close()
        admin.delete_topics([name], request_timeout=30)[name].result(timeout=60)
        _delete_group(admin, name)


def _delete_group(admin: AdminClient, name: str) -> None:
    """Deleted once the member's leave is applied (NON_EMPTY_GROUP until then)."""

    def deleted() -> bool:
        try:
            admin.delete_consumer_groups([name], request_timeout=10)[name].result(timeout=15)
        except KafkaException as exc:
            return "GROUP_ID_NOT_FOUND" in str(exc)  # never created if the commit failed
        return True

    wait_for(deleted, DEADLINE, f"group {name} to be deleted")


def _cluster_offsets(
    bootstrap: str, name: str, consumer: Consumer
) -> tuple[dict[int, int], dict[int, int]]:
    """(latest offset, committed offset) of each partition as the cluster reports them."""
    committed = {
        tp.partition: tp.offset
        for tp in consumer.committed(
            [TopicPartition(name, p) for p in range(PARTITIONS)], timeout=30
        )
    }
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{name}-watermarks"})
    try:
        latest = {
            p: reader.get_watermark_offsets(TopicPartition(name, p), timeout=30)[1]
            for p in range(PARTITIONS)
        }
    finally:
        reader.close()  # never subscribes nor commits: no group is created
    return latest, committed


def test_a_kip848_group_reads_as_consumer_stable_with_its_member_and_lag(
    real_kafka_bootstrap: str, kip848_member: tuple[str, Consumer], tmp_path: Path
) -> None:
    name, consumer = kip848_member
    latest, committed = _cluster_offsets(real_kafka_bootstrap, name, consumer)
    assert committed == dict.fromkeys(range(PARTITIONS), COMMITTED)
    assert latest == dict.fromkeys(range(PARTITIONS), PER_PARTITION)
    read_at = time.time()
    only = f"^{name}$"
    args: tuple[str, ...] = ("--bootstrap-servers", real_kafka_bootstrap, "--no-probe")
    args += ("--topic-include", only, "--group-include", only)
    args += ("--collection-interval", "1", "--collection-timeout", "15")
    args += ("--lag-status-window", str(WINDOW))
    with exporter_process(tmp_path / "exporter.log", *args) as exporter:

        def judged() -> dict[str, Any] | None:
            """The group once a collection after the read judged every partition's status
            on a full window."""
            doc = exporter.get("/api/v1/cluster").json()
            if (doc.get("collected_at") or 0) <= read_at:
                return None
            found = [g for g in doc["groups"] if g["group_id"] == name]
            if found and found[0]["status_window_completeness"] == 1.0:
                return {**found[0], "up": doc["up"], "errors": doc["errors"]}
            return None

        group = wait_for(judged, DEADLINE, "a full status window of the KIP-848 group")
        assert isinstance(group, dict)
        metrics = exporter.metrics()

    assert group["up"] is True
    assert [e for e in group["errors"] if e["phase"].startswith("group")] == []
    assert (group["type"], group["state"], group["denied"]) == ("CONSUMER", "STABLE", [])
    # The new protocol's assignors run on the broker: uniform unless the member asks otherwise.
    assert group["protocol"] == "uniform"
    (member,) = group["members"]
    assert member["assignment"] == [{"topic": name, "partition": p} for p in range(PARTITIONS)]
    lags = {p["partition"]: p["lag"] for p in group["partitions"]}
    assert lags == {p: latest[p] - committed[p] for p in range(PARTITIONS)}
    # A live member owns every partition and commits nothing new: STALL, never STOP (which says
    # nobody consumes; what a group read as DEAD without members got).
    assert {p["status"] for p in group["partitions"]} == {"STALL"}
    for p in range(PARTITIONS):
        labels = {"consumergroup": name, "topic": name, "partition": str(p)}
        assert value(metrics, "kafka_consumergroup_lag", **labels) == latest[p] - committed[p]
        assert value(metrics, "kafka_consumergroup_partition_status", **labels) == 4  # STALL
    assert value(metrics, "kafka_consumergroup_members", consumergroup=name) == 1
    info = {"consumergroup": name, "state": "STABLE", "protocol": "uniform"}
    assert value(metrics, "kafka_consumergroup_info", **info) == 1
    assert value(metrics, "vigia_exporter_up") == 1
