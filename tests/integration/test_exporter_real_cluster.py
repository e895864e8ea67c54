"""The exporter against a real Kafka cluster (VIGIA_TEST_KAFKA_BOOTSTRAP_SERVERS), checked against
the cluster's own answers. Creates topics and consumer groups named vigia-it-<random> (the probe
tests let the exporter create its probe topic under such a name) and deletes them at the end;
everything else is only read. The exporters of the other tests run with --no-probe, so that they
create nothing.

Written for a shared, busy cluster: other tenants create and delete topics and groups, producers
are live, the machine is loaded. So values are compared with the cluster's answers taken before
the collection that is read started (its `collected_at` in /api/v1/cluster) and after it was
served, only topics that existed throughout are compared, and every condition is waited for with
a deadline instead of being checked once. Brokers that stop and return:
tests/integration/test_broker_restarts_real_cluster.py.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    ClusterMetadata,
    ConfigResource,
    OffsetSpec,
    ResourceType,
)

from tests.exporter.exposition import Samples, value
from tests.exporter.live import Running, exporter_process, wait_for
from tests.realstack.topics import create_topic

pytestmark = pytest.mark.integration

PARTITIONS = 3
MESSAGES = 300
CONSUMED = 120
# A loaded machine and a busy cluster: generous deadlines, never a single look.
DEADLINE = 240.0


@pytest.fixture
def admin(real_kafka_bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": real_kafka_bootstrap})


@pytest.fixture
def scratch_topic(admin: AdminClient, real_kafka_bootstrap: str) -> Iterator[str]:
    """A topic with MESSAGES messages and a group that committed CONSUMED of them."""
    name = f"vigia-it-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka_bootstrap, name, PARTITIONS)
    try:
        producer = Producer({"bootstrap.servers": real_kafka_bootstrap, "acks": "all"})
        for i in range(MESSAGES):
            producer.produce(name, key=str(i), value=b"{}")
        assert producer.flush(30) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": real_kafka_bootstrap,
                "group.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        try:
            _read(consumer, name, lambda seen: len(seen) >= CONSUMED)
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
        yield name  # also the group's name
    finally:
        admin.delete_topics([name], request_timeout=30)[name].result(timeout=30)
        for future in admin.delete_consumer_groups([name], request_timeout=30).values():
            future.result(timeout=30)


def _read(consumer: Consumer, topic: str, enough: Callable[[set[tuple[int, int]]], bool]) -> None:
    """Subscribes and polls until the (partition, offset) pairs read are `enough`: a new group's
    first poll on a busy cluster waits for the group to form, seconds at times."""
    consumer.subscribe([topic])
    seen: set[tuple[int, int]] = set()
    give_up = time.monotonic() + DEADLINE
    while not enough(seen):
        assert time.monotonic() < give_up, f"read {len(seen)} messages in {DEADLINE:g} s"
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.add((msg.partition(), msg.offset()))


@pytest.fixture
def exporter(real_kafka_bootstrap: str, tmp_path: Path) -> Iterator[Running]:
    args = ("--bootstrap-servers", real_kafka_bootstrap, "--collection-interval", "2")
    with exporter_process(
        tmp_path / "exporter.log", *args, "--collection-timeout", "15", "--no-probe"
    ) as running:
        yield running


def _scrape_when_up(exporter: Running, started_after: float = 0.0) -> Samples:
    """/metrics of a fully successful collection that started after `started_after` (unix s).

    /metrics serves the last completed collection, which may have started before a value the
    test read: wait until /api/v1/cluster's `collected_at` is later, then scrape (the scrape
    serves that collection or a newer one)."""

    def up() -> Samples | None:
        doc = exporter.get("/api/v1/cluster")
        if doc.status_code != 200 or doc.json()["collected_at"] <= started_after:
            return None
        found = exporter.metrics()
        return found if value(found, "vigia_exporter_up") == 1 else None

    try:
        found = wait_for(up, DEADLINE, "a complete collection (vigia_exporter_up 1)")
    except AssertionError:
        errors = exporter.get("/api/v1/cluster").json().get("errors")
        raise AssertionError(f"exporter never fully succeeded: {errors}") from None
    assert isinstance(found, dict)
    return found


def _latest_and_earliest(
    admin: AdminClient, tps: list[TopicPartition]
) -> tuple[dict[Any, int], dict[Any, int]]:
    latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=30)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest() for tp in tps}, request_timeout=30)
    return (
        {(tp.topic, tp.partition): f.result(30).offset for tp, f in latest.items()},
        {(tp.topic, tp.partition): f.result(30).offset for tp, f in earliest.items()},
    )


def _lasting_topics(before: Any, after: Any) -> dict[str, Any]:
    """Topics that existed with the same partitions before and after: other tenants create and
    delete topics while the test looks."""
    return {
        name: tm
        for name, tm in after.topics.items()
        if name in before.topics and set(before.topics[name].partitions) == set(tm.partitions)
    }


def test_topology_and_offsets_match_the_cluster(exporter: Running, admin: AdminClient) -> None:
    before = admin.list_topics(timeout=10)
    tps = [TopicPartition(t, p) for t, tm in before.topics.items() for p in tm.partitions]
    latest_before, _ = _latest_and_earliest(admin, tps)
    found = _scrape_when_up(exporter, started_after=time.time())
    after = admin.list_topics(timeout=10)
    latest_after, earliest_after = _latest_and_earliest(admin, tps)

    if set(before.brokers) == set(after.brokers):
        assert value(found, "kafka_brokers") == len(after.brokers)
        for b in after.brokers.values():
            infos = [k for (n, k) in found if n == "kafka_broker_info" and k["id"] == str(b.id)]
            assert [k["address"] for k in infos] == [f"{b.host}:{b.port}"]
            assert value(found, "kafka_broker_up", broker=str(b.id)) == 1
    stable = 0
    lasting = _lasting_topics(before, after)
    assert lasting, "no topic lasted through the test"
    for name, tm in lasting.items():
        assert value(found, "kafka_topic_partitions", topic=name) == len(tm.partitions)
        for p in tm.partitions.values():
            labels = {"topic": name, "partition": str(p.id)}
            old = before.topics[name]
            if old.partitions[p.id].leader != p.leader:
                continue  # leadership moved while we looked: nothing to compare
            stable += 1
            assert value(found, "kafka_topic_partition_leader", **labels) == p.leader
            assert value(found, "kafka_topic_partition_replicas", **labels) == len(p.replicas)
            if sorted(old.partitions[p.id].isrs) == sorted(p.isrs):  # ISR unchanged meanwhile
                assert value(found, "kafka_topic_partition_in_sync_replica", **labels) == len(
                    p.isrs
                )
                for r in p.replicas:
                    in_sync = value(
                        found, "kafka_partition_replica_in_sync", broker=str(r), **labels
                    )
                    assert in_sync == int(r in p.isrs)
            current = value(found, "kafka_topic_partition_current_offset", **labels)
            key = (name, p.id)
            assert current is not None and latest_before[key] <= current <= latest_after[key]
            assert (
                value(found, "kafka_topic_partition_oldest_offset", **labels) <= earliest_after[key]
            )
    assert stable > 0

    def with_leader(metadata: Any) -> int:
        return sum(
            1 for tm in metadata.topics.values() for p in tm.partitions.values() if p.leader >= 0
        )

    leaders = sum(v for (n, _), v in found.items() if n == "kafka_broker_leader_partitions")
    if with_leader(before) == with_leader(after):  # no topic came or went meanwhile
        assert leaders == with_leader(after)


def test_controller_is_the_quorum_leader(exporter: Running, real_kafka_bootstrap: str) -> None:
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=real_kafka_bootstrap.split(","))
    try:
        quorum = client.describe_metadata_quorum()
    finally:
        client.close()
    leader = quorum["topics"][0]["partitions"][0]["leader_id"]
    found = _scrape_when_up(exporter, started_after=time.time())
    (info,) = [k for (n, k) in found if n == "kafka_cluster_info"]
    assert info["controller_id"] == str(leader)  # a quorum election meanwhile would be news
    assert exporter.get("/api/v1/cluster").json()["cluster"]["controller_source"] == "quorum"


def test_sizes_and_min_isr_match_the_cluster(exporter: Running, admin: AdminClient) -> None:
    before = admin.list_topics(timeout=10)
    found = _scrape_when_up(exporter, started_after=time.time())
    metadata = admin.list_topics(timeout=10)
    for b in set(before.brokers) & set(metadata.brokers):
        dirs = [
            k
            for (n, k) in found
            if n == "kafka_broker_log_dir_size_bytes" and k["broker"] == str(b)
        ]
        assert dirs, f"no log dir reported for broker {b}"
    lasting = _lasting_topics(before, metadata)
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in lasting]
    configs = {}
    for r, f in admin.describe_configs(resources, request_timeout=30).items():
        try:
            configs[r.name] = f.result(30)
        except KafkaException as exc:  # deleted by another tenant since
            assert exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, exc
    for name, tm in lasting.items():
        if name not in configs:
            continue
        min_isr = int(configs[name]["min.insync.replicas"].value)
        for p in tm.partitions.values():
            labels = {"topic": name, "partition": str(p.id)}
            old = before.topics[name]
            if sorted(old.partitions[p.id].isrs) == sorted(p.isrs):
                expected = int(len(p.isrs) < min_isr)
                assert value(found, "kafka_topic_partition_under_min_isr", **labels) == expected
            for r in p.replicas:
                if r in metadata.brokers:
                    size = value(
                        found, "kafka_partition_replica_size_bytes", broker=str(r), **labels
                    )
                    assert size is not None and size >= 0


def _committed(admin: AdminClient, group: str) -> dict[int, int]:
    (future,) = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=30
    ).values()
    return {tp.partition: tp.offset for tp in future.result(30).topic_partitions if tp.offset >= 0}


def test_group_lag(exporter: Running, scratch_topic: str, real_kafka_bootstrap: str) -> None:
    """docs/lag.md: a partition the group has not committed counts its whole backlog as lag
    while a live member owns it, and is only reported as uncommitted while none does."""
    topic = group = scratch_topic
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap})
    committed = _committed(admin, group)
    assert sum(committed.values()) == CONSUMED
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    latest, earliest = _latest_and_earliest(admin, tps)  # nothing writes to the scratch topic
    assert sum(latest.values()) == MESSAGES and set(earliest.values()) == {0}
    committed_lag = sum(latest[(topic, p)] - c for p, c in committed.items())
    uncommitted = PARTITIONS - len(committed)
    labels = {"consumergroup": group, "topic": topic}

    def scrape() -> Samples:
        return exporter.metrics()

    # Empty group (its consumer closed): the uncommitted partitions are reported, not lag.
    found = wait_for(
        lambda: (
            (m := scrape())
            and value(m, "kafka_consumergroup_lag_sum", **labels) == committed_lag
            # No series for a group that committed every partition.
            and (value(m, "kafka_consumergroup_uncommitted_partitions", **labels) or 0)
            == uncommitted
            and m
        ),
        DEADLINE,
        f"lag {committed_lag} and {uncommitted} uncommitted partition(s)",
    )
    assert isinstance(found, dict)
    assert value(found, "kafka_consumergroup_current_offset_sum", **labels) == CONSUMED
    assert value(found, "kafka_consumergroup_members", consumergroup=group) == 0
    assert (
        value(found, "kafka_consumergroup_info", consumergroup=group, state="EMPTY", protocol="")
        == 1
    )
    offsets = sum(
        v
        for (n, k), v in found.items()
        if n == "kafka_topic_partition_current_offset" and k["topic"] == topic
    )
    assert offsets == MESSAGES
    (entry,) = [
        g for g in exporter.get("/api/v1/cluster").json()["groups"] if g["group_id"] == group
    ]
    (summary,) = entry["topics"]
    assert (summary["lag"], summary["uncommitted_partitions"]) == (committed_lag, uncommitted)
    assert summary["committed_offset_sum"] == CONSUMED
    # Unknown on the first collection that saw this lag, an age in seconds afterwards.
    assert summary["max_lag_seconds"] is None or summary["max_lag_seconds"] >= 0

    # A live member joins and owns every partition without committing: the whole backlog of the
    # uncommitted ones is lag now, so the group has MESSAGES - CONSUMED left, as it really has.
    stop = threading.Event()

    def member() -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": real_kafka_bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([topic])
        while not stop.is_set():
            consumer.poll(0.5)
        consumer.close()

    thread = threading.Thread(target=member, daemon=True)
    thread.start()
    try:
        wait_for(
            lambda: (
                (m := scrape())
                and value(m, "kafka_consumergroup_members", consumergroup=group) == 1
                and value(m, "kafka_consumergroup_lag_sum", **labels) == MESSAGES - CONSUMED
            ),
            DEADLINE,
            f"a live member and lag {MESSAGES - CONSUMED}",
        )
    finally:
        stop.set()
        thread.join(timeout=60)


def test_deleted_topic_vanishes(
    exporter: Running, admin: AdminClient, real_kafka_bootstrap: str
) -> None:
    name = f"vigia-it-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka_bootstrap, name, 1, replication=1)
    try:
        wait_for(
            lambda: value(exporter.metrics(), "kafka_topic_partitions", topic=name) == 1,
            60,
            "the topic",
        )
    finally:
        admin.delete_topics([name], request_timeout=30)[name].result(timeout=30)
    wait_for(
        lambda: f'topic="{name}"' not in exporter.get("/metrics").text,
        DEADLINE,
        "the topic to vanish",
    )
    assert value(exporter.metrics(), "kafka_topic_partitions", topic=name) is None
    assert name not in {t["name"] for t in exporter.get("/api/v1/cluster").json()["topics"]}


def _delete_topic(admin: AdminClient, name: str) -> None:
    try:
        admin.delete_topics([name], request_timeout=30)[name].result(timeout=30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise


@pytest.fixture
def probe_topic(admin: AdminClient) -> Iterator[str]:
    """A fresh name for the exporter's probe topic, deleted afterwards."""
    name = f"vigia-it-probe-{uuid.uuid4().hex[:8]}"
    yield name
    _delete_topic(admin, name)


