"""The read tasks' Kafka retries and skipped offsets travel in an accumulator (`task_counts`), the
planner's in the spool; the job serves their sum. Here without a Spark JVM: the pure counts, the
accumulator's parameter, the source class pickled by value, and read() on the mock cluster choosing
the accumulator over the spool. tests/ingest/test_task_counts_cluster.py runs it on executors."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError
from pyspark import cloudpickle
from pyspark.accumulators import Accumulator

from tests.ingest.test_source import TOPIC, produce, rows
from tests.rdkafka_mock import LIST_OFFSETS, ControlledCluster, controlled_cluster
from vigia.ingest.kafka_source.counts import (
    added,
    retries_of,
    retry,
    skipped,
    skipped_of,
    summed,
)
from vigia.ingest.kafka_source.offsets import OffsetRange, PartitionLoss
from vigia.ingest.kafka_source.options import SourceOptions
from vigia.ingest.kafka_source.retry_spool import RetrySpool
from vigia.ingest.kafka_source.source import (
    KafkaDataSource,
    KafkaInputPartition,
    KafkaStreamReader,
    counted_source,
)
from vigia.ingest.kafka_source.task_counts import CountsParam, TaskCounts
from vigia.ingest.metrics import IngestMetrics

# Accumulator ids of this process's test accumulators: far from a SparkContext's (from 0).
_AIDS = itertools.count(10_000)


def accumulator() -> Accumulator[Counter[tuple[str, str, str]]]:
    return Accumulator(next(_AIDS), Counter(), CountsParam())


def test_counts_add_into_a_new_value_and_split_into_the_two_series() -> None:
    first = added(retry("fetch", "_TRANSPORT"), skipped("measure", 3, 500))
    second = added(first, added(retry("fetch", "_TRANSPORT"), skipped("measure", 3, 20)))
    assert first == Counter({("retry", "fetch", "_TRANSPORT"): 1, ("skipped", "measure", "3"): 500})
    assert retries_of(second) == {("fetch", "_TRANSPORT"): 2}
    assert skipped_of(second) == {("measure", 3): 520}
    assert summed({("a", "b"): 1}, {("a", "b"): 2, ("c", "d"): 3}, {}) == {
        ("a", "b"): 3,
        ("c", "d"): 3,
    }


def test_the_accumulator_never_changes_a_value_the_driver_may_be_reading() -> None:
    param = CountsParam()
    before = retry("watermarks", "NOT_LEADER_FOR_PARTITION")
    after = param.addInPlace(before, retry("watermarks", "NOT_LEADER_FOR_PARTITION"))
    assert after is not before
    assert before == retry("watermarks", "NOT_LEADER_FOR_PARTITION")
    assert after[("retry", "watermarks", "NOT_LEADER_FOR_PARTITION")] == 2
    assert param.zero(after) == Counter()


def test_the_counted_source_travels_by_value_with_its_accumulator() -> None:
    counters = accumulator()
    # The plain source is importable: pickled by reference, no accumulator could ride along.
    assert b"CountedKafkaDataSource" not in cloudpickle.dumps(KafkaDataSource)
    source = cloudpickle.loads(cloudpickle.dumps(counted_source(counters)))
    assert source.__name__ == "CountedKafkaDataSource" and issubclass(source, KafkaDataSource)
    travelled = source.counters
    # Unpickled where it was made, it is the same accumulator; anywhere else, one with its id.
    assert isinstance(travelled, Accumulator) and travelled.aid == counters.aid
    reader = source({"kafka.bootstrap.servers": "localhost:9092", "subscribe": TOPIC}).streamReader(
        None
    )
    assert isinstance(reader, KafkaStreamReader) and reader.counters is travelled
    # ... and the reader, pickled into each task, carries it on.
    task_copy = cloudpickle.loads(cloudpickle.dumps(reader))
    assert task_copy.counters.aid == counters.aid


@pytest.fixture
def cluster() -> Iterator[ControlledCluster]:
    with controlled_cluster() as found:
        found.create_topic(TOPIC, 4)
        yield found


@pytest.fixture
def spool() -> Iterator[RetrySpool]:
    found = RetrySpool()
    yield found
    found.close()


def reader_of(
    cluster: ControlledCluster,
    spool: RetrySpool,
    counters: Accumulator[Counter] | None,  # type: ignore[type-arg]
) -> KafkaStreamReader:
    options = SourceOptions.parse(
        {
            "kafka.bootstrap.servers": cluster.bootstrap_servers,
            "subscribe": TOPIC,
            "kafkaTimeoutMs": "10000",
            "retrySpoolDir": spool.directory,
        }
    )
    return KafkaStreamReader(options, counters)


@pytest.mark.parametrize("with_accumulator", [True, False])
def test_a_reads_retries_go_to_the_accumulator_else_to_the_spool(
    cluster: ControlledCluster, spool: RetrySpool, with_accumulator: bool
) -> None:
    produce(cluster.bootstrap_servers, 50, partition=1)
    counters = accumulator() if with_accumulator else None
    reader = reader_of(cluster, spool, counters)
    # Both of the watermark query's ListOffsets (low, high) fail: with one, librdkafka sometimes
    # answers low = high instead of an error (seen on the mock, 5 times in 8).
    cluster.push_errors(LIST_OFFSETS, *[KafkaError.NOT_LEADER_FOR_PARTITION] * 2)
    table = rows(reader.read(KafkaInputPartition(OffsetRange(TOPIC, 1, 0, 50))))
    assert table.num_rows == 50
    counted = retries_of(counters.value) if counters is not None else spool.counts()
    assert set(counted) == {("watermarks", "NOT_LEADER_FOR_PARTITION")}
    if counters is not None:
        assert spool.counts() == {}, "counted twice: in the accumulator and in the spool"


def test_a_reads_skipped_offsets_go_to_the_accumulator(
    cluster: ControlledCluster, spool: RetrySpool
) -> None:
    counters = accumulator()
    reader = reader_of(cluster, spool, counters)
    reader._skipped(PartitionLoss(TOPIC, 2, 100, 130, "deleted by retention"), None)
    assert skipped_of(counters.value) == {(TOPIC, 2): 30}
    assert spool.skipped() == {}


def test_the_metrics_serve_the_spool_and_the_accumulator_summed(spool: RetrySpool) -> None:
    tasks = TaskCounts()
    metrics = IngestMetrics(
        "q",
        kafka_retries=lambda: summed(spool.counts(), tasks.retries()),
        skipped_offsets=lambda: summed(spool.skipped(), tasks.skipped()),
    )
    spool.observer()("list_offsets", "NOT_LEADER_FOR_PARTITION")
    spool.observer()("fetch", "_TRANSPORT")

    def served() -> tuple[dict[tuple[str, str], float], dict[str, float]]:
        families = {m.name: m for m in metrics.collect()}
        retried = families["vigia_ingest_kafka_retries"].samples
        skips = families["vigia_ingest_skipped_offsets"].samples
        return (
            {(s.labels["call"], s.labels["error"]): s.value for s in retried},
            {s.labels["partition"]: s.value for s in skips},
        )

    # Before Spark starts there is no accumulator: the spool alone.
    assert served() == (
        {("list_offsets", "NOT_LEADER_FOR_PARTITION"): 1, ("fetch", "_TRANSPORT"): 1},
        {},
    )
    tasks.accumulator = accumulator()
    tasks.accumulator.add(added(retry("fetch", "_TRANSPORT"), skipped(TOPIC, 0, 7)))
    assert served() == (
        {("list_offsets", "NOT_LEADER_FOR_PARTITION"): 1, ("fetch", "_TRANSPORT"): 2},
        {"0": 7},
    )
