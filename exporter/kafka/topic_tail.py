"""The pipeline topic's tail (I/O only): its end offsets and the last records of each partition.

One assigned consumer, kept between rounds (never subscribes, never commits; its group id is a
formality of the client): per round one ListOffsets per leader for the high watermarks and a fetch
of each partition's last `TAIL_RECORDS` records, so the cost is bounded whatever the topic's size.
Not the last record alone: the HES's writers can commit rows out of their ts order, and a
partition whose newest row is followed by older ones would hide it and read as a HES ahead of the
topic, a stall. Used by `exporter.hes.watch.SourceWatcher` for the ``hes_to_kafka`` hop and the
flow verdict (`exporter.model.pipeline_flow`), which needs the end offsets read in the same round.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from vigia.common.librdkafka_log import librdkafka_logger
from vigia.exporter.model.pipeline_hops import TopicTailReading, measure_ts

librdkafka_log = librdkafka_logger("exporter.librdkafka")

TAIL_RECORDS = 100


class TopicTailError(RuntimeError):
    """The topic's last records could not be read within the deadline."""


class TopicTail:
    def __init__(self, topic: str, kafka_config: Mapping[str, str]) -> None:
        self.topic = topic
        self._consumer = Consumer(
            {
                **kafka_config,
                "client.id": "vigia-exporter-topic-tail",
                "group.id": "vigia-exporter-topic-tail",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "latest",
                # A partition is read once its end is reached, whatever the last offset holds (a
                # transaction marker is an offset without a record).
                "enable.partition.eof": True,
            },
            logger=librdkafka_log,
        )

    def read(self, timeout: float) -> TopicTailReading:
        """The summed high watermarks, and the newest measure ts among the last records."""
        deadline = time.monotonic() + timeout
        try:
            metadata = self._consumer.list_topics(self.topic, timeout=timeout)
            topic = metadata.topics.get(self.topic)
            if topic is None or topic.error is not None:
                why = "no such topic" if topic is None else topic.error
                raise TopicTailError(f"topic {self.topic!r} is not readable: {why}")
            starts: list[TopicPartition] = []
            end_offsets = 0
            for partition in sorted(topic.partitions):
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=_left(deadline), cached=False
                )
                end_offsets += high
                if high > low:
                    start = max(low, high - TAIL_RECORDS)
                    starts.append(TopicPartition(self.topic, partition, start))
            if not starts:
                return TopicTailReading(end_offsets, None)
            self._consumer.assign(starts)
            try:
                return TopicTailReading(end_offsets, self._newest(len(starts), deadline))
            finally:
                self._consumer.unassign()
        except KafkaException as exc:
            raise TopicTailError(f"{self.topic}: {exc.args[0].str()}") from exc

    def _newest(self, partitions: int, deadline: float) -> float | None:
        ended: set[int] = set()
        newest: float | None = None
        while len(ended) < partitions:
            if time.monotonic() >= deadline:
                raise TopicTailError(
                    f"{self.topic}: {partitions - len(ended)} partition(s) not read to their end "
                    "in time"
                )
            batch = self._consumer.consume(TAIL_RECORDS, timeout=min(0.5, _left(deadline)))
            for message in batch:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        ended.add(message.partition() or 0)
                    continue  # a transient fetch error: the deadline bounds it
                ts = measure_ts(message.value())
                if ts is not None and (newest is None or ts > newest):
                    newest = ts
        return newest

    def close(self) -> None:
        self._consumer.close()


def _left(deadline: float) -> float:
    return max(0.001, deadline - time.monotonic())
