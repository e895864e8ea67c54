"""Reads the first record at or after committed offsets, for lag seconds
(exporter/model/record_time.py).

One long-lived confluent-kafka Consumer, never subscribed: it is assigned the (topic, partition,
offset)s of a collection, and librdkafka sends one Fetch per leader broker carrying all of that
broker's partitions. `max.partition.fetch.bytes` is small so that each partition returns about one
record batch; a partition is unassigned as soon as its first record arrives, so nothing more is
fetched for it. The group id is never joined and nothing is committed (`enable.auto.commit` off):
it only exists because librdkafka requires one. `auto.offset.reset=error` makes an offset deleted
meanwhile an error for that partition instead of a jump. `read_uncommitted` reads up to the high
watermark, the offset lag's end, without waiting for open transactions.

Runs after the other phases of a collection, inside its timeout, and never fails it: what is not
read in time falls back to the offset history (docs/lag.md). Offsets nothing else answers (all of
them after a start) may use what is left of the collection's timeout, the others
`--lag-record-timeout`. Its outcome is logged when it changes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, TopicPartition

from vigia.common.librdkafka_log import librdkafka_logger
from vigia.exporter.kafka.adapter import CLIENT_ID, error_text
from vigia.exporter.model.record_time import (
    PARTITION_BYTES,
    RESPONSE_BYTES,
    TPO,
    RecordBudget,
    lagging_partitions,
    plan_reads,
)
from vigia.exporter.model.snapshot import ClusterSnapshot, RecordTime
from vigia.exporter.model.state import ExporterState

log = logging.getLogger(__name__)
librdkafka_log = librdkafka_logger("exporter.librdkafka")

PHASE = "record_times"  # its key in the snapshot's durations
GROUP_ID = "vigia-exporter-record-times"
# Below this much time left in the collection, reading is skipped rather than started.
MIN_SECONDS = 0.1
# Left to the collection when first reads use the rest of its timeout: unassigning and handing
# the snapshot back happen after the read's deadline.
RESERVE_SECONDS = 0.5
_POLL_SECONDS = 0.2


def _default_consumer(config: Mapping[str, Any]) -> Any:
    return Consumer(dict(config))


class RecordTimeReader:
    """The record-times step of a collection: `reader(snapshot, previous_state, seconds_left)`."""

    def __init__(
        self,
        bootstrap_servers: str,
        options: Mapping[str, str],
        budget: RecordBudget,
        *,
        consumer_factory: Callable[[Mapping[str, Any]], Any] = _default_consumer,
    ) -> None:
        self.budget = budget
        self._config: dict[str, Any] = {
            "client.id": f"{CLIENT_ID}-record-times",
            "logger": librdkafka_log,
            **options,
            "bootstrap.servers": bootstrap_servers,
            "group.id": GROUP_ID,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
            "isolation.level": "read_uncommitted",
            "enable.partition.eof": False,
            "max.partition.fetch.bytes": PARTITION_BYTES,
            "fetch.max.bytes": RESPONSE_BYTES,
            # librdkafka otherwise waits 1 s before fetching a partition whose queue is "full".
            "fetch.queue.backoff.ms": 0,
        }
        self._factory = consumer_factory
        self._consumer: Any = None
        self._lock = threading.Lock()
        self._last_problem: str | None = None
        # Asked for and not answered at the last read; missed at two reads in a row (failing).
        self._missed: frozenset[TPO] = frozenset()
        self._failing: frozenset[TPO] = frozenset()

    def close(self) -> None:
        # Waits for a read in progress, which its own timeout bounds.
        if not self._lock.acquire(timeout=self.budget.seconds + 1):
            log.debug("record-times consumer still reading at shutdown: left to the process exit")
            return
        try:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
        except Exception as exc:  # closing is best effort
            log.debug("closing the record-times consumer: %s", error_text(exc))
        finally:
            self._lock.release()

    def __call__(
        self, snapshot: ClusterSnapshot, previous: ExporterState | None, seconds_left: float
    ) -> ClusterSnapshot:
        if self.budget.partitions == 0 or not snapshot.has_metadata:
            return snapshot
        lagging = lagging_partitions(snapshot)
        plan = plan_reads(
            lagging,
            previous.record_times if previous is not None else {},
            previous.lag_seconds if previous is not None else {},
            previous.lag_seconds_methods if previous is not None else {},
            self.budget.partitions,
            self._failing,
        )
        targets = plan.targets
        if not targets:
            return _timed(snapshot, 0.0)
        if plan.first:
            timeout = max(min(self.budget.seconds, seconds_left), seconds_left - RESERVE_SECONDS)
        else:
            timeout = min(self.budget.seconds, seconds_left)
        if timeout < MIN_SECONDS:
            self._outcome("no time left in the collection timeout to read record timestamps")
            return _timed(snapshot, 0.0)
        started = time.monotonic()
        reads, failures = self.read(targets, timeout)
        elapsed = time.monotonic() - started
        answered = {(r.topic, r.partition, r.offset) for r in reads}
        missed = frozenset(targets) - answered
        # Failing until answered or no longer wanted, also while the budget leaves it unasked.
        wanted = {(t, p, item.committed) for (_, t, p), item in lagging.items()}
        self._failing = ((self._failing - answered) | (self._missed & missed)) & wanted
        self._missed = missed
        if not reads and failures:
            self._outcome(f"reading record timestamps failed: {failures[0]}")
        else:
            self._outcome(None)
        log.debug(
            "record timestamps: %d of %d read (%d nothing else answered) in %.3f s, %d failed",
            len(reads),
            len(targets),
            len(plan.first),
            elapsed,
            len(failures),
        )
        return replace(_timed(snapshot, elapsed), record_times=reads)

    def read(
        self, targets: Sequence[TPO], timeout: float
    ) -> tuple[tuple[RecordTime, ...], list[str]]:
        """The first record at or after each (topic, partition, offset), read within `timeout`;
        the failures as text (a partition missing from both was not answered in time)."""
        if not self._lock.acquire(timeout=timeout):
            return (), ["the previous read is still running"]
        try:
            return self._read(targets, time.monotonic() + timeout)
        finally:
            self._lock.release()

    def _read(
        self, targets: Sequence[TPO], deadline: float
    ) -> tuple[tuple[RecordTime, ...], list[str]]:
        # A partition is assigned once at a time: groups at different offsets of one partition
        # are read in successive rounds, within the same deadline.
        rounds: list[dict[tuple[str, int], int]] = []
        for t, p, offset in targets:
            free = next((r for r in rounds if (t, p) not in r), None)
            if free is None:
                free = {}
                rounds.append(free)
            free[(t, p)] = offset
        reads: list[RecordTime] = []
        failures: list[str] = []
        try:
            if self._consumer is None:
                self._consumer = self._factory(self._config)
        except Exception as exc:
            return (), [error_text(exc)]
        for wanted in rounds:
            if time.monotonic() >= deadline:
                break
            found, failed = self._round(self._consumer, wanted, deadline)
            reads.extend(found)
            failures.extend(failed)
        return tuple(reads), failures

    def _round(
        self, consumer: Any, wanted: Mapping[tuple[str, int], int], deadline: float
    ) -> tuple[list[RecordTime], list[str]]:
        found: dict[tuple[str, int], RecordTime] = {}
        failed: dict[tuple[str, int], str] = {}
        general: list[str] = []
        try:
            consumer.incremental_assign([TopicPartition(t, p, o) for (t, p), o in wanted.items()])
            while len(found) + len(failed) < len(wanted):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                done = []
                for msg in consumer.consume(len(wanted), min(left, _POLL_SECONDS)):
                    key = (msg.topic(), msg.partition())
                    if key not in wanted:
                        if msg.error() is not None:
                            general.append(error_text(msg.error()))
                        continue
                    if key in found or key in failed:
                        continue  # fetched before it was unassigned
                    if msg.error() is not None:
                        failed[key] = f"{key[0]}-{key[1]}: {error_text(msg.error())}"
                    elif msg.offset() >= wanted[key]:
                        kind, timestamp = msg.timestamp()
                        known = kind != TIMESTAMP_NOT_AVAILABLE and timestamp >= 0
                        found[key] = RecordTime(
                            key[0], key[1], wanted[key], msg.offset(), timestamp if known else None
                        )
                    else:
                        continue
                    done.append(TopicPartition(key[0], key[1]))
                if done:
                    consumer.incremental_unassign(done)
        except Exception as exc:
            general.append(error_text(exc))
        finally:
            try:
                consumer.unassign()
            except Exception as exc:
                general.append(error_text(exc))
        return list(found.values()), [*failed.values(), *general]

    def _outcome(self, problem: str | None) -> None:
        """Logs a state change only: failing (with the first reason) or working again."""
        if problem == self._last_problem:
            return
        if problem is not None and self._last_problem is None:
            log.warning("%s; lag seconds fall back to the offset history (docs/lag.md)", problem)
        elif problem is None:
            log.info("record timestamps read again; lag seconds use them where read")
        self._last_problem = problem


def _timed(snapshot: ClusterSnapshot, elapsed: float) -> ClusterSnapshot:
    """The step's duration in every collection it runs in, 0 when it has nothing to read: its
    series does not come and go with the reads."""
    durations = dict(snapshot.durations)
    durations[PHASE] = elapsed
    if "total" in durations:
        durations["total"] += elapsed
    return replace(snapshot, durations=MappingProxyType(durations))
