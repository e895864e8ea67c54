"""Issue 20 §2 on a real cluster: lag seconds right after an exporter start, at scale, and for a
KIP-848 group's partitions it owns but has not committed.

- 10 groups × 2 topics × 50 partitions lag, each group at its own offsets: 1,000 committed offsets
  to read, with a budget of 20 refreshes per collection (the old plan: 50 collections). Every
  group-topic has its maximum within the first two collections.
- A KIP-848 consumer (`group.protocol=consumer`) owns 6 partitions of hour-old records and commits
  nothing: their lag seconds are the hour, read from the earliest record, never the exporter's
  uptime extrapolated.

Topics and groups are named vigia-it-start-<random>, the exporter filtered to them, every wait has
a deadline; everything is deleted at the end.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.exporter.live import Running, exporter_process, wait_for
from tests.realstack.groups import commit_groups
from tests.realstack.topics import create_topic

pytestmark = pytest.mark.integration

GROUPS = 10
TOPICS = 2
PARTITIONS = 50
PER_PARTITION = 20
AGE = 30 * 60.0
HOUR = 3600.0


def _produce_old(bootstrap: str, topic: str, partitions: int, count: int, age: float) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50})
    first_ms = int((time.time() - age) * 1000)
    for p in range(partitions):
        for i in range(count):
            producer.produce(topic, value=b"{}", partition=p, timestamp=first_ms + i)
    assert producer.flush(60) == 0


@contextlib.contextmanager
def _cleanup(bootstrap: str, topics: list[str], groups: list[str]) -> Iterator[None]:
    try:
        yield
    finally:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.delete_topics(topics, request_timeout=30).values():
            future.result(timeout=60)
        for future in admin.delete_consumer_groups(groups, request_timeout=30).values():
            with contextlib.suppress(KafkaException):  # a group never created
                future.result(timeout=30)


def _collections(exporter: Running, seen: list[float]) -> dict[str, Any] | None:
    """The API document, noting each new collection's time in `seen` (polled far more often than
    the collection interval, so none is missed)."""
    response = exporter.get("/api/v1/cluster")
    if response.status_code != 200:
        return None
    doc: dict[str, Any] = response.json()
    if doc.get("collected_at") is not None and (not seen or seen[-1] != doc["collected_at"]):
        seen.append(doc["collected_at"])
    return doc


def test_every_lagging_group_topic_has_its_maximum_within_two_collections_after_a_start(
    real_kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix = f"vigia-it-start-{uuid.uuid4().hex[:8]}"
    topics = [f"{prefix}-t{i}" for i in range(TOPICS)]
    groups = [f"{prefix}-g{i}" for i in range(GROUPS)]
    with _cleanup(real_kafka_bootstrap, topics, groups):
        for topic in topics:
            create_topic(
                real_kafka_bootstrap,
                topic,
                PARTITIONS,
                config={"message.timestamp.type": "CreateTime"},
            )
            _produce_old(real_kafka_bootstrap, topic, PARTITIONS, PER_PARTITION, AGE)
        # Each group at its own offset: 1,000 distinct committed offsets to read. Committed
        # again until taken: a coordinator can still be loading after an earlier drill's restart.
        commit_groups(
            AdminClient({"bootstrap.servers": real_kafka_bootstrap}),
            {
                group: [TopicPartition(t, p, g + 1) for t in topics for p in range(PARTITIONS)]
                for g, group in enumerate(groups)
            },
        )

        args = ("--bootstrap-servers", real_kafka_bootstrap, "--no-probe")
        args += ("--topic-include", f"^{prefix}-", "--group-include", f"^{prefix}-")
        args += ("--collection-interval", "5", "--collection-timeout", "15")
        args += ("--lag-record-partitions", "20")
        seen: list[float] = []
        with exporter_process(tmp_path / "exporter.log", *args) as exporter:

            def covered() -> dict[tuple[str, str], Any] | None:
                doc = _collections(exporter, seen)
                if doc is None:
                    return None
                found = {
                    (g["group_id"], t["topic"]): t
                    for g in doc["groups"]
                    if g["group_id"] in groups
                    for t in g["topics"]
                }
                done = len(found) == GROUPS * TOPICS
                if done and all(t["max_lag_seconds"] is not None for t in found.values()):
                    return found
                return None

            found = wait_for(covered, 120, "a maximum for every lagging group-topic")
            assert isinstance(found, dict)
            assert len(seen) <= 2, f"covered at collection {len(seen)}: {exporter.log_text()}"
            for (group, _), topic in found.items():
                assert topic["max_lag_seconds_method"] == "record", (group, topic)
                assert AGE - 60 < topic["max_lag_seconds"] < AGE + 120, (group, topic)


def test_a_kip848_members_uncommitted_partitions_read_their_earliest_records_age(
    real_kafka_bootstrap: str, tmp_path: Path
) -> None:
    name = f"vigia-it-start-848-{uuid.uuid4().hex[:8]}"
    partitions = 6
    with _cleanup(real_kafka_bootstrap, [name], [name]):
        create_topic(
            real_kafka_bootstrap, name, partitions, config={"message.timestamp.type": "CreateTime"}
        )
        _produce_old(real_kafka_bootstrap, name, partitions, 50, HOUR)
        member = Consumer(
            {
                "bootstrap.servers": real_kafka_bootstrap,
                "group.id": name,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",  # reads nothing of the backlog, commits nothing
            }
        )
        try:
            member.subscribe([name])

            def assigned() -> bool:
                member.poll(0.2)
                return len(member.assignment()) == partitions

            wait_for(assigned, 60, "the KIP-848 member to own every partition")
            args = ("--bootstrap-servers", real_kafka_bootstrap, "--no-probe")
            args += ("--topic-include", f"^{name}$", "--group-include", f"^{name}$")
            args += ("--collection-interval", "5", "--collection-timeout", "15")
            seen: list[float] = []
            with exporter_process(tmp_path / "exporter.log", *args) as exporter:

                def group() -> dict[str, Any] | None:
                    member.poll(0)  # stays a live member
                    doc = _collections(exporter, seen)
                    found = [g for g in (doc or {}).get("groups", ()) if g["group_id"] == name]
                    topics = found[0]["topics"] if found else []
                    if topics and topics[0]["max_lag_seconds"] is not None:
                        return found[0]
                    assert not topics or topics[0]["max_lag_seconds_method"] != "extrapolated"
                    return None

                found = wait_for(group, 90, "the KIP-848 group's maximum lag seconds")
                assert isinstance(found, dict)
                assert found["type"] == "CONSUMER", found
                assert len(seen) <= 2, f"at collection {len(seen)}: {exporter.log_text()}"
                (topic,) = found["topics"]
                assert topic["max_lag_seconds_method"] == "record"
                assert HOUR - 60 < topic["max_lag_seconds"] < HOUR + 120
                for p in found["partitions"]:
                    assert p["committed_offset"] is None and p["owned"], p
                    assert p["lag"] == 50
                    assert p["lag_seconds_method"] == "record"
                    assert HOUR - 60 < p["lag_seconds"] < HOUR + 120
        finally:
            member.close()
