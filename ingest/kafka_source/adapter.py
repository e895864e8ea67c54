"""The Kafka calls the source and the job make besides reading: metadata, watermarks, group commits.

A thin wrapper over a confluent-kafka AdminClient: every call has a timeout (a consumer's
synchronous commit has none and blocks ~45 s without a coordinator; closing a consumer with a
commit in flight blocks as long), it never joins a consumer group, and every failure becomes a
`KafkaSourceError` with one readable sentence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Final

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from common.kafka_diagnostics import KafkaDiagnostics, KafkaUnavailable, wait_for_metadata
from common.librdkafka_log import librdkafka_logger
from ingest.kafka_source.offsets import Offsets
from ingest.kafka_source.offsets import TopicPartition as TP

log = logging.getLogger(__name__)
LIBRDKAFKA_LOG: Final = "ingest.kafka_source.librdkafka"

ERROR_MARKER: Final = "VIGIA_KAFKA_SOURCE_ERROR"
"""Tags the message of every source error so the driver can find it in Spark's wrapped errors."""

# Read-side defaults that differ from librdkafka's. fetch.wait.max.ms: a bounded range read wants
# whatever is there now, not a fuller fetch 500 ms later (librdkafka's mock broker always waits the
# full time, which capped reads at ~60k msgs/s). Larger partition fetches mean fewer round trips.
READER_DEFAULTS: Final = {
    "fetch.wait.max.ms": "10",
    "max.partition.fetch.bytes": str(8 * 1024 * 1024),
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "true",
    "auto.offset.reset": "error",
    "isolation.level": "read_committed",
}


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


class KafkaAdmin:
    """Metadata, watermarks and the offsets of consumer group ``group_id``."""

    def __init__(
        self, bootstrap_servers: str, options: Mapping[str, str], group_id: str, timeout_s: float
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self._diagnostics = KafkaDiagnostics(options, LIBRDKAFKA_LOG)
        self._config = {
            **admin_config(bootstrap_servers, options),
            **self._diagnostics.client_config(),
        }
        self._timeout_s = timeout_s
        self._client: AdminClient | None = None
        self._closed = False

    def _admin(self) -> AdminClient:
        if self._closed:
            # A late caller (an asynchronous listener) must not resurrect a client nobody closes.
            raise KafkaSourceError("the Kafka client was already closed")
        if self._client is None:
            self._client = AdminClient(self._config)
        return self._client

    def _result(self, future: Future[Any], what: str) -> Any:
        try:
            return future.result(timeout=self._timeout_s + 1)
        except KafkaException as exc:
            raise KafkaSourceError(f"{what} ({describe(exc)})") from exc
        except TimeoutError as exc:
            raise KafkaSourceError(f"{what} (no answer within {self._timeout_s:g} s)") from exc

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition ids; a clear error if the cluster or the topic is not there."""
        try:
            # All topics: asking for one by name may create it (auto.create.topics.enable).
            metadata = wait_for_metadata(self._admin(), self._diagnostics, self._timeout_s)
        except KafkaUnavailable as exc:
            raise KafkaSourceError(
                exc.sentence(self.bootstrap_servers, self._timeout_s, "the Kafka cluster")
            ) from exc
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            why = f" ({found.error.str()})" if found is not None and found.error else ""
            raise KafkaSourceError(
                f"topic {topic!r} does not exist on the Kafka cluster at "
                f"{self.bootstrap_servers}{why}"
            )
        return sorted(found.partitions)

    def watermarks(self, tps: Iterable[TP]) -> tuple[Offsets, Offsets]:
        """(earliest, latest) offsets of each partition; latest is the last stable offset, as a
        read_committed consumer sees it. One ListOffsets round per leader broker and kind."""
        wanted = [TopicPartition(topic, partition) for topic, partition in tps]
        found: list[Offsets] = []
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
            futures = self._admin().list_offsets(
                {tp: spec for tp in wanted},
                isolation_level=IsolationLevel.READ_COMMITTED,
                request_timeout=self._timeout_s,
            )
            offsets: Offsets = {}
            for tp, future in futures.items():
                result = self._result(
                    future,
                    f"cannot read the offsets of {tp.topic}-{tp.partition} from "
                    f"{self.bootstrap_servers} within {self._timeout_s:g} s",
                )
                offsets[(tp.topic, tp.partition)] = int(result.offset)
            found.append(offsets)
        return found[0], found[1]

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
        futures = self._admin().alter_consumer_group_offsets(
            [request], request_timeout=self._timeout_s
        )
        result = self._result(
            futures[self.group_id], f"cannot commit offsets for group {self.group_id!r}"
        )
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                raise KafkaSourceError(
                    f"group {self.group_id!r} rejected the commit of {tp.topic}-{tp.partition} "
                    f"({tp.error.str()})"
                )

    def committed(self, tps: Iterable[TP]) -> Offsets:
        """The group's committed offsets (only partitions that have one)."""
        request = ConsumerGroupTopicPartitions(
            self.group_id, [TopicPartition(t, p) for t, p in tps]
        )
        futures = self._admin().list_consumer_group_offsets(
            [request], request_timeout=self._timeout_s
        )
        result = self._result(
            futures[self.group_id], f"cannot read the offsets of group {self.group_id!r}"
        )
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or []
            if tp.offset >= 0
        }

    def close(self) -> None:
        """Drop the client (an AdminClient has nothing to flush) and refuse later calls."""
        self._closed = True
        self._client = None
