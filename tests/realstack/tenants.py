"""Other tenants on the test cluster, for the whole run: topics with a few hundred partitions, a
dozen groups that committed part of what is there (lag), a live producer and a live consumer.

Runs as its own process (`python -m tests.realstack.tenants BOOTSTRAP`), so that its clients ride
through the suites' broker restarts without sharing the test process, and stops on SIGTERM."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPICS = tuple(f"tenant-{i}" for i in range(8))
PARTITIONS = 40  # 320 partitions, 960 replicas
GROUPS = tuple(f"tenant-group-{i}" for i in range(12))
SEED_MESSAGES = 2_000  # per topic, before the groups commit half
RATE = 50  # messages per second from the live producer
_COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}


def seed(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=30).topics
    wanted = [NewTopic(t, PARTITIONS, 3) for t in TOPICS if t not in existing]
    for future in admin.create_topics(wanted, request_timeout=60).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    for topic in TOPICS:
        for i in range(SEED_MESSAGES):
            _produce(producer, topic, i)
    if producer.flush(120) != 0:
        raise RuntimeError("tenants: seed messages not delivered")
    for n, group in enumerate(GROUPS):
        topic = TOPICS[n % len(TOPICS)]
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        ends = [
            TopicPartition(
                topic,
                p,
                consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] // 2,
            )
            for p in range(PARTITIONS)
        ]
        _commit(consumer, ends)
        consumer.close()


def _commit(consumer: Consumer, offsets: list[TopicPartition]) -> None:
    """On a new cluster the first commits meet __consumer_offsets being created and its
    coordinators loading (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS): retriable, so retried."""
    give_up = time.monotonic() + 120
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.retriable() or error.code() in _COORDINATOR_MOVING):
                raise
            if time.monotonic() > give_up:
                raise
            time.sleep(0.5)


def _produce(producer: Producer, topic: str, i: int) -> None:
    while True:
        try:
            producer.produce(topic, key=str(i % 97), value=b'{"tenant": true}')
            return
        except BufferError:
            producer.poll(0.1)


def run(bootstrap: str) -> None:
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50})
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "tenant-live", "auto.offset.reset": "latest"}
    )
    consumer.subscribe([TOPICS[0]])
    sent = 0
    while not stopping:
        began = time.monotonic()
        for _ in range(RATE // 10):
            _produce(producer, TOPICS[sent % len(TOPICS)], sent)
            sent += 1
        producer.poll(0)
        with contextlib.suppress(KafkaException):  # a broker restart: it rejoins by itself
            consumer.poll(0.05)
        time.sleep(max(0.0, 0.1 - (time.monotonic() - began)))
    consumer.close()
    producer.flush(10)


def main() -> None:
    bootstrap = sys.argv[1]
    seed(bootstrap)
    print("tenants ready", flush=True)
    run(bootstrap)


if __name__ == "__main__":
    main()
