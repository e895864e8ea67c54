"""Issue 10 §2 on a real cluster (VIGIA_TEST_KAFKA_BOOTSTRAP_SERVERS): a 45-minute-old backlog
reads ≈ 45 minutes on the exporter's first collections, not its uptime.

The backlog is produced now with CreateTimes 45 minutes old (topic `message.timestamp.type`
CreateTime), so nothing waits 45 minutes. Written for a shared, busy cluster: a topic and group
named vigia-it-lagage-<random>, deleted at the end; the exporter is filtered to them, so other
tenants' traffic changes nothing it checks; every wait has a deadline.
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

from tests.exporter.exposition import value
from tests.exporter.live import exporter_process, wait_for
from tests.realstack.topics import create_topic

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 200
COMMITTED = 50  # per partition: 150 unread messages each
AGE = 45 * 60.0


@pytest.fixture
def backlog(real_kafka_bootstrap: str) -> Iterator[tuple[str, dict[int, int]]]:
    """(topic = group name, CreateTime in ms of the record at each partition's committed offset)."""
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap})
    name = f"vigia-it-lagage-{uuid.uuid4().hex[:8]}"
    create_topic(
        real_kafka_bootstrap, name, PARTITIONS, config={"message.timestamp.type": "CreateTime"}
    )
    try:
        created: dict[tuple[int, int], int] = {}

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                created[(msg.partition(), msg.offset())] = msg.timestamp()[1]

        producer = Producer({"bootstrap.servers": real_kafka_bootstrap, "acks": "all"})
        first_ms = int((time.time() - AGE) * 1000)
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.produce(
                    name, value=b"{}", partition=p, timestamp=first_ms + i, on_delivery=delivered
                )
        assert producer.flush(60) == 0
        if len(created) < PARTITIONS * PER_PARTITION:
            pytest.fail(
                f"only {len(created)} of {PARTITIONS * PER_PARTITION} old-timestamp messages were "
                "accepted (broker log.message.timestamp.before.max.ms below 45 minutes?)"
            )
        consumer = Consumer({"bootstrap.servers": real_kafka_bootstrap, "group.id": name})
        try:
            consumer.commit(
                offsets=[TopicPartition(name, p, COMMITTED) for p in range(PARTITIONS)],
                asynchronous=False,
            )
        finally:
            consumer.close()
        yield name, {p: created[(p, COMMITTED)] for p in range(PARTITIONS)}
    finally:
        admin.delete_topics([name], request_timeout=30)[name].result(timeout=60)
        for future in admin.delete_consumer_groups([name], request_timeout=30).values():
            with contextlib.suppress(KafkaException):  # never created if the commit failed
                future.result(timeout=30)


def test_a_45_minute_old_backlog_reads_45_minutes_right_after_a_start(
    real_kafka_bootstrap: str, backlog: tuple[str, dict[int, int]], tmp_path: Path
) -> None:
    name, created_ms = backlog
    only = f"^{name}$"
    args = ("--bootstrap-servers", real_kafka_bootstrap, "--no-probe")
    args += ("--topic-include", only, "--group-include", only)
    args += ("--collection-interval", "5", "--collection-timeout", "15")
    started = time.time()
    with exporter_process(tmp_path / "exporter.log", *args) as exporter:

        def partitions() -> list[dict[str, Any]] | None:
            doc = exporter.get("/api/v1/cluster").json()
            groups = [g for g in doc.get("groups", ()) if g["group_id"] == name]
            found = groups[0]["partitions"] if groups else []
            if len(found) == PARTITIONS and all(p["lag_seconds"] is not None for p in found):
                return [{**p, "collected_at": doc["collected_at"]} for p in found]
            return None

        found = wait_for(partitions, 90, "lag seconds for every partition of the group")
        assert isinstance(found, list)
        for p in found:
            uptime = p["collected_at"] - started
            expected = p["collected_at"] - created_ms[p["partition"]] / 1000
            assert p["lag"] == PER_PARTITION - COMMITTED
            assert p["lag_seconds_method"] == "record", p
            assert p["lag_seconds"] == pytest.approx(expected, abs=1.0)
            assert AGE - 120 < p["lag_seconds"] < AGE + 120 + uptime
            assert uptime < 120  # right after the start, far less than 45 minutes
        metrics = exporter.metrics()
        worst = value(
            metrics, "kafka_consumergroup_max_lag_seconds", consumergroup=name, topic=name
        )
        assert worst is not None and worst > AGE - 120
        assert (
            value(
                metrics,
                "kafka_consumergroup_lag_seconds_partitions",
                consumergroup=name,
                method="record",
            )
            == PARTITIONS
        )
