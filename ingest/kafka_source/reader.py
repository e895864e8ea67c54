"""Read one partition's offset range ``[start, end)`` into Arrow record batches.

Runs inside a Spark task (a Python worker). The consumer is assigned the partition at ``start``
(assign, no group membership) and reads until its position reaches ``end``. Offsets inside the range
may not exist (compaction, transaction markers, aborted transactions under read_committed), so the
loop never waits for a particular offset: it stops at the first message at or beyond ``end``, or
when the consumer reports the end of the partition at or beyond ``end``. A read that makes no
progress for ``timeout_s`` fails with a sentence saying where it stopped. Retriable errors (a broker
restarting, leadership moving) do not stop it: the consumer finds the new leader by itself.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition
from pyspark.sql.pandas.types import to_arrow_schema

from vigia.ingest.kafka_source.adapter import KafkaSourceError, partition_watermarks
from vigia.ingest.kafka_source.offsets import OffsetRange, PartitionLoss, clamp_to_available
from vigia.ingest.kafka_source.retry import RetryObserver, error_name, is_retriable
from vigia.ingest.schema import KAFKA_SOURCE_SCHEMA

log = logging.getLogger(__name__)

ARROW_SCHEMA = to_arrow_schema(KAFKA_SOURCE_SCHEMA, timezone="UTC")
"""Exactly what Spark expects of a Python source's record batches for KAFKA_SOURCE_SCHEMA."""

# Rows per record batch (and per consume call): big enough to amortise the per-batch costs of
# Arrow and of the JVM hand-over, small enough to keep a worker's memory flat.
CHUNK_ROWS = 20_000
# consume() returns early only once it has all the messages asked for; at a partition's end behind
# a gap (every transaction ends with a marker offset) it waits the whole timeout, so keep it short.
POLL_TIMEOUT_S = 0.1


def to_record_batch(topic: str, partition: int, messages: list[Message]) -> pa.RecordBatch:
    """Messages (no error events) → one batch with the columns of Spark's Kafka source."""
    size = len(messages)
    stamps = [m.timestamp() for m in messages]
    # librdkafka's timestamp types are 0 none, 1 create, 2 log-append; Kafka's (and Spark's
    # timestampType column) are -1, 0, 1. A missing timestamp becomes null rather than 1969.
    kinds = pa.array([kind - 1 for kind, _ in stamps], pa.int32())
    millis = pa.array([ms if kind else None for kind, ms in stamps], pa.int64())
    micros = millis.cast(pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC"))
    return pa.RecordBatch.from_arrays(
        [
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() for m in messages], pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), size),
            pa.repeat(pa.scalar(partition, pa.int32()), size),
            pa.array([m.offset() for m in messages], pa.int64()),
            micros,
            kinds,
        ],
        schema=ARROW_SCHEMA,
    )


