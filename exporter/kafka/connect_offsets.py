"""A source connector's committed offset, read from Kafka Connect's offsets topic (I/O only).

Connect's distributed workers keep every source connector's offsets in a compacted topic
(`offset.storage.topic` of the worker config, `cdc-connect-offsets` in
docker/connect/worker-distributed.properties): key ``["<connector>", {<source partition>}]``,
value the offset as JSON (Debezium MySQL: ``{"file", "pos", "ts_sec", ...}``), a null value when
the offset was reset. Reading it needs no Connect worker: the margin stays known while Connect is
down, which is when it matters.

One assigned consumer kept across rounds (no group membership, no commits): the first round reads
the topic from its start, the later ones only what was appended since, to the high watermarks of
that round; the last value per key wins, as compaction would leave it. The cost is the topic's
size once (a few KB a connector after compaction), then the offsets Connect commits meanwhile
(one small record per `offset.flush.interval.ms`, 5 s here, while the connector moves).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from vigia.common.librdkafka_log import librdkafka_logger
from vigia.exporter.model.binlog import OffsetFormatError, SourceOffset, offset_owner, parse_offset

librdkafka_log = librdkafka_logger("exporter.librdkafka")


class ConnectOffsetsError(RuntimeError):
    """The offsets topic could not be read to its end within the deadline, or held garbage."""


class ConnectOffsets:
    def __init__(self, topic: str, connector: str, kafka_config: Mapping[str, str]) -> None:
        self.topic = topic
        self.connector = connector
        self._consumer = Consumer(
            {
                **kafka_config,
                "client.id": "vigia-exporter-connect-offsets",
                "group.id": "vigia-exporter-connect-offsets",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
            },
            logger=librdkafka_log,
        )
        self._next: dict[int, int] = {}  # per partition: the next offset to read
        # The connector's keys (its source partitions) → (record timestamp, value JSON).
        self._values: dict[str, tuple[int, Any]] = {}

    def read(self, timeout: float) -> SourceOffset | None:
        """The connector's latest committed offset; None when it has none."""
        deadline = time.monotonic() + timeout
        try:
            metadata = self._consumer.list_topics(self.topic, timeout=timeout)
            topic = metadata.topics.get(self.topic)
            if topic is None or topic.error is not None:
                why = "no such topic" if topic is None else topic.error
                raise ConnectOffsetsError(f"offsets topic {self.topic!r} is not readable: {why}")
            ends: dict[int, int] = {}
            for partition in sorted(topic.partitions):
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=_left(deadline), cached=False
                )
                if self._next.get(partition, low) < high:
                    ends[partition] = high
            if ends:
                self._read_to(ends, deadline)
        except KafkaException as exc:
            raise ConnectOffsetsError(f"{self.topic}: {exc.args[0].str()}") from exc
        latest = max(self._values.values(), key=lambda v: v[0], default=None)
        try:
            return None if latest is None else parse_offset(latest[1])
        except OffsetFormatError as exc:
            raise ConnectOffsetsError(f"{self.topic}, connector {self.connector}: {exc}") from exc

    def _read_to(self, ends: dict[int, int], deadline: float) -> None:
        self._consumer.assign(
            [TopicPartition(self.topic, p, self._next.get(p, OFFSET_BEGINNING)) for p in ends]
        )
        try:
            pending = set(ends)
            while pending:
                if time.monotonic() >= deadline:
                    raise ConnectOffsetsError(
                        f"{self.topic}: {len(pending)} partition(s) not read to their end in time"
                    )
                for message in self._consumer.consume(500, timeout=min(0.5, _left(deadline))):
                    partition = message.partition() or 0
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            pending.discard(partition)
                        continue  # a transient fetch error: the deadline bounds it
                    offset = message.offset() or 0
                    self._next[partition] = offset + 1
                    self._note(message.key(), message.value(), message.timestamp()[1])
                    if offset + 1 >= ends[partition]:
                        pending.discard(partition)
        finally:
            self._consumer.unassign()

    def _note(self, key: bytes | None, value: bytes | None, timestamp: int) -> None:
        try:
            owner = offset_owner(json.loads(key)) if key else None
        except ValueError:
            return  # not Connect's: not ours to judge
        if owner != self.connector:
            return
        name = key.decode("utf-8", "replace") if key else ""
        if value is None:
            self._values.pop(name, None)
            return
        try:
            self._values[name] = (timestamp, json.loads(value))
        except ValueError:
            self._values[name] = (timestamp, value.decode("utf-8", "replace"))

    def close(self) -> None:
        self._consumer.close()


def _left(deadline: float) -> float:
    return max(0.001, deadline - time.monotonic())
