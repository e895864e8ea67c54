"""The Kafka calls the source and the job make besides reading: metadata, watermarks, group commits.

A thin wrapper over a confluent-kafka AdminClient: every call has a deadline (a consumer's
synchronous commit has none and blocks ~45 s without a coordinator; closing a consumer with a
commit in flight blocks as long), retries what a broker restart makes fail for a while
(`ingest.kafka_source.retry`), never joins a consumer group, and every failure becomes a
`KafkaSourceError` with one readable sentence. The only module of the source that calls Kafka
besides the readers' fetch loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from vigia.common.kafka_diagnostics import KafkaDiagnostics, KafkaUnavailable, wait_for_topic
from vigia.common.librdkafka_log import librdkafka_logger
from vigia.ingest.kafka_source.offsets import Offsets
from vigia.ingest.kafka_source.offsets import TopicPartition as TP
from vigia.ingest.kafka_source.retry import (
    LEADERLESS,
    CallFailed,
    Clock,
    Failure,
    GaveUp,
    RetryObserver,
    RetryPolicy,
    retrying,
)

log = logging.getLogger(__name__)
LIBRDKAFKA_LOG: Final = "vigia.ingest.kafka_source.librdkafka"

T = TypeVar("T")

ERROR_MARKER: Final = "VIGIA_KAFKA_SOURCE_ERROR"
"""Tags the message of every source error so the driver can find it in Spark's wrapped errors."""

# Read-side defaults that differ from librdkafka's. fetch.wait.max.ms: a bounded range read wants
# whatever is there now, not a fuller fetch 500 ms later (librdkafka's mock broker always waits the
# full time, which capped reads at ~60k msgs/s). Larger partition fetches mean fewer round trips.
READER_DEFAULTS: Final = {
    "fetch.wait.max.ms": "10",
    "max.partition.fetch.bytes": str(8 * 1024 * 1024),
    # Once queued.min.messages (100,000) wait in the consumer's queue, librdkafka pauses the
    # partition's fetches for this long (default 1,000 ms). A reader drains 20,000 at a time, so
    # with the default it stalled ~1 s per 100,000 messages: 200,000 messages took 1.23 s instead
    # of 0.20 s (docs/ingest-performance.md).
    "fetch.queue.backoff.ms": "10",
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "true",
    "auto.offset.reset": "error",
    "isolation.level": "read_committed",
}


NO_OFFSET_IN_ANSWER: Final = KafkaError(
    KafkaError.LEADER_NOT_AVAILABLE, "the broker answered without an offset (leader gone?)"
)


class KafkaSourceError(RuntimeError):
    """A Kafka failure the job reports as one sentence (unreachable cluster, missing topic, ...)."""

    def __init__(self, sentence: str) -> None:
        super().__init__(f"{ERROR_MARKER}: {sentence}")
        self.sentence = sentence


def consumer_config(
    bootstrap_servers: str, options: Mapping[str, str], group_id: str
) -> dict[str, Any]:
    """librdkafka settings: our read defaults, then the user's (SASL/SSL, ...) on top."""
    return {
        **READER_DEFAULTS,
        "logger": librdkafka_logger(LIBRDKAFKA_LOG),
        **options,
        "bootstrap.servers": bootstrap_servers,
        "group.id": group_id,
    }


def admin_config(bootstrap_servers: str, options: Mapping[str, str]) -> dict[str, Any]:
    """The user's settings (SASL/SSL, ...) for an admin client; consumer-only ones it ignores."""
    return {
        "logger": librdkafka_logger(LIBRDKAFKA_LOG),
        **options,
        "bootstrap.servers": bootstrap_servers,
    }