def read_range(
    config: Mapping[str, Any],
    wanted: OffsetRange,
    *,
    fail_on_data_loss: bool,
    timeout_s: float,
    kafka_timeout_s: float | None = None,
    observer: RetryObserver | None = None,
    on_skip: Callable[[PartitionLoss, datetime | None], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Every message of ``wanted`` that still exists, in offset order. ``kafka_timeout_s`` bounds
    the watermark query (default ``timeout_s``); ``observer`` hears of every retry, ``on_skip`` of
    every range skipped because it is gone (only without ``fail_on_data_loss``), with the Kafka
    timestamp of the first message read after it (None when none is)."""
    with _borrowed_consumer(config) as consumer:
        low, high = partition_watermarks(
            consumer,
            wanted.topic,
            wanted.partition,
            timeout_s if kafka_timeout_s is None else kafka_timeout_s,
            observer=observer,
        )
        todo, loss = clamp_to_available(wanted, low, high)
        if loss is not None:
            if fail_on_data_loss:
                raise KafkaSourceError(
                    f"data loss: {loss.describe()}; "
                    "failOnDataLoss=false (vigia-ingest: --no-fail-on-data-loss) skips them"
                )
            log.warning("skipping lost offsets: %s", loss.describe())
        if loss is None or on_skip is None:
            if todo.size:
                yield from _consume(consumer, todo, timeout_s, observer)
            return
        # Told once the read has its first message: its timestamp bounds what the gap held.
        told = False
        for batch in _consume(consumer, todo, timeout_s, observer) if todo.size else ():
            if not told:
                on_skip(loss, batch.column("timestamp")[0].as_py())
                told = True
            yield batch
        if not told:
            on_skip(loss, None)


# Consumers between the tasks of one Python worker, by configuration: Spark reuses its workers,
# and a new consumer for each task (its threads, a connection to each broker, metadata) made every
# task wait on set-up (docs/ingest-performance.md). A consumer only ever reads what it is
# assigned, and a task always assigns its own partition.
_idle_consumers: dict[tuple[tuple[str, str], ...], Consumer] = {}


@contextmanager
def _borrowed_consumer(config: Mapping[str, Any]) -> Iterator[Consumer]:
    """An idle consumer for ``config``, or a new one; kept for the next task after a read that
    went to its end, closed after any other."""
    key = tuple(sorted((name, str(value)) for name, value in config.items()))
    consumer = _idle_consumers.pop(key, None) or Consumer(dict(config))
    try:
        yield consumer
    except BaseException:  # a failed or abandoned read: start the next one afresh
        consumer.close()
        raise
    consumer.unassign()  # stops its fetches and drops what it fetched ahead
    _idle_consumers[key] = consumer


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """A chunk is tens of thousands of Message objects, each tracked by Python's cyclic garbage
    collector, which ran a collection every 700 of them and spent more CPU than the rest of the
    read (docs/ingest-performance.md). They hold no reference cycles: reference counting frees
    them all, so the collector is paused while a chunk is built."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class _Chunk:
    """What one consume() call gave: a record batch (None without messages), where the range's
    reading stands now, and the last retriable error it reported (None without one)."""

    batch: pa.RecordBatch | None
    position: int
    error: KafkaError | None


def _next_chunk(
    consumer: Consumer, todo: OffsetRange, position: int, observer: RetryObserver | None
) -> _Chunk:
    events = consumer.consume(
        num_messages=min(todo.end - position, CHUNK_ROWS), timeout=POLL_TIMEOUT_S
    )
    messages: list[Message] = []
    last_error: KafkaError | None = None
    for event in events:
        error = event.error()
        offset = event.offset() or 0
        if error is None:
            if offset >= todo.end:
                position = todo.end
                break
            messages.append(event)
            position = offset + 1
        elif error.code() == KafkaError._PARTITION_EOF:
            # The partition ends here for now; past `end`, what is left of the range is gaps.
            if offset >= todo.end:
                position = todo.end
                break
        elif is_retriable(error):
            # The consumer goes on fetching from the new leader once it knows it.
            if observer is not None:
                observer("fetch", error_name(error))
            last_error = error
        else:
            raise KafkaSourceError(
                f"reading {todo.topic}-{todo.partition} at offset {position} failed ({error.str()})"
            )
    batch = to_record_batch(todo.topic, todo.partition, messages) if messages else None
    return _Chunk(batch, position, last_error)


def _consume(
    consumer: Consumer, todo: OffsetRange, timeout_s: float, observer: RetryObserver | None
) -> Iterator[pa.RecordBatch]:
    consumer.assign([TopicPartition(todo.topic, todo.partition, todo.start)])
    position = todo.start
    last_progress = time.monotonic()
    # Retriable errors since the last progress: the first one's time and the latest one.
    troubled_since: float | None = None
    last_error: KafkaError | None = None
    while position < todo.end:
        with _cyclic_gc_paused():
            chunk = _next_chunk(consumer, todo, position, observer)
        position = chunk.position
        if chunk.error is not None:
            troubled_since = troubled_since or time.monotonic()
            last_error = chunk.error
        if chunk.batch is not None:
            last_progress = time.monotonic()
            if troubled_since is not None and last_error is not None:
                log.info(
                    "reading %s-%d resumed at offset %d after %.1f s of retriable errors (%s)",
                    todo.topic,
                    todo.partition,
                    chunk.batch.column("offset")[0].as_py(),
                    last_progress - troubled_since,
                    last_error.str(),
                )
                troubled_since, last_error = None, None
            yield chunk.batch
        elif position < todo.end and time.monotonic() - last_progress > timeout_s:
            why = f" (last error: {last_error.str()})" if last_error is not None else ""
            raise KafkaSourceError(
                f"reading {todo.topic}-{todo.partition} offsets [{todo.start}, {todo.end}) "
                f"made no progress for {timeout_s:g} s at offset {position}{why}"
            )
