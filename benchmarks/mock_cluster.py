"""librdkafka's mock cluster in a child process, filled with topics, one message per partition and
consumer groups' commits, so that a benchmark's process CPU time is the exporter's alone.

The mock auto-creates topics of 4 partitions on first produce, lacks ListGroups and never answers
DescribeConfigs; `MockGapsAdmin` lists the groups it was told about, names each group's partitions
in OffsetFetch (the mock answers "all topics" empty), as a real broker would answer, and fails
DescribeConfigs at once.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupListing, ListConsumerGroupsResult

MOCK_PARTITIONS_PER_TOPIC = 4  # the mock's default for auto-created topics


@dataclass(frozen=True)
class MockShape:
    brokers: int
    topics: int  # of MOCK_PARTITIONS_PER_TOPIC partitions each
    groups: int
    topics_per_group: int  # group g commits every partition of topics g·k … g·k + k − 1 (mod)

    def group_topics(self) -> dict[str, list[str]]:
        k = self.topics_per_group
        return {
            f"group-{g:03d}": [f"topic-{(g * k + i) % self.topics:05d}" for i in range(k)]
            for g in range(self.groups)
        }


def _serve(shape: MockShape, conn: multiprocessing.connection.Connection) -> None:
    from confluent_kafka import Consumer, Producer

    cluster = Producer({"test.mock.num.brokers": shape.brokers, "log_level": 3, "linger.ms": 50})
    metadata = cluster.list_topics(timeout=10)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values())
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "log_level": 3})
    for t in range(shape.topics):
        for p in range(MOCK_PARTITIONS_PER_TOPIC):
            producer.produce(f"topic-{t:05d}", b"{}", partition=p)
            producer.poll(0)
    producer.flush(120)
    for group, topics in shape.group_topics().items():
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
        offsets = [
            TopicPartition(t, p, 0) for t in topics for p in range(MOCK_PARTITIONS_PER_TOPIC)
        ]
        consumer.commit(offsets=offsets, asynchronous=False)
        consumer.close()
    conn.send(bootstrap)
    conn.recv()  # until the parent says stop
    del producer, cluster


@contextmanager
def mock_cluster(shape: MockShape) -> Iterator[str]:
    """The bootstrap servers of a filled mock cluster running in a child process."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(shape, child), daemon=True)
    process.start()
    try:
        if not parent.poll(600):
            raise TimeoutError("the mock cluster was not ready within 600 s")
        yield parent.recv()
    finally:
        parent.send("stop")
        process.join(timeout=30)
        if process.is_alive():
            process.kill()


class MockGapsAdmin(AdminClient):  # type: ignore[misc]
    """The real AdminClient, with the mock's two gaps filled (see the module docstring)."""

    def __init__(self, config: Mapping[str, Any], groups: Mapping[str, list[str]]) -> None:
        super().__init__(dict(config))
        self._groups = groups

    def describe_configs(self, resources: list[Any], **kwargs: Any) -> dict[Any, Future[Any]]:
        """The mock never answers DescribeConfigs; a real broker answers at once."""
        futures: dict[Any, Future[Any]] = {}
        for resource in resources:
            futures[resource] = Future()
            futures[resource].set_exception(
                KafkaException(KafkaError(KafkaError._UNSUPPORTED_FEATURE))
            )
        return futures

    def list_consumer_groups(self, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        listing = [ConsumerGroupListing(g, False) for g in self._groups]
        future.set_result(ListConsumerGroupsResult(listing))
        return future

    def list_consumer_group_offsets(
        self, requests: list[Any], **kwargs: Any
    ) -> dict[str, Future[Any]]:
        named = [
            ConsumerGroupTopicPartitions(
                r.group_id,
                [
                    TopicPartition(t, p)
                    for t in self._groups[r.group_id]
                    for p in range(MOCK_PARTITIONS_PER_TOPIC)
                ],
            )
            for r in requests
        ]
        return super().list_consumer_group_offsets(named, **kwargs)  # type: ignore[no-any-return]