def describe(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return str(exc.args[0].str())
    return str(exc)


def kafka_error(exc: BaseException) -> KafkaError:
    """The KafkaError inside an exception from confluent-kafka (a timeout for anything else)."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return KafkaError(KafkaError._TIMED_OUT, str(exc) or "no answer in time")


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK: Final = SystemClock()

AdminFactory = Callable[[dict[str, Any]], Any]
"""Builds the admin client from its settings: confluent-kafka's AdminClient, or a test's fake."""


def partition_watermarks(
    consumer: Any,
    topic: str,
    partition: int,
    timeout_s: float,
    *,
    observer: RetryObserver | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> tuple[int, int]:
    """A reader's (low, high) watermarks of one partition from its leader, retried while the
    leadership moves (`retry`); ``consumer`` is a confluent-kafka Consumer."""
    tp = TopicPartition(topic, partition)

    def attempt(timeout: float) -> tuple[int, int]:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout, cached=False)
        except KafkaException as exc:
            error = kafka_error(exc)
            failure = Failure(f"{topic}-{partition}", error, error.code() in LEADERLESS)
            raise CallFailed([failure]) from exc
        return int(low), int(high)

    def refresh(timeout: float) -> None:
        consumer.list_topics(topic, timeout=timeout)

    try:
        return retrying(
            "watermarks",
            attempt,
            RetryPolicy(timeout_s),
            clock,
            between=refresh,
            observer=observer,
        )
    except GaveUp as exc:
        raise KafkaSourceError(f"cannot read the watermarks: {exc.sentence}") from exc


class KafkaAdmin:
    """Metadata, watermarks and the offsets of consumer group ``group_id``.

    Every call retries what a broker restart makes fail for a while (`retry`), within
    ``timeout_s``; ``observer`` hears of each retry (the job counts them in a metric).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        options: Mapping[str, str],
        group_id: str,
        timeout_s: float,
        *,
        observer: RetryObserver | None = None,
        clock: Clock = SYSTEM_CLOCK,
        client_factory: AdminFactory = AdminClient,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self._diagnostics = KafkaDiagnostics(options, LIBRDKAFKA_LOG)
        self._config = {
            **admin_config(bootstrap_servers, options),
            **self._diagnostics.client_config(),
        }
        self._timeout_s = timeout_s
        self._policy = RetryPolicy(timeout_s)
        self._observer = observer
        self._clock = clock
        self._client_factory = client_factory
        self._client: Any = None
        self._closed = False

    def _admin(self) -> Any:
        if self._closed:
            # A late caller (an asynchronous listener) must not resurrect a client nobody closes.
            raise KafkaSourceError("the Kafka client was already closed")
        if self._client is None:
            self._client = self._client_factory(self._config)
        return self._client

    def _retrying(self, call: str, attempt: Callable[[float], T]) -> T:
        return retrying(
            call,
            attempt,
            self._policy,
            self._clock,
            between=self._reconnect,
            observer=self._observer,
        )

    def _reconnect(self, timeout: float) -> None:
        """Before a retry: a new client, with fresh metadata. An admin client whose group
        coordinator restarted kept timing out on it (librdkafka 2.16 on the mock cluster) while a
        new one got through at once; the cost, a connection per retry, is only paid in trouble."""
        self._client = None
        # All topics: asking for one by name may create it (auto.create.topics.enable).
        self._admin().list_topics(timeout=timeout)

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition ids; a clear error if the cluster or the topic is not there."""

        def attempt(timeout: float) -> list[int]:
            try:
                # All topics: asking for one by name may create it (auto.create.topics.enable).
                # Asked in slices with librdkafka's callbacks served in between, so that an
                # authentication or TLS failure ends the wait at once.
                found = wait_for_topic(self._admin(), self._diagnostics, timeout, topic)
            except KafkaUnavailable as exc:
                if not exc.timed_out:  # authentication or TLS: no retry can fix it
                    raise KafkaSourceError(
                        exc.sentence(self.bootstrap_servers, timeout, "the Kafka cluster")
                    ) from exc
                raise CallFailed([Failure("", kafka_error(exc.error or exc))]) from exc
            if found is None:
                raise KafkaSourceError(
                    f"topic {topic!r} does not exist on the Kafka cluster at "
                    f"{self.bootstrap_servers} (waited {timeout:g} s for it)"
                )
            return sorted(found.partitions)

        try:
            return self._retrying("metadata", attempt)
        except GaveUp as exc:
            raise KafkaSourceError(
                f"cannot reach the Kafka cluster at {self.bootstrap_servers}: "
                f"{self._diagnostics.explain(exc.sentence)}"
            ) from exc

    def watermarks(self, tps: Iterable[TP]) -> tuple[Offsets, Offsets]:
        """(earliest, latest) offsets of each partition; latest is the last stable offset, as a
        read_committed consumer sees it. One ListOffsets round per leader broker and kind."""
        wanted = [TopicPartition(topic, partition) for topic, partition in tps]
        return (
            self._list_offsets("earliest", OffsetSpec.earliest(), wanted),
            self._list_offsets("latest", OffsetSpec.latest(), wanted),
        )

    def _list_offsets(self, kind: str, spec: OffsetSpec, wanted: list[TopicPartition]) -> Offsets:
        """A retry asks again only for the partitions that failed."""
        offsets: Offsets = {}

        def attempt(timeout: float) -> None:
            pending = [tp for tp in wanted if (tp.topic, tp.partition) not in offsets]
            futures = self._admin().list_offsets(
                {tp: spec for tp in pending},
                isolation_level=IsolationLevel.READ_COMMITTED,
                request_timeout=timeout,
            )
            failures: list[Failure] = []
            for tp, future in futures.items():
                where = f"{tp.topic}-{tp.partition}"
                try:
                    result = future.result(timeout=timeout + 1)
                except (KafkaException, TimeoutError) as exc:
                    error = kafka_error(exc)
                    failures.append(Failure(where, error, error.code() in LEADERLESS))
                    continue
                if result.offset < 0:
                    # What the admin client answers when the leader it asked went away.
                    failures.append(Failure(where, NO_OFFSET_IN_ANSWER))
                    continue
                offsets[(tp.topic, tp.partition)] = int(result.offset)
            if failures:
                raise CallFailed(failures)

        try:
            self._retrying("list_offsets", attempt)
        except GaveUp as exc:
            raise KafkaSourceError(
                f"cannot read the {kind} offsets from {self.bootstrap_servers}: {exc.sentence}"
            ) from exc
        return offsets

    def topic_watermarks(self, topics: Iterable[str]) -> tuple[Offsets, Offsets]:
        return self.watermarks([(topic, p) for topic in topics for p in self.partitions(topic)])

    def commit(self, offsets: Mapping[TP, int]) -> None:
        """Set the group's committed offsets (next offset to read). The group must have no active
        member, as for any commit from outside the group; the job's group never has one."""
        if not offsets:
            return
        request = ConsumerGroupTopicPartitions(
            self.group_id, [TopicPartition(t, p, int(o)) for (t, p), o in sorted(offsets.items())]
        )
        group = f"group {self.group_id!r}"

        def attempt(timeout: float) -> None:
            futures = self._admin().alter_consumer_group_offsets([request], request_timeout=timeout)
            try:
                result = futures[self.group_id].result(timeout=timeout + 1)
            except (KafkaException, TimeoutError) as exc:
                raise CallFailed([Failure(group, kafka_error(exc))]) from exc
            failures = [
                Failure(f"{group} {tp.topic}-{tp.partition}", tp.error)
                for tp in result.topic_partitions or []
                if tp.error is not None
            ]
            if failures:
                raise CallFailed(failures)

        try:
            self._retrying("group_commit", attempt)
        except GaveUp as exc:
            raise KafkaSourceError(f"cannot commit the offsets: {exc.sentence}") from exc

    def committed(self, tps: Iterable[TP]) -> Offsets:
        """The group's committed offsets (only partitions that have one)."""
        request = ConsumerGroupTopicPartitions(
            self.group_id, [TopicPartition(t, p) for t, p in tps]
        )
        futures = self._admin().list_consumer_group_offsets(
            [request], request_timeout=self._timeout_s
        )
        try:
            result = futures[self.group_id].result(timeout=self._timeout_s + 1)
        except (KafkaException, TimeoutError) as exc:
            raise KafkaSourceError(
                f"cannot read the offsets of group {self.group_id!r} ({describe(exc)})"
            ) from exc
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or []
            if tp.offset >= 0
        }

    def close(self) -> None:
        """Drop the client (an AdminClient has nothing to flush) and refuse later calls."""
        self._closed = True
        self._client = None
