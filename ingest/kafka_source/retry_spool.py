"""Retry counts from the planner and the driver to the driver's /metrics, through a local
directory.

The source's offset calls (initialOffset, latestOffset, commit) run outside the driver's Python
process, in a planner worker Spark starts per query, always on the driver's host; the job's own
Kafka calls (the preflight) run in the driver. A Python data source has no metrics channel of its
own, and the planner's runner never sends accumulator updates. Each process that retries a call
keeps its counts and rewrites one small JSON file in the directory (atomically: write, then
rename); the driver sums the files on every scrape. Retries are rare, so the writes are too.

The read tasks count into an accumulator instead (`task_counts`), which reaches the driver from
executors on any host; they use the spool only when the source was registered without one (then
executors on other hosts go uncounted: their disk is not the driver's).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import uuid
from collections import Counter
from pathlib import Path

from vigia.ingest.kafka_source.counts import RetryCounts, SkippedOffsets

log = logging.getLogger(__name__)

_SEPARATOR = "|"
# Skipped offsets share the files, under this in place of a call name (topic names have no "|").
_SKIPPED = "skipped_offsets"


class SpoolObserver:
    """A `retry.RetryObserver` that counts in this process and mirrors the counts to its file."""

    def __init__(self, directory: str) -> None:
        self._directory = Path(directory)
        self._path = self._directory / f"{os.getpid()}-{uuid.uuid4().hex}.json"
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, call: str, error: str) -> None:
        self._add(f"{call}{_SEPARATOR}{error}", 1)

    def skipped(self, topic: str, partition: int, offsets: int) -> None:
        """A read went on past `offsets` offsets that were no longer there (failOnDataLoss off)."""
        self._add(f"{_SKIPPED}{_SEPARATOR}{topic}{_SEPARATOR}{partition}", offsets)

    def _add(self, key: str, count: int) -> None:
        with self._lock:
            self._counts[key] += count
            try:
                self._directory.mkdir(parents=True, exist_ok=True)
                temporary = self._path.with_suffix(".tmp")
                temporary.write_text(json.dumps(self._counts))
                temporary.replace(self._path)
            except OSError as exc:
                log.warning("cannot record Kafka retry counts in %s: %s", self._directory, exc)


_OBSERVERS: dict[str, SpoolObserver] = {}
_OBSERVERS_LOCK = threading.Lock()


def spool_observer(directory: str) -> SpoolObserver:
    """This process's observer for ``directory`` (one file per process, however many tasks)."""
    with _OBSERVERS_LOCK:
        found = _OBSERVERS.get(directory)
        if found is None:
            found = _OBSERVERS[directory] = SpoolObserver(directory)
        return found


def _summed(directory: str) -> Counter[str]:
    total: Counter[str] = Counter()
    try:
        files = list(Path(directory).glob("*.json"))
    except OSError:
        return total
    for path in files:
        try:
            counts = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # replaced or removed while we looked; the next scrape sees it
        for key, value in counts.items():
            total[key] += int(value)
    return total


def read_spool(directory: str) -> RetryCounts:
    """The retries counted so far by every process, summed."""
    total: RetryCounts = {}
    for key, value in _summed(directory).items():
        call, _, error = key.partition(_SEPARATOR)
        if call != _SKIPPED:
            total[(call, error)] = value
    return total


def read_skipped(directory: str) -> SkippedOffsets:
    """The offsets skipped so far by every process, summed per partition."""
    total: SkippedOffsets = {}
    for key, value in _summed(directory).items():
        kind, _, where = key.partition(_SEPARATOR)
        if kind == _SKIPPED:
            topic, _, partition = where.rpartition(_SEPARATOR)
            total[(topic, int(partition))] = value
    return total


class RetrySpool:
    """The job's spool: a fresh temporary directory, removed by `close`."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="vigia-ingest-retries-")

    def observer(self) -> SpoolObserver:
        return spool_observer(self.directory)

    def counts(self) -> RetryCounts:
        return read_spool(self.directory)

    def skipped(self) -> SkippedOffsets:
        return read_skipped(self.directory)

    def close(self) -> None:
        with _OBSERVERS_LOCK:
            _OBSERVERS.pop(self.directory, None)
        shutil.rmtree(self.directory, ignore_errors=True)
