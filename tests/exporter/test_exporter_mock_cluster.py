"""End to end against librdkafka's mock cluster: the real adapter, loop and HTTP server.

The mock speaks the Kafka protocol on loopback but lacks several admin APIs (DescribeConfigs,
ListGroups and DescribeGroups are unsupported, kafka-python cannot bootstrap from it, so neither
DescribeCluster, DescribeQuorum nor DescribeLogDirs can be asked; OffsetFetch ignores "all
topics"). The exporter reports those as capabilities the cluster lacks, with up 1; where a test
needs group data, a thin wrapper (benchmarks/mock_cluster.py) fills only the mock's gaps and
still sends the real OffsetFetch.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from benchmarks.mock_cluster import MockGapsAdmin
from tests.conftest import MockCluster, free_port, start_mock_cluster
from tests.exporter.exposition import value
from tests.exporter.live import exporter_process, exporter_thread, tcp_proxy, wait_for
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters
from vigia.exporter.service import CollectionService

# What the mock lacks (DescribeGroups is asked about the ingest job's group, which the exporter
# names itself: ListGroups finds none).
MOCK_CAPABILITIES = {
    "describe_cluster": 0,
    "describe_quorum": 0,
    "describe_configs": 0,
    "describe_groups": 0,
    "describe_log_dirs": 0,
    "list_groups": 0,
}
FAST = ("--collection-interval", "0.5", "--collection-timeout", "1.5")


def _produce(bootstrap: str, topic: str, count: int) -> Counter[int]:
    """Messages delivered per partition."""
    delivered: Counter[int] = Counter()

    def on_delivery(err: object, msg: Any) -> None:
        assert err is None, err
        delivered[msg.partition()] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=f"meter-{i % 97}", value=b"{}", on_delivery=on_delivery)
    assert producer.flush(30) == 0
    return delivered


def _offsets(found: Mapping[Any, float], topic: str) -> dict[int, float]:
    return {
        int(labels["partition"]): v
        for (name, labels), v in found.items()
        if name == "kafka_topic_partition_current_offset" and labels["topic"] == topic
    }


def test_exporter_process_against_the_mock_cluster(tmp_path: Path) -> None:
    cluster: MockCluster | None = start_mock_cluster()
    assert cluster is not None
    bootstrap = cluster.bootstrap_servers
    delivered = _produce(bootstrap, "readings", 400)
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    leaders = {p.id: p.leader for p in metadata.topics["readings"].partitions.values()}

    with exporter_process(
        tmp_path / "exporter.log", "--bootstrap-servers", bootstrap, *FAST
    ) as exp:
        # kafka-python's first failed bootstrap is a failure, the second makes it a capability.
        found = wait_for(
            lambda: (
                _offsets(m := exp.metrics(), "readings")
                and value(m, "vigia_exporter_up") == 1
                and m
            ),
            what="offsets and up 1",
        )
        assert isinstance(found, dict)
        assert _offsets(found, "readings") == dict(delivered)
        assert value(found, "kafka_brokers") == 3
        assert value(found, "kafka_topic_partitions", topic="readings") == len(leaders)
        for partition, leader in leaders.items():
            labels = {"topic": "readings", "partition": str(partition)}
            assert value(found, "kafka_topic_partition_leader", **labels) == leader
            assert value(found, "kafka_topic_partition_oldest_offset", **labels) == 0
            assert value(found, "kafka_topic_partition_in_sync_replica", **labels) == 3
        capabilities = {
            labels["capability"]: v
            for (name, labels), v in found.items()
            if name == "vigia_exporter_capability"
        }
        assert capabilities == MOCK_CAPABILITIES
        assert value(found, "kafka_topic_partition_under_min_isr", topic="readings") is None
        assert all(value(found, "kafka_broker_up", broker=b) == 1 for b in ("1", "2", "3"))

        # More traffic: the next collections see it, as offsets and as a rate.
        more = _produce(bootstrap, "readings", 300)
        expected = {p: delivered[p] + more[p] for p in delivered | more}
        wait_for(lambda: _offsets(exp.metrics(), "readings") == expected, what="new offsets")

        # A rate is the increase between two collections, 0.5 s apart: a burst shows in one or
        # two of them, which a scrape on a loaded machine can miss. Traffic goes on until one is
        # caught.
        def rate_while_producing() -> object:
            more.update(_produce(bootstrap, "readings", 10))
            return value(exp.metrics(), "kafka_topic_messages_in_per_second", topic="readings")

        rate = wait_for(rate_while_producing, what="a non-zero rate")
        assert isinstance(rate, float) and rate > 0

        def cluster_with_every_message() -> dict[str, Any] | None:
            doc: dict[str, Any] = exp.get("/api/v1/cluster").json()
            readings = next(t for t in doc["topics"] if t["name"] == "readings")
            total = sum(p["latest_offset"] for p in readings["partitions"])
            return doc if total == sum(delivered.values()) + sum(more.values()) else None

        doc = wait_for(cluster_with_every_message, what="every message in /api/v1/cluster")
        assert isinstance(doc, dict)
        # The mock has no controller: its Metadata says 0, which is none of its brokers.
        assert doc["cluster"]["controller_id"] is None
        assert doc["errors"] == [] and doc["capabilities"] == {
            k: bool(v) for k, v in sorted(MOCK_CAPABILITIES.items())
        }
        assert exp.get("/readyz").json() == {"ready": True, "up": True}

        # ISR history from successive collections: all in sync, nothing shrank.
        found = exp.metrics()
        for partition in leaders:
            for broker in ("1", "2", "3"):
                labels = {"topic": "readings", "partition": str(partition), "broker": broker}
                assert value(found, "kafka_partition_replica_out_of_sync_seconds", **labels) == 0
        for broker in ("1", "2", "3"):
            assert value(found, "kafka_broker_isr_shrinks_total", broker=broker) == 0

        # The mock cannot create topics: the probe is off, says why, and the rest works.
        off = "end-to-end probe off: cannot create probe topic 'vigia-probe'"
        wait_for(lambda: off in exp.log_text(), what="the probe-off log line")
        assert value(exp.metrics(), "vigia_probe_up") == 0
        status = exp.get("/api/v1/cluster").json()["probe"]["status"]
        assert status.startswith("off: cannot create probe topic 'vigia-probe'")

        # The whole cluster goes away: collection keeps running, Kafka families vanish, up 0.
        cluster = None
        gc.collect()
        wait_for(lambda: value(exp.metrics(), "kafka_brokers") is None, what="brokers to vanish")
        gone = exp.metrics()
        assert not any(name.startswith("kafka_topic") for name, _ in gone)
        assert (value(gone, "vigia_exporter_collection_errors_total", phase="metadata") or 0) >= 1
    log = exp.log_text()
    for capability in MOCK_CAPABILITIES:  # once each, however many collections ran
        assert log.count(f"the cluster does not support {capability} (") == 1
    assert "blocking the event loop" not in log
    assert "cannot collect from Kafka at" in log and "retrying in" in log


def test_unreachable_bootstrap_at_start_then_the_cluster_appears(tmp_path: Path) -> None:
    cluster = start_mock_cluster()
    first_broker = cluster.bootstrap_servers.split(",")[0]
    port = free_port()  # nothing listens here yet
    options = ("--kafka-option", "reconnect.backoff.max.ms=500")
    args = ("--bootstrap-servers", f"127.0.0.1:{port}", *options, *FAST)
    with exporter_process(tmp_path / "exporter.log", *args) as exp:
        wait_for(
            lambda: value(
                exp.metrics(), "vigia_exporter_collection_errors_total", phase="metadata"
            ),
            what="a failed collection",
        )
        down = exp.metrics()
        assert value(down, "vigia_exporter_up") == 0
        assert value(down, "kafka_brokers") is None
        assert exp.get("/api/v1/cluster").json()["errors"][0]["phase"] == "metadata"
        wait_for(lambda: "retrying in" in exp.log_text(), what="the retry log line")
        assert f"cannot collect from Kafka at 127.0.0.1:{port}" in exp.log_text()

        with tcp_proxy(port, first_broker):  # the cluster "appears" on the bootstrap address
            wait_for(lambda: value(exp.metrics(), "kafka_brokers") == 3, 60, "recovery")
            wait_for(lambda: "Kafka reachable again" in exp.log_text(), what="the recovery log")
    del cluster


def test_consumer_group_lag_end_to_end(mock_cluster: MockCluster) -> None:
    bootstrap = mock_cluster.bootstrap_servers
    delivered = _produce(bootstrap, "orders", 200)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "billing",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    adapter = KafkaAdapter(
        bootstrap,
        {},
        Filters(),
        admin_factory=lambda config: MockGapsAdmin(config, {"billing": ["orders"]}),
    )
    # Each collection is served for 2 s: long enough for a scrape on a loaded machine to catch
    # the one whose rate shows the commit.
    service = CollectionService(adapter.collect, interval=2, timeout=1.5, lag_status_window=2)
    try:
        consumer.subscribe(["orders"])
        read = 0
        while read < 120:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                read += 1
        consumer.commit(asynchronous=False)
        committed = {
            tp.partition: tp.offset
            for tp in consumer.committed(
                [TopicPartition("orders", p) for p in delivered], timeout=10
            )
            if tp.offset >= 0
        }
        expected_lag = {p: delivered[p] - committed[p] for p in committed}

        with exporter_thread(service) as exp:

            def lags() -> dict[int, float]:
                return {
                    int(labels["partition"]): v
                    for (name, labels), v in exp.metrics().items()
                    if name == "kafka_consumergroup_lag" and labels["consumergroup"] == "billing"
                }

            wait_for(lambda: lags() == expected_lag, what=f"lag {expected_lag}")
            found = exp.metrics()
            assert value(
                found, "kafka_consumergroup_lag_sum", consumergroup="billing", topic="orders"
            ) == sum(expected_lag.values())
            assert value(
                found,
                "kafka_consumergroup_current_offset_sum",
                consumergroup="billing",
                topic="orders",
            ) == sum(committed.values())
            # Committed offsets fail only in the collection in which kafka-python, which cannot
            # connect to the mock, is still expected: librdkafka's OffsetFetch is used only after.
            assert value(
                found, "vigia_exporter_collection_errors_total", phase="group_offsets"
            ) == value(found, "vigia_exporter_collection_errors_total", phase="cluster")
            # The mock does not support DescribeGroups: no member info, and not an error.
            assert value(found, "vigia_exporter_capability", capability="describe_groups") == 0
            assert value(found, "vigia_exporter_capability", capability="list_groups") == 1
            assert value(found, "kafka_consumergroup_members", consumergroup="billing") is None
            assert value(found, "vigia_exporter_collection_errors_total", phase="groups") == 0

            def per_partition(name: str) -> dict[int, float]:
                return {
                    int(labels["partition"]): v
                    for (n, labels), v in exp.metrics().items()
                    if n == name and labels["consumergroup"] == "billing"
                }

            # From the second collection with this lag on: its age in seconds, and a status.
            seconds = wait_for(
                lambda: (
                    (s := per_partition("kafka_consumergroup_lag_seconds")).keys()
                    == expected_lag.keys()
                    and s
                ),
                what="lag seconds",
            )
            assert isinstance(seconds, dict)
            assert all((v > 0) == (expected_lag[p] > 0) for p, v in seconds.items())
            wait_for(
                lambda: (
                    per_partition("kafka_consumergroup_partition_status").keys()
                    == expected_lag.keys()
                ),
                what="partition statuses",
            )
            assert value(exp.metrics(), "kafka_consumergroup_status", consumergroup="billing")

            # The consumer catches up and commits: lag drops to 0 on every partition, and the
            # consumed rate shows the commits.
            while read < 200:
                msg = consumer.poll(1.0)
                if msg is not None and msg.error() is None:
                    read += 1
            consumer.commit(asynchronous=False)

            # The collection that sees the commit has lag 0 and the only non-zero rate (the
            # increase since the collection before): both are read from one scrape, while that
            # collection is served (a collection interval).
            def caught_up_rate() -> float | None:
                found = exp.metrics()
                lag = [
                    v
                    for (name, labels), v in found.items()
                    if name == "kafka_consumergroup_lag" and labels["consumergroup"] == "billing"
                ]
                if set(lag) != {0}:
                    return None
                return value(
                    found,
                    "kafka_consumergroup_messages_consumed_per_second",
                    consumergroup="billing",
                    topic="orders",
                )

            rate = wait_for(caught_up_rate, what="lag 0 with a consumed rate")
            assert isinstance(rate, float) and rate > 0
            group = exp.get("/api/v1/cluster").json()["groups"][0]
            assert (group["group_id"], group["topics"][0]["lag"]) == ("billing", 0)
            # Caught up: 0 s everywhere and OK (rule 1: lag 0), whatever the window held before.
            assert set(per_partition("kafka_consumergroup_lag_seconds").values()) == {0}
            assert set(per_partition("kafka_consumergroup_partition_status").values()) == {1}
            assert value(exp.metrics(), "kafka_consumergroup_status", consumergroup="billing") == 1
            assert group["status"] == "OK" and group["topics"][0]["max_lag_seconds"] == 0
    finally:
        consumer.close()
        adapter.close()


def test_offsets_of_all_partitions_come_from_one_future_per_call(
    mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """confluent-kafka's list_offsets makes a future, and a threading.Condition, per partition:
    most of a collection's CPU at 2,000 partitions (issue 10). The adapter uses one per call."""
    bootstrap = mock_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for t in range(150):  # the mock creates topics of 4 partitions
        for p in range(4):
            producer.produce(f"t{t:03d}", b"{}", partition=p)
    assert producer.flush(30) == 0
    adapter = KafkaAdapter(
        bootstrap,
        {},
        Filters(),
        admin_factory=lambda config: MockGapsAdmin(config, {}),
        legacy_admin_factory=_no_legacy_admin,
    )
    created = 0
    real_init = Future.__init__

    def counting_init(self: Future[Any]) -> None:
        nonlocal created
        created += 1
        real_init(self)

    try:
        adapter.collect(10)  # connects and learns the metadata
        monkeypatch.setattr(Future, "__init__", counting_init)
        snap = adapter.collect(10)
    finally:
        monkeypatch.undo()
        adapter.close()
    offsets = {(t.name, p.partition): p.latest_offset for t in snap.topics for p in t.partitions}
    assert offsets == {(f"t{t:03d}", p): 1 for t in range(150) for p in range(4)}
    assert "offsets" not in snap.failed_phases
    # DescribeConfigs has one per topic (150); one per partition would be 1,200 more.
    assert created < 300, f"{created} futures for 600 partitions"


def _no_legacy_admin(config: Mapping[str, Any]) -> Any:
    raise RuntimeError("kafka-python cannot bootstrap from the mock")