def test_probe_topic_has_one_leader_per_broker_and_replication_latency_for_each(
    real_kafka_bootstrap: str, admin: AdminClient, probe_topic: str, tmp_path: Path
) -> None:
    args = ("--bootstrap-servers", real_kafka_bootstrap, "--collection-timeout", "15")
    probe = ("--probe-topic", probe_topic, "--probe-interval", "1")
    with exporter_process(tmp_path / "exporter.log", *args, *probe) as exp:
        wait_for(lambda: value(exp.metrics(), "vigia_probe_up") == 1, DEADLINE, "the probe to run")

        def topic_known() -> ClusterMetadata | None:
            """Each broker applies the metadata log at its own pace: the one this client asks
            may not know the topic the exporter has just created through another yet."""
            metadata = admin.list_topics(probe_topic, timeout=10)
            known = metadata.topics[probe_topic].partitions
            return metadata if len(known) == len(metadata.brokers) else None

        metadata = wait_for(topic_known, DEADLINE, "every broker to know the probe topic")
        assert isinstance(metadata, ClusterMetadata)
        brokers = set(metadata.brokers)
        partitions = metadata.topics[probe_topic].partitions.values()
        assert {p.replicas[0] for p in partitions} == brokers  # preferred leaders
        assert {p.leader for p in partitions} == brokers  # one leader per broker
        assert {len(p.replicas) for p in partitions} == {min(3, len(brokers))}

        def every_broker_measured() -> Samples | None:
            """Three rounds read back and acknowledged both ways for every broker: on a loaded
            machine they complete at their own pace, so this is waited for, not checked once."""
            found = exp.metrics()
            for b in map(str, brokers):
                ok = value(found, "vigia_probe_messages_total", broker=b, outcome="ok") or 0
                replication = value(found, "vigia_probe_replication_latency_seconds", broker=b)
                counts = [
                    value(found, "vigia_probe_produce_latency_seconds_count", broker=b, acks=acks)
                    or 0
                    for acks in ("all", "1")
                ]
                if ok < 3 or replication is None or min(counts) < 3:
                    return None
            return found

        found = wait_for(every_broker_measured, DEADLINE, "three probe rounds for every broker")
        assert isinstance(found, dict)
        for b in map(str, brokers):
            assert 0 <= value(found, "vigia_probe_replication_latency_seconds", broker=b) < 5
            assert value(found, "vigia_probe_messages_total", broker=b, outcome="failed") == 0
        section = exp.get("/api/v1/cluster").json()["probe"]
        assert (section["status"], section["topic"]) == ("running", probe_topic)
        assert {b["broker"] for b in section["brokers"]} == brokers
    assert "created probe topic" in exp.log_text()


