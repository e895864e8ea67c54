"""Lag seconds from record timestamps against librdkafka's mock cluster: the reader itself, and the
exporter started next to a 45-minute-old backlog (messages produced with old CreateTimes)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from benchmarks.mock_cluster import MockGapsAdmin
from tests.conftest import MockCluster
from tests.exporter.live import exporter_thread, wait_for
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.kafka.record_times import RecordTimeReader
from vigia.exporter.model.filters import Filters
from vigia.exporter.model.record_time import RecordBudget
from vigia.exporter.service import CollectionService

TOPIC = "backlog"
PER_PARTITION = 40
AGE = 45 * 60.0


def _produce_old(bootstrap: str, first_ms: int) -> int:
    """PER_PARTITION messages on every partition of TOPIC; the one at offset o has CreateTime
    first_ms + o seconds. Returns the number of partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    producer.produce(TOPIC, value=b"")  # creates the topic (the mock auto-creates it)
    producer.flush(10)
    partitions = len(producer.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
    for p in range(partitions):
        for o in range(PER_PARTITION):
            producer.produce(TOPIC, value=b"{}", partition=p, timestamp=first_ms + o * 1000)
    assert producer.flush(30) == 0
    return partitions


def _offsets(bootstrap: str) -> dict[int, tuple[int, int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "vigia-test-watermarks"})
    try:
        metadata = consumer.list_topics(TOPIC, timeout=10)
        return {
            p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)
            for p in metadata.topics[TOPIC].partitions
        }
    finally:
        consumer.close()


