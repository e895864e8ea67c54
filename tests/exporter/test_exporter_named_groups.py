"""The ingest job's group is reported even where the cluster cannot list groups (librdkafka's
mock has no ListGroups and answers an OffsetFetch of "all topics" with none): the exporter names
the group, and its topic's partitions, itself."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.conftest import MockCluster
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters


def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
    try:
        partitions = [TopicPartition(topic, p, o) for p, o in offsets.items()]
        consumer.commit(offsets=partitions, asynchronous=False)
    finally:
        consumer.close()


def test_a_named_group_is_reported_with_its_offsets_though_the_cluster_lists_none(
    mock_cluster: MockCluster,
) -> None:
    bootstrap = mock_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    for partition in range(4):
        producer.produce("measure", b"{}", partition=partition)
    assert producer.flush(10) == 0
    _commit(bootstrap, "vigia-ingest", "measure", {0: 1, 2: 1})
    _commit(bootstrap, "someone-else", "measure", {1: 1})

    unnamed = KafkaAdapter(bootstrap, {}, Filters())
    named = KafkaAdapter(bootstrap, {}, Filters(), named_groups={"vigia-ingest": "measure"})
    try:
        assert unnamed.collect(timeout=10).groups == ()  # the mock lists no group
        # kafka-python cannot connect to the mock: its offsets come once it is found missing twice.
        for _ in range(2):
            named.collect(timeout=3)
        (group,) = named.collect(timeout=10).groups
    finally:
        unnamed.close()
        named.close()
    assert group.group_id == "vigia-ingest"
    assert group.committed is not None
    assert {(c.topic, c.partition, c.offset) for c in group.committed} == {
        ("measure", 0, 1),
        ("measure", 2, 1),
    }
