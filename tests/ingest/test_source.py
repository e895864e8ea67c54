"""The vigia-kafka source against librdkafka's mock cluster, driven directly (no Spark JVM):
range reads over gaps, data loss, admission control, Trigger.AvailableNow and group commits."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Producer
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from tests.conftest import MockCluster
from vigia.ingest.kafka_source import reader
from vigia.ingest.kafka_source.adapter import KafkaAdmin, KafkaSourceError, consumer_config
from vigia.ingest.kafka_source.offsets import OffsetRange, PartitionLoss, from_json
from vigia.ingest.kafka_source.options import SourceOptionError, SourceOptions
from vigia.ingest.kafka_source.reader import ARROW_SCHEMA, read_range
from vigia.ingest.kafka_source.source import KafkaInputPartition, KafkaStreamReader

TOPIC = "measure"


def produce(servers: str, count: int, *, partition: int | None = None, size: int = 0) -> None:
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20, "log_level": 3})
    padding = b"x" * size
    for i in range(count):
        value = b'{"n":%d}' % i + padding
        key = b"UY%06d" % (i % 1000)
        while True:
            try:
                if partition is None:
                    producer.produce(TOPIC, value, key)
                else:
                    producer.produce(TOPIC, value, key, partition=partition)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(30) == 0


def reader_config(cluster: MockCluster) -> dict[str, object]:
    return consumer_config(cluster.bootstrap_servers, {}, "vigia-test-reader")


def rows(batches: Iterator[pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches(list(batches), schema=ARROW_SCHEMA)


def admin(cluster: MockCluster, group: str = "vigia-ingest") -> KafkaAdmin:
    return KafkaAdmin(cluster.bootstrap_servers, {}, group, timeout_s=5)


def test_read_range_steps_over_transaction_markers_without_waiting(
    mock_cluster: MockCluster,
) -> None:
    producer = Producer(
        {
            "bootstrap.servers": mock_cluster.bootstrap_servers,
            "transactional.id": "t",
            "log_level": 3,
        }
    )
    producer.init_transactions(10)
    for batch in range(3):  # each commit writes a control marker: offsets 5, 11, 17 are gaps
        producer.begin_transaction()
        for i in range(5):
            producer.produce(TOPIC, b"%d-%d" % (batch, i), partition=0)
        producer.commit_transaction(10)
    _, latest = admin(mock_cluster).watermarks([(TOPIC, 0)])
    assert latest[(TOPIC, 0)] == 18

    started = time.monotonic()
    table = rows(
        read_range(
            reader_config(mock_cluster),
            OffsetRange(TOPIC, 0, 3, 18),  # ends on a marker at the end of the partition
            fail_on_data_loss=True,
            timeout_s=10,
        )
    )
    assert time.monotonic() - started < 3
    assert table.column("offset").to_pylist() == [3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16]
    assert table.column("value").to_pylist()[0] == b"0-3"
    assert set(table.column("partition").to_pylist()) == {0}
    assert set(table.column("topic").to_pylist()) == {TOPIC}
    assert set(table.column("timestampType").to_pylist()) == {0}  # CreateTime, as in Spark


def test_read_range_stops_at_its_end_when_more_data_follows(mock_cluster: MockCluster) -> None:
    produce(mock_cluster.bootstrap_servers, 50, partition=1)
    table = rows(
        read_range(
            reader_config(mock_cluster),
            OffsetRange(TOPIC, 1, 10, 20),
            fail_on_data_loss=True,
            timeout_s=10,
        )
    )
    assert table.column("offset").to_pylist() == list(range(10, 20))
    assert table.column("key").to_pylist()[0] == b"UY000010"


def test_read_range_leaves_the_garbage_collector_as_it_found_it(mock_cluster: MockCluster) -> None:
    # The collector is paused while a chunk is built; the Spark worker around it gets it back.
    produce(mock_cluster.bootstrap_servers, 30, partition=2)
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            for batch in read_range(
                reader_config(mock_cluster),
                OffsetRange(TOPIC, 2, 0, 30),
                fail_on_data_loss=True,
                timeout_s=10,
            ):
                assert batch.num_rows and gc.isenabled() is enabled
            assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_reads_in_one_worker_share_a_consumer_and_stay_apart(mock_cluster: MockCluster) -> None:
    produce(mock_cluster.bootstrap_servers, 50, partition=3)
    produce(mock_cluster.bootstrap_servers, 50, partition=2)
    config = reader_config(mock_cluster)

    def read(partition: int, start: int, end: int) -> list[tuple[int, int]]:
        table = rows(read_range(config, OffsetRange(TOPIC, partition, start, end), **options))
        return list(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))

    options: dict[str, Any] = {"fail_on_data_loss": True, "timeout_s": 10}
    reader._idle_consumers.clear()
    assert read(3, 0, 10) == [(3, n) for n in range(10)]
    (kept,) = reader._idle_consumers.values()
    # What the first read fetched ahead of partition 3 never shows up in a later read.
    assert read(2, 5, 15) == [(2, n) for n in range(5, 15)]
    assert read(3, 30, 35) == [(3, n) for n in range(30, 35)]
    assert list(reader._idle_consumers.values()) == [kept]
    with pytest.raises(KafkaSourceError, match="data loss"):
        read(3, 60, 70)  # past the end: a failed read closes its consumer
    assert not reader._idle_consumers


def test_read_range_when_retention_deleted_the_start(mock_cluster: MockCluster) -> None:
    # The mock broker keeps a few MB per partition: 8 MB pushes the earliest offset above 0.
    produce(mock_cluster.bootstrap_servers, 8_000, partition=0, size=1_000)
    earliest = admin(mock_cluster).watermarks([(TOPIC, 0)])[0][(TOPIC, 0)]
    assert earliest > 100
    wanted = OffsetRange(TOPIC, 0, 100, earliest + 10)

    with pytest.raises(KafkaSourceError, match=r"data loss: measure-0: offsets \[100, \d+\)"):
        list(read_range(reader_config(mock_cluster), wanted, fail_on_data_loss=True, timeout_s=10))

    skipped: list[tuple[PartitionLoss, datetime | None]] = []

    def record(loss: PartitionLoss, appended_before: datetime | None) -> None:
        skipped.append((loss, appended_before))

    table = rows(
        read_range(
            reader_config(mock_cluster),
            wanted,
            fail_on_data_loss=False,
            timeout_s=10,
            on_skip=record,
        )
    )
    assert table.column("offset").to_pylist() == list(range(earliest, earliest + 10))
    # What the job counts in vigia_ingest_skipped_offsets_total: exactly the deleted offsets,
    # and what it records: they were appended before the first message kept.
    assert [(s.partition, s.lost_from, s.lost_to) for s, _ in skipped] == [(0, 100, earliest)]
    assert [appended for _, appended in skipped] == [table.column("timestamp")[0].as_py()]

    skipped.clear()  # a range retention deleted whole: nothing kept, no timestamp
    gone = OffsetRange(TOPIC, 0, 50, 60)
    config = reader_config(mock_cluster)
    assert not rows(
        read_range(config, gone, fail_on_data_loss=False, timeout_s=10, on_skip=record)
    ).num_rows
    assert [(s.lost_from, s.lost_to, appended) for s, appended in skipped] == [(50, 60, None)]


def stream_reader(cluster: MockCluster, **options: str) -> KafkaStreamReader:
    return KafkaStreamReader(
        SourceOptions.parse(
            {
                "kafka.bootstrap.servers": cluster.bootstrap_servers,
                "subscribe": TOPIC,
                "startingOffsets": "earliest",
                "kafkaTimeoutMs": "5000",
                **options,
            }
        )
    )


def read_batch(reader: KafkaStreamReader, start: dict, end: dict) -> pa.Table:  # type: ignore[type-arg]
    tables = []
    for partition in reader.partitions(start, end):
        assert isinstance(partition, KafkaInputPartition)
        tables.append(rows(reader.read(partition)))
    return pa.concat_tables(tables) if tables else ARROW_SCHEMA.empty_table()


def test_stream_reader_bounded_batches_and_group_commits(mock_cluster: MockCluster) -> None:
    produce(mock_cluster.bootstrap_servers, 1_000)
    reader = stream_reader(mock_cluster, maxOffsetsPerTrigger="300")
    try:
        limit = reader.getDefaultReadLimit()
        assert limit == ReadMaxRows(300)
        start = reader.initialOffset()
        assert from_json(start) == {(TOPIC, p): 0 for p in range(4)}

        seen: list[int] = []
        sizes = []
        while True:
            end = reader.latestOffset(start, limit)
            if end == start:
                break
            batch = read_batch(reader, start, end)
            sizes.append(batch.num_rows)
            seen.extend(
                int(v.split(b":")[1].rstrip(b"}")) for v in batch.column("value").to_pylist()
            )
            reader.commit(end)
            assert admin(mock_cluster).committed(from_json(end)) == from_json(end)
            start = end
        assert sizes == [300, 300, 300, 100]
        assert sorted(seen) == list(range(1_000))
        latest = from_json(reader.reportLatestOffset() or {})
        assert sum(latest.values()) == 1_000
        assert reader.latestOffset(start, ReadAllAvailable()) == start
    finally:
        reader.stop()


def test_stream_reader_available_now_stops_at_the_target(mock_cluster: MockCluster) -> None:
    produce(mock_cluster.bootstrap_servers, 200)
    reader = stream_reader(mock_cluster)
    try:
        start = reader.initialOffset()
        reader.prepareForTriggerAvailableNow()
        produce(mock_cluster.bootstrap_servers, 100)  # arrives after the run began
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        assert sum(from_json(end).values()) == 200
        assert reader.latestOffset(end, ReadAllAvailable()) == end
    finally:
        reader.stop()


def test_stream_reader_fails_on_a_deleted_partition_unless_told_otherwise(
    mock_cluster: MockCluster,
) -> None:
    produce(mock_cluster.bootstrap_servers, 10)
    start = {TOPIC: {"0": 0, "1": 0, "2": 0, "3": 0, "9": 4}}  # partition 9 does not exist
    strict = stream_reader(mock_cluster)
    with pytest.raises(KafkaSourceError, match=r"measure-9.*no longer exists"):
        strict.latestOffset(start, ReadAllAvailable())
    lenient = stream_reader(mock_cluster, failOnDataLoss="false")
    end = lenient.latestOffset(start, ReadAllAvailable())
    assert set(end[TOPIC]) == {"0", "1", "2", "3"}
    strict.stop()
    lenient.stop()


def test_admin_says_which_topic_is_missing(mock_cluster: MockCluster) -> None:
    with pytest.raises(KafkaSourceError, match="topic 'nope' does not exist"):
        admin(mock_cluster).partitions("nope")


def test_admin_says_the_cluster_is_unreachable() -> None:
    unreachable = KafkaAdmin("127.0.0.1:1", {}, "g", timeout_s=1)
    with pytest.raises(KafkaSourceError, match=r"cannot reach the Kafka cluster at 127.0.0.1:1"):
        unreachable.partitions(TOPIC)


def test_source_options() -> None:
    options = SourceOptions.parse(
        {
            "kafka.bootstrap.servers": "b:9092",
            "subscribe": "measure, events",
            "maxoffsetspertrigger": "500",
            "failOnDataLoss": "FALSE",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.username": "vigia",
        }
    )
    assert options.topics == ("measure", "events")
    assert options.max_offsets_per_trigger == 500
    assert options.fail_on_data_loss is False
    assert options.starting_offsets.mode == "latest"  # Spark's default
    config = options.reader_config()
    assert config["security.protocol"] == "SASL_SSL"
    assert config["sasl.username"] == "vigia"
    assert config["bootstrap.servers"] == "b:9092"
    assert options.commit_group_id == "vigia-ingest"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "m"}, "kafka.bootstrap.servers is required"),
        ({"kafka.bootstrap.servers": "b"}, "subscribe"),
        ({"kafka.bootstrap.servers": "b", "subscribe": "m", "kafka.group.id": "x"}, "group.id"),
        (
            {"kafka.bootstrap.servers": "b", "subscribe": "m", "maxOffsetsPerTrigger": "0"},
            "positive",
        ),
        ({"kafka.bootstrap.servers": "b", "subscribe": "m", "failOnDataLoss": "maybe"}, "true or"),
    ],
)
def test_source_options_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(SourceOptionError, match=message):
        SourceOptions.parse(options)