@pytest.fixture
def backlog(mock_cluster: MockCluster) -> Iterator[tuple[str, int, dict[int, int]]]:
    """(bootstrap, first CreateTime in ms, committed offset per partition of group `ingest`)."""
    bootstrap = mock_cluster.bootstrap_servers
    first_ms = int((time.time() - AGE) * 1000)
    _produce_old(bootstrap, first_ms)
    # The record at offset o was "produced" first_ms + o s: committing o leaves it oldest unread.
    # The mock prefixes each partition with the empty creating message on partition 0 or not, so
    # the commit is relative to each partition's own watermarks.
    committed = {p: low + 5 + p for p, (low, _) in _offsets(bootstrap).items()}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ingest"})
    try:
        consumer.commit(
            offsets=[TopicPartition(TOPIC, p, o) for p, o in committed.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()
    yield bootstrap, first_ms, committed


def _created_ms(bootstrap: str, partition: int, offset: int) -> int:
    """The CreateTime the producer gave the record at `offset`, read back by a plain consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "vigia-test-check",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, partition, offset)])
        msg = consumer.poll(10)
        assert msg is not None and msg.error() is None and msg.offset() == offset
        return int(msg.timestamp()[1])
    finally:
        consumer.close()


def test_the_reader_returns_the_record_at_each_offset_and_reports_the_unreadable(
    backlog: tuple[str, int, dict[int, int]],
) -> None:
    bootstrap, _, committed = backlog
    reader = RecordTimeReader(bootstrap, {}, RecordBudget(100, 5.0))
    try:
        targets = [(TOPIC, p, o) for p, o in committed.items()]
        # Two groups at different offsets of partition 0; one offset past the end of partition 1.
        second = (TOPIC, 0, committed[0] + 2)
        reads, failures = reader.read([*targets, second, (TOPIC, 1, 10_000)], 10.0)
        assert len(failures) == 1 and "Offset out of range" in failures[0]
        assert sorted((r.topic, r.partition, r.offset) for r in reads) == sorted([*targets, second])
        for r in reads:
            assert r.record_offset == r.offset
            assert r.timestamp_ms == _created_ms(bootstrap, r.partition, r.offset)
        # The same long-lived consumer reads other offsets next time (nothing left paused).
        again = [(TOPIC, p, o + 3) for p, o in committed.items()]
        reads, failures = reader.read(again, 10.0)
        assert failures == []
        assert sorted((r.topic, r.partition, r.record_offset) for r in reads) == sorted(again)
        # An unknown topic is not answered within the time given, and nothing hangs.
        started = time.monotonic()
        reads, _ = reader.read([("no-such-topic", 0, 0)], 1.0)
        assert reads == () and time.monotonic() - started < 3.0
    finally:
        reader.close()


def _exporter(bootstrap: str, budget: RecordBudget) -> tuple[CollectionService, KafkaAdapter, Any]:
    adapter = KafkaAdapter(
        bootstrap,
        {},
        Filters(),
        admin_factory=lambda config: MockGapsAdmin(config, {"ingest": [TOPIC]}),
    )
    reader = RecordTimeReader(bootstrap, {}, budget)
    # The mock's missing admin APIs hold the adapter until its deadline; a real cluster answers
    # them in about a second. Give the adapter 3 of the 5 s, as a real cluster would leave time.
    service = CollectionService(
        lambda timeout: adapter.collect(timeout - 2.0),
        interval=0.5,
        timeout=5.0,
        lag_status_window=2,
        enrich=reader,
    )
    return service, adapter, reader


def _ingest_partitions(doc: dict[str, Any]) -> list[dict[str, Any]]:
    groups = {g["group_id"]: g for g in doc.get("groups", ())}
    return [p for p in groups["ingest"]["partitions"] if p["topic"] == TOPIC] if groups else []


def test_a_45_minute_old_backlog_reads_45_minutes_right_after_a_start(
    backlog: tuple[str, int, dict[int, int]],
) -> None:
    bootstrap, _, committed = backlog
    created = {p: _created_ms(bootstrap, p, o) / 1000 for p, o in committed.items()}
    service, adapter, reader = _exporter(bootstrap, RecordBudget())
    started = time.time()
    try:
        with exporter_thread(service) as exp:
            doc = wait_for(
                lambda: (
                    (d := exp.get("/api/v1/cluster").json())
                    and len(_ingest_partitions(d)) == len(committed)
                    and d
                ),
                what="the group's committed offsets",
            )
            assert isinstance(doc, dict)
            assert doc["collected_at"] - started < 15  # right after the start
            for p in _ingest_partitions(doc):
                assert p["lag_seconds_method"] == "record"
                expected = doc["collected_at"] - created[p["partition"]]
                assert p["lag_seconds"] == pytest.approx(expected, abs=0.01)
                assert AGE - 60 < p["lag_seconds"] < AGE + 60
            topic = next(t for t in doc["groups"][0]["topics"] if t["topic"] == TOPIC)
            assert topic["max_lag_seconds_method"] == "record"
            assert topic["max_lag_seconds"] == pytest.approx(
                max(doc["collected_at"] - c for c in created.values()), abs=0.01
            )
            found = exp.metrics()
            key = ("kafka_consumergroup_lag_seconds_partitions",)
            counts = {
                labels["method"]: v
                for (name, labels), v in found.items()
                if (name,) == key and labels["consumergroup"] == "ingest"
            }
            assert counts == {"record": len(committed)}
            durations = {
                labels["phase"]
                for (name, labels), _ in found.items()
                if name == "vigia_exporter_collection_duration_seconds"
            }
            assert "record_times" in durations
    finally:
        adapter.close()
        reader.close()


def test_without_record_reads_the_same_backlog_reads_as_the_uptime(
    backlog: tuple[str, int, dict[int, int]],
) -> None:
    """The failure of issue 10 §2 that the reads fix: --lag-record-partitions 0."""
    bootstrap = backlog[0]
    service, adapter, reader = _exporter(bootstrap, RecordBudget(partitions=0))
    started = time.time()
    try:
        with exporter_thread(service) as exp:
            doc = wait_for(
                lambda: (
                    (d := exp.get("/api/v1/cluster").json())
                    and {p["lag_seconds_method"] for p in _ingest_partitions(d)} == {"extrapolated"}
                    and d
                ),
                what="extrapolated lag seconds",
            )
            assert isinstance(doc, dict)
            for p in _ingest_partitions(doc):
                assert p["lag_seconds"] <= doc["collected_at"] - started  # ≤ uptime, not 45 min
    finally:
        adapter.close()
        reader.close()
