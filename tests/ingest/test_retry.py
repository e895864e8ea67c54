"""The retry policy of the job's Kafka calls: pure, then through the adapter with a scripted fake
admin client and a fake clock (error sequences a broker restart produces)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from vigia.ingest.kafka_source.adapter import KafkaAdmin, KafkaSourceError, partition_watermarks
from vigia.ingest.kafka_source.retry import (
    CallFailed,
    Failure,
    GaveUp,
    RetryPolicy,
    is_retriable,
    retrying,
)
from vigia.ingest.kafka_source.retry_spool import RetrySpool, read_spool, spool_observer
from vigia.ingest.metrics import IngestMetrics

TOPIC = "measure"
NOT_LEADER = KafkaError.NOT_LEADER_FOR_PARTITION
FENCED = KafkaError.FENCED_LEADER_EPOCH
NEWER_EPOCH = KafkaError.UNKNOWN_LEADER_EPOCH  # "Leader epoch is newer than broker epoch"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


Observed = list[tuple[str, str]]


def observer(into: Observed) -> Callable[[str, str], None]:
    return lambda call, error: into.append((call, error))


# -- the pure policy ---------------------------------------------------------------------------


def failure(code: int) -> list[Failure]:
    return [Failure(f"{TOPIC}-0", KafkaError(code))]


def test_backoff_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(30, first_backoff_s=0.1, max_backoff_s=2)
    assert [policy.backoff(n) for n in range(7)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2, 2]


def test_leader_movement_codes_are_retriable_whatever_the_client_flag_says() -> None:
    for code in (NOT_LEADER, FENCED, NEWER_EPOCH, KafkaError.REQUEST_TIMED_OUT):
        assert not KafkaError(code).retriable()  # what librdkafka hands us for these
        assert is_retriable(KafkaError(code))
    assert is_retriable(KafkaError(KafkaError.UNKNOWN, retriable=True))
    assert not is_retriable(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    assert not is_retriable(KafkaError(NOT_LEADER, fatal=True))


def test_next_wait_never_passes_the_deadline_and_gives_up_on_what_is_not_retriable() -> None:
    policy = RetryPolicy(10, first_backoff_s=1, max_backoff_s=4)
    assert policy.next_wait(0, 0.0, failure(NOT_LEADER)) == 1
    assert policy.next_wait(5, 8.5, failure(NOT_LEADER)) == 1.5
    assert policy.next_wait(5, 10.0, failure(NOT_LEADER)) is None
    mixed = failure(NOT_LEADER) + failure(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    assert policy.next_wait(0, 0.0, mixed) is None


def test_one_try_never_takes_the_whole_deadline() -> None:
    policy = RetryPolicy(30)
    assert policy.try_timeout(30) == 10  # a lost request leaves time to ask again
    assert policy.try_timeout(4) == 4
    assert RetryPolicy(2).try_timeout(2) == 1


def scripted(
    codes: list[int | None], clock: FakeClock, cost_s: float = 0.5
) -> Callable[[float], str]:
    """A call failing with each code in turn (None: success), each try taking ``cost_s``."""
    pending = iter(codes)

    def attempt(timeout: float) -> str:
        assert timeout > 0
        clock.now += cost_s
        code = next(pending)
        if code is not None:
            raise CallFailed(failure(code))
        return "done"

    return attempt


def test_retrying_rides_through_retriable_errors_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, seen, refreshed = FakeClock(), [], []
    caplog.set_level(logging.INFO, "vigia.ingest.kafka_source.retry")
    result = retrying(
        "list_offsets",
        scripted([NOT_LEADER, FENCED, None], clock),
        RetryPolicy(30),
        clock,
        between=refreshed.append,
        observer=observer(seen),
    )
    assert result == "done"
    assert seen == [
        ("list_offsets", "NOT_LEADER_FOR_PARTITION"),
        ("list_offsets", "FENCED_LEADER_EPOCH"),
    ]
    assert len(refreshed) == 2  # metadata re-read before each retry
    assert clock.sleeps == [0.1, 0.2]
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["Kafka list_offsets succeeded after 2 retries in 1.8 s"]


def test_retrying_gives_up_at_the_deadline_saying_how_long_it_waited() -> None:
    clock = FakeClock()
    with pytest.raises(GaveUp) as raised:
        retrying("list_offsets", scripted([NEWER_EPOCH] * 1000, clock), RetryPolicy(30), clock)
    waited = clock.now - 1000.0
    assert 30 <= waited < 31
    assert raised.value.sentence.startswith(
        f"{TOPIC}-0: Broker: Leader epoch is newer than broker epoch (still failing after 3"
    )
    assert f"after {waited:.1f} s and " in raised.value.sentence


def test_retrying_stops_at_once_on_what_is_not_retriable() -> None:
    clock, seen = FakeClock(), []
    with pytest.raises(GaveUp, match=r"authori[sz]ation failed \(not retriable\)") as raised:
        retrying(
            "list_offsets",
            scripted([KafkaError.TOPIC_AUTHORIZATION_FAILED], clock),
            RetryPolicy(30),
            clock,
            observer=observer(seen),
        )
    assert clock.sleeps == [] and seen == []
    assert raised.value.failures[0].what == f"{TOPIC}-0"


# -- through the adapter ---------------------------------------------------------------------


@dataclass
class Partition:
    id: int


@dataclass
class Topic:
    partitions: dict[int, Partition]
    error: KafkaError | None = None


@dataclass
class Metadata:
    topics: dict[str, Topic]


@dataclass
class Offset:
    offset: int


@dataclass
class Committed:
    topic: str
    partition: int
    error: KafkaError | None = None


@dataclass
class GroupResult:
    topic_partitions: list[Committed]


def done(value: Any = None, error: int | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(KafkaException(KafkaError(error)))
    return future


@dataclass
class FakeAdmin:
    """An AdminClient that answers from scripts: per partition, one outcome per ListOffsets try
    (an offset, or an error code); metadata answers (a Metadata or an error code)."""

    clock: FakeClock
    offsets: dict[int, list[int | Offset]] = field(default_factory=dict)
    metadata: list[int | Metadata] = field(default_factory=list)
    commits: list[int | list[Committed]] = field(default_factory=list)
    asked: list[list[int]] = field(default_factory=list)
    refreshes: int = 0
    clients: int = 0

    def factory(self, _config: dict[str, Any]) -> FakeAdmin:
        self.clients += 1
        return self

    def poll(self, timeout: float) -> int:
        return 0  # no librdkafka callbacks to serve

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
        self.clock.now += 0.2
        if not self.metadata:
            self.refreshes += 1
            return Metadata({})
        answer = self.metadata.pop(0)
        if isinstance(answer, int):
            raise KafkaException(KafkaError(answer))
        return answer

    def list_offsets(
        self, requests: dict[TopicPartition, Any], isolation_level: Any, request_timeout: float
    ) -> dict[TopicPartition, Future[Any]]:
        self.clock.now += 0.5
        self.asked.append(sorted(tp.partition for tp in requests))
        futures = {}
        for tp in requests:
            answer = self.offsets[tp.partition].pop(0)
            futures[tp] = done(answer) if isinstance(answer, Offset) else done(error=answer)
        return futures

    def alter_consumer_group_offsets(
        self, requests: list[Any], request_timeout: float
    ) -> dict[str, Future[Any]]:
        self.clock.now += 0.5
        answer = self.commits.pop(0)
        if isinstance(answer, int):
            return {requests[0].group_id: done(error=answer)}
        return {requests[0].group_id: done(GroupResult(answer))}


def make_admin(fake: FakeAdmin, seen: Observed, timeout_s: float = 30) -> KafkaAdmin:
    return KafkaAdmin(
        "b1:9092,b2:9092",
        {},
        "vigia-ingest",
        timeout_s,
        observer=observer(seen),
        clock=fake.clock,
        client_factory=fake.factory,
    )


def topic_metadata(partitions: int = 3) -> Metadata:
    return Metadata({TOPIC: Topic({p: Partition(p) for p in range(partitions)})})


def test_watermarks_retry_only_the_partitions_whose_leader_moved() -> None:
    fake = FakeAdmin(
        FakeClock(),
        offsets={
            0: [Offset(0), Offset(100)],
            1: [Offset(0), Offset(-1001), Offset(120)],  # leader gone: the admin client says -1001
            3: [KafkaError._NOENT, Offset(0), Offset(7)],  # "No leaders found"
            2: [Offset(5), NOT_LEADER, FENCED, Offset(90)],
        },
    )
    seen: Observed = []
    earliest, latest = make_admin(fake, seen).watermarks([(TOPIC, p) for p in range(4)])
    assert earliest == {(TOPIC, 0): 0, (TOPIC, 1): 0, (TOPIC, 2): 5, (TOPIC, 3): 0}
    assert latest == {(TOPIC, 0): 100, (TOPIC, 1): 120, (TOPIC, 2): 90, (TOPIC, 3): 7}
    assert fake.asked == [[0, 1, 2, 3], [3], [0, 1, 2, 3], [1, 2], [2]]
    assert fake.refreshes == 3  # metadata re-read before each retry
    assert fake.clients == 4  # by a new client each time
    assert [call for call, _ in seen] == ["list_offsets"] * 3


def test_watermarks_fail_after_the_deadline_naming_partition_error_and_wait() -> None:
    fake = FakeAdmin(FakeClock(), offsets={0: [Offset(0)] + [NEWER_EPOCH] * 1000})
    seen: Observed = []
    with pytest.raises(KafkaSourceError) as raised:
        make_admin(fake, seen, timeout_s=30).watermarks([(TOPIC, 0)])
    waited = fake.clock.now - 1000.0
    sentence = raised.value.sentence
    assert sentence.startswith(
        "cannot read the latest offsets from b1:9092,b2:9092: measure-0: "
        "Broker: Leader epoch is newer than broker epoch (still failing after 3"
    )
    assert 30 <= waited < 32 and len(seen) > 10
    assert "within" not in sentence


def test_watermarks_fail_at_once_on_an_error_that_is_not_retriable() -> None:
    fake = FakeAdmin(FakeClock(), offsets={0: [KafkaError.TOPIC_AUTHORIZATION_FAILED]})
    seen: Observed = []
    with pytest.raises(KafkaSourceError, match=r"measure-0: .*\(not retriable\)"):
        make_admin(fake, seen).watermarks([(TOPIC, 0)])
    assert seen == [] and fake.clock.sleeps == []


def test_metadata_retries_a_lost_connection_but_not_a_missing_topic() -> None:
    # The second answer goes to the new client's metadata refresh before the retry.
    fake = FakeAdmin(
        FakeClock(), metadata=[KafkaError._TRANSPORT, topic_metadata(), topic_metadata()]
    )
    seen: Observed = []
    assert make_admin(fake, seen).partitions(TOPIC) == [0, 1, 2]
    assert seen == [("metadata", "_TRANSPORT")]
    assert fake.clients == 2

    missing = FakeAdmin(FakeClock(), metadata=[Metadata({})])
    with pytest.raises(KafkaSourceError, match="topic 'measure' does not exist"):
        make_admin(missing, seen).partitions(TOPIC)
    assert missing.clock.sleeps == []


def test_metadata_of_an_unreachable_cluster_says_how_long_it_tried() -> None:
    fake = FakeAdmin(FakeClock(), metadata=[KafkaError._TRANSPORT] * 1000)
    with pytest.raises(KafkaSourceError) as raised:
        make_admin(fake, [], timeout_s=5).partitions(TOPIC)
    assert raised.value.sentence.startswith(
        "cannot reach the Kafka cluster at b1:9092,b2:9092: Local: Broker transport failure "
        "(still failing after 5."
    )


def test_group_commit_retries_while_the_coordinator_moves() -> None:
    moved = Committed(TOPIC, 1, KafkaError(KafkaError.NOT_COORDINATOR))
    fake = FakeAdmin(
        FakeClock(),
        commits=[
            KafkaError.COORDINATOR_NOT_AVAILABLE,
            [Committed(TOPIC, 0), moved],
            [Committed(TOPIC, 0), Committed(TOPIC, 1)],
        ],
    )
    seen: Observed = []
    make_admin(fake, seen).commit({(TOPIC, 0): 5, (TOPIC, 1): 7})
    assert seen == [
        ("group_commit", "COORDINATOR_NOT_AVAILABLE"),
        ("group_commit", "NOT_COORDINATOR"),
    ]
    assert fake.commits == []
    assert fake.clients == 3  # a client whose coordinator restarted may be stuck on it


@dataclass
class FakeConsumer:
    clock: FakeClock
    answers: list[int | tuple[int, int]]
    refreshed: list[str] = field(default_factory=list)

    def get_watermark_offsets(
        self, tp: TopicPartition, timeout: float, cached: bool
    ) -> tuple[int, int]:
        assert not cached
        self.clock.now += 0.3
        answer = self.answers.pop(0)
        if isinstance(answer, int):
            raise KafkaException(KafkaError(answer, "Failed to get watermark offsets: ..."))
        return answer

    def list_topics(self, topic: str, timeout: float) -> None:
        self.refreshed.append(topic)


def test_reader_watermarks_ride_through_a_leader_change() -> None:
    clock = FakeClock()
    consumer = FakeConsumer(clock, [NOT_LEADER, KafkaError._TRANSPORT, (3, 40)])
    seen: Observed = []
    assert partition_watermarks(consumer, TOPIC, 2, 30, observer=observer(seen), clock=clock) == (
        3,
        40,
    )
    assert seen == [("watermarks", "NOT_LEADER_FOR_PARTITION"), ("watermarks", "_TRANSPORT")]
    assert consumer.refreshed == [TOPIC, TOPIC]


def test_reader_watermarks_ride_through_a_broker_behind_on_metadata() -> None:
    """A broker that has just come back in a rolling restart may answer "Unknown topic or
    partition" for a partition the metadata lists (a real cluster did, and the job died)."""
    clock = FakeClock()
    consumer = FakeConsumer(clock, [KafkaError.UNKNOWN_TOPIC_OR_PART, (3, 40)])
    seen: Observed = []
    assert partition_watermarks(consumer, TOPIC, 2, 30, observer=observer(seen), clock=clock) == (
        3,
        40,
    )
    assert seen == [("watermarks", "UNKNOWN_TOPIC_OR_PART")]