def test_a_group_that_stops_committing_while_producers_continue_turns_err_stop(
    real_kafka_bootstrap: str, admin: AdminClient, tmp_path: Path
) -> None:
    name = f"vigia-it-{uuid.uuid4().hex[:8]}"  # topic and group
    create_topic(real_kafka_bootstrap, name, PARTITIONS)
    stop = threading.Event()
    producer = Producer({"bootstrap.servers": real_kafka_bootstrap, "linger.ms": 5})

    def produce() -> None:
        while not stop.is_set():
            for p in range(PARTITIONS):
                producer.produce(name, value=b"{}", partition=p)
            producer.poll(0)
            stop.wait(0.1)
        producer.flush(30)

    writer = threading.Thread(target=produce, daemon=True)
    try:
        writer.start()
        consumer = Consumer(
            {
                "bootstrap.servers": real_kafka_bootstrap,
                "group.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        try:
            _read(consumer, name, lambda seen: {p for p, _ in seen} == set(range(PARTITIONS)))
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()  # stops committing; the producer goes on

        args = (
            "--bootstrap-servers",
            real_kafka_bootstrap,
            "--collection-interval",
            "1",
            "--collection-timeout",
            "15",
            "--lag-status-window",
            "3",
            "--no-probe",
            "--topic-include",
            f"^{name}$",
            "--group-include",
            f"^{name}$",
        )
        with exporter_process(tmp_path / "exporter.log", *args) as exp:
            wait_for(
                lambda: value(exp.metrics(), "kafka_consumergroup_status", consumergroup=name) == 3,
                DEADLINE,
                "the group to turn ERR",
            )
            found = exp.metrics()
            for p in range(PARTITIONS):
                labels = {"consumergroup": name, "topic": name, "partition": str(p)}
                assert value(found, "kafka_consumergroup_partition_status", **labels) == 3  # STOP
                seconds = value(found, "kafka_consumergroup_lag_seconds", **labels)
                assert seconds is not None and seconds > 0
            (group,) = [
                g for g in exp.get("/api/v1/cluster").json()["groups"] if g["group_id"] == name
            ]
            assert (group["state"], group["status"], group["status_window_completeness"]) == (
                "EMPTY",
                "ERR",
                1.0,
            )
            assert {(p["status"], p["status_window_complete"]) for p in group["partitions"]} == {
                ("STOP", True)
            }
    finally:
        stop.set()
        writer.join(timeout=60)
        _delete_topic(admin, name)
        for future in admin.delete_consumer_groups([name], request_timeout=30).values():
            future.result(timeout=30)
