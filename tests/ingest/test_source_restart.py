"""The vigia-kafka source riding through a broker restart on librdkafka's mock cluster, driven
through its control API (`tests.rdkafka_mock`): brokers answering with leader-movement errors, a
leader broker going down while leadership moves to another replica, then coming back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError
from pyspark.sql.streaming.datasource import ReadMaxRows

from tests.ingest.test_source import TOPIC, produce, read_batch, rows, stream_reader
from tests.rdkafka_mock import (
    LIST_OFFSETS,
    OFFSET_COMMIT,
    ControlledCluster,
    controlled_cluster,
    leaders,
)
from vigia.ingest.kafka_source.adapter import KafkaAdmin, KafkaSourceError, consumer_config
from vigia.ingest.kafka_source.offsets import OffsetRange, from_json
from vigia.ingest.kafka_source.reader import read_range

NOT_LEADER = KafkaError.NOT_LEADER_FOR_PARTITION
NEWER_EPOCH = KafkaError.UNKNOWN_LEADER_EPOCH


@pytest.fixture
def cluster() -> Iterator[ControlledCluster]:
    with controlled_cluster() as found:
        found.create_topic(TOPIC, 4)
        yield found


def admin(cluster: ControlledCluster, seen: list[tuple[str, str]]) -> KafkaAdmin:
    return KafkaAdmin(
        cluster.bootstrap_servers,
        {},
        "vigia-ingest",
        10,
        observer=lambda call, error: seen.append((call, error)),
    )


def restart(cluster: ControlledCluster, broker: int, down_s: float, move_after_s: float) -> None:
    """Stop ``broker``; after ``move_after_s`` its partitions get a new leader (what the
    controller does); after ``down_s`` it is back."""
    cluster.broker_down(broker)
    time.sleep(move_after_s)
    spare = broker % cluster.brokers + 1
    for partition, leader in leaders(cluster.bootstrap_servers, TOPIC).items():
        if leader == broker:
            cluster.set_leader(TOPIC, partition, spare)
    time.sleep(max(0.0, down_s - move_after_s))
    cluster.broker_up(broker)


def test_list_offsets_rides_through_leader_movement_errors(cluster: ControlledCluster) -> None:
    produce(cluster.bootstrap_servers, 100)
    seen: list[tuple[str, str]] = []
    cluster.push_errors(LIST_OFFSETS, NOT_LEADER, NEWER_EPOCH, NOT_LEADER)
    earliest, latest = admin(cluster, seen).watermarks([(TOPIC, p) for p in range(4)])
    assert sum(latest.values()) == 100 and set(earliest.values()) == {0}
    assert {error for _, error in seen} <= {"NOT_LEADER_FOR_PARTITION", "UNKNOWN_LEADER_EPOCH"}
    assert seen and {call for call, _ in seen} == {"list_offsets"}


def test_list_offsets_names_partition_error_and_wait_when_the_errors_outlast_the_deadline(
    cluster: ControlledCluster,
) -> None:
    cluster.push_errors(LIST_OFFSETS, *[NEWER_EPOCH] * 500)
    quick = KafkaAdmin(cluster.bootstrap_servers, {}, "vigia-ingest", 2)
    started = time.monotonic()
    with pytest.raises(KafkaSourceError) as raised:
        quick.watermarks([(TOPIC, 0)])
    waited = time.monotonic() - started
    assert 2 <= waited < 6
    sentence = raised.value.sentence
    assert sentence.startswith(
        f"cannot read the earliest offsets from {cluster.bootstrap_servers}: {TOPIC}-0: "
    )
    # The admin client sometimes hands back the broker's error, sometimes an offset of -1001.
    assert (
        "Broker: Leader epoch is newer than broker epoch" in sentence
        or "the broker answered without an offset" in sentence
    )
    assert " (still failing after 2." in sentence


def test_group_commit_rides_through_a_moving_coordinator(cluster: ControlledCluster) -> None:
    seen: list[tuple[str, str]] = []
    cluster.push_errors(OFFSET_COMMIT, KafkaError.NOT_COORDINATOR, KafkaError.REQUEST_TIMED_OUT)
    committer = admin(cluster, seen)
    committer.commit({(TOPIC, 0): 0})
    assert committer.committed([(TOPIC, 0)]) == {(TOPIC, 0): 0}
    assert [call for call, _ in seen] == ["group_commit", "group_commit"]


def test_a_read_rides_through_its_leader_restarting(cluster: ControlledCluster) -> None:
    produce(cluster.bootstrap_servers, 4_000, partition=0)
    leader = leaders(cluster.bootstrap_servers, TOPIC)[0]
    seen: list[tuple[str, str]] = []
    # Many small fetches, so that the restart hits mid-read.
    small = {"fetch.max.bytes": "2000", "message.max.bytes": "1000"}
    config = consumer_config(cluster.bootstrap_servers, small, "reader")
    config["max.partition.fetch.bytes"] = "2000"
    batches = read_range(
        config,
        OffsetRange(TOPIC, 0, 0, 4_000),
        fail_on_data_loss=True,
        timeout_s=30,
        observer=lambda call, error: seen.append((call, error)),
    )
    first = next(batches)
    restart(cluster, leader, down_s=3, move_after_s=1)
    table = rows(iter([first, *batches]))
    assert table.column("offset").to_pylist() == list(range(4_000))


def test_reader_watermarks_ride_through_leader_movement_errors(cluster: ControlledCluster) -> None:
    produce(cluster.bootstrap_servers, 50, partition=1)
    seen: list[tuple[str, str]] = []
    cluster.push_errors(LIST_OFFSETS, NOT_LEADER, NOT_LEADER)
    table = rows(
        read_range(
            consumer_config(cluster.bootstrap_servers, {}, "reader"),
            OffsetRange(TOPIC, 1, 0, 50),
            fail_on_data_loss=True,
            timeout_s=30,
            kafka_timeout_s=10,
            observer=lambda call, error: seen.append((call, error)),
        )
    )
    assert table.num_rows == 50
    # One watermark query sends two ListOffsets (low, high): one or two tries took the errors.
    assert seen and set(seen) == {("watermarks", "NOT_LEADER_FOR_PARTITION")}


def test_stream_reader_plans_and_reads_through_a_broker_restart(
    cluster: ControlledCluster,
) -> None:
    produce(cluster.bootstrap_servers, 2_000)
    reader = stream_reader(cluster, maxOffsetsPerTrigger="500")  # type: ignore[arg-type]
    restarted = threading.Thread(target=restart, args=(cluster, 1, 4.0, 1.5))
    try:
        start = reader.initialOffset()
        total = 0
        while True:
            end = reader.latestOffset(start, ReadMaxRows(500))
            if end == start:
                break
            total += read_batch(reader, start, end).num_rows
            if not restarted.is_alive() and total == 500:
                restarted.start()
            start = end
        assert total == 2_000
        assert sum(from_json(start).values()) == 2_000
    finally:
        restarted.join()
        reader.stop()