def test_reader_watermarks_give_up_after_their_own_deadline() -> None:
    clock = FakeClock()
    consumer = FakeConsumer(clock, [NOT_LEADER] * 1000)
    with pytest.raises(KafkaSourceError, match=r"measure-2: .*still failing after 1[0-9]\.\d s"):
        partition_watermarks(consumer, TOPIC, 2, 10, clock=clock)


# -- counting retries across processes ---------------------------------------------------------


@pytest.fixture
def spool() -> Iterator[RetrySpool]:
    found = RetrySpool()
    yield found
    found.close()


def test_retry_counts_from_several_processes_reach_the_metric(spool: RetrySpool) -> None:
    spool.observer()("list_offsets", "NOT_LEADER_FOR_PARTITION")
    spool.observer()("list_offsets", "NOT_LEADER_FOR_PARTITION")
    # Another process: its own file in the same directory.
    (Path(spool.directory) / "4242-other.json").write_text(
        '{"list_offsets|NOT_LEADER_FOR_PARTITION": 3, "fetch|_TRANSPORT": 1}'
    )
    assert read_spool(spool.directory) == {
        ("list_offsets", "NOT_LEADER_FOR_PARTITION"): 5,
        ("fetch", "_TRANSPORT"): 1,
    }
    assert spool_observer(spool.directory) is spool.observer()

    metrics = IngestMetrics("q", kafka_retries=spool.counts)
    family = next(m for m in metrics.collect() if m.name == "vigia_ingest_kafka_retries")
    assert {(s.labels["call"], s.labels["error"]): s.value for s in family.samples} == {
        ("list_offsets", "NOT_LEADER_FOR_PARTITION"): 5.0,
        ("fetch", "_TRANSPORT"): 1.0,
    }


def test_skipped_offsets_from_several_processes_reach_the_metric(spool: RetrySpool) -> None:
    spool.observer().skipped("measure", 3, 500)
    spool.observer().skipped("measure", 3, 20)
    spool.observer()("fetch", "_TRANSPORT")
    (Path(spool.directory) / "4242-other.json").write_text('{"skipped_offsets|measure|0": 7}')
    assert spool.skipped() == {("measure", 3): 520, ("measure", 0): 7}
    assert spool.counts() == {("fetch", "_TRANSPORT"): 1}  # skips are no retries

    metrics = IngestMetrics("q", skipped_offsets=spool.skipped)
    family = next(m for m in metrics.collect() if m.name == "vigia_ingest_skipped_offsets")
    assert {(s.labels["topic"], s.labels["partition"]): s.value for s in family.samples} == {
        ("measure", "0"): 7.0,
        ("measure", "3"): 520.0,
    }
