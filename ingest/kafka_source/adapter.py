"""The Kafka calls the source makes besides reading: metadata, watermarks, group commits.

A thin wrapper over one confluent-kafka Consumer that never subscribes (so it never joins or
disturbs a consumer group); every failure becomes a `KafkaSourceError` with one readable sentence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from ingest.kafka_source.offsets import Offsets
from ingest.kafka_source.offsets import TopicPartition as TP

log = logging.getLogger(__name__)

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
        "log_level": 3,
        **options,
        "bootstrap.servers": bootstrap_servers,
        "group.id": group_id,
    }


def describe(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return str(exc.args[0].str())
    return str(exc)


class KafkaAdmin:
    """Metadata, watermarks and consumer-group commits through one non-subscribing consumer."""

    def __init__(self, config: Mapping[str, Any], timeout_s: float) -> None:
        self._config = dict(config)
        self._timeout_s = timeout_s
        self._consumer: Consumer | None = None
        self._closed = False

    @property
    def bootstrap_servers(self) -> str:
        return str(self._config["bootstrap.servers"])

    def _client(self) -> Consumer:
        if self._closed:
            # A late caller (an asynchronous listener) must not resurrect a client nobody closes.
            raise KafkaSourceError("the Kafka client was already closed")
        if self._consumer is None:
            self._consumer = Consumer(self._config)
        return self._consumer

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition ids; a clear error if the cluster or the topic is not there."""
        try:
            metadata = self._client().list_topics(topic, timeout=self._timeout_s)
        except KafkaException as exc:
            raise KafkaSourceError(
                f"cannot reach the Kafka cluster at {self.bootstrap_servers} "
                f"within {self._timeout_s:g} s ({describe(exc)})"
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
        """(earliest, latest) offsets of each partition. Latest honours isolation.level."""
        earliest: Offsets = {}
        latest: Offsets = {}
        client = self._client()
        for topic, partition in tps:
            try:
                low, high = client.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=self._timeout_s, cached=False
                )
            except KafkaException as exc:
                raise KafkaSourceError(
                    f"cannot read the offsets of {topic}-{partition} from {self.bootstrap_servers} "
                    f"within {self._timeout_s:g} s ({describe(exc)})"
                ) from exc
            earliest[(topic, partition)] = int(low)
            latest[(topic, partition)] = int(high)
        return earliest, latest

    def topic_watermarks(self, topics: Iterable[str]) -> tuple[Offsets, Offsets]:
        tps = [(topic, p) for topic in topics for p in self.partitions(topic)]
        return self.watermarks(tps)

    def commit(self, offsets: Mapping[TP, int]) -> None:
        """Synchronously commit ``offsets`` (next offset to read) for this client's group.id."""
        if not offsets:
            return
        tps = [TopicPartition(t, p, int(o)) for (t, p), o in sorted(offsets.items())]
        try:
            results = self._client().commit(offsets=tps, asynchronous=False)
        except KafkaException as exc:
            raise KafkaSourceError(
                f"cannot commit offsets for group {self._config['group.id']!r} ({describe(exc)})"
            ) from exc
        for tp in results or []:
            if tp.error is not None:
                raise KafkaSourceError(
                    f"group {self._config['group.id']!r} rejected the commit of "
                    f"{tp.topic}-{tp.partition} ({tp.error.str()})"
                )

    def committed(self, tps: Iterable[TP]) -> Offsets:
        """The group's committed offsets (only partitions that have one)."""
        wanted = [TopicPartition(t, p) for t, p in tps]
        try:
            got = self._client().committed(wanted, timeout=self._timeout_s)
        except KafkaException as exc:
            raise KafkaSourceError(f"cannot read committed offsets ({describe(exc)})") from exc
        return {(tp.topic, tp.partition): tp.offset for tp in got if tp.offset >= 0}

    def close(self) -> None:
        self._closed = True
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
