"""The answers of slow-changing phases, reused for a while instead of asked every collection.

Log-dir sizes (DescribeLogDirs), topic configs (DescribeConfigs) and the KRaft quorum and racks
(DescribeQuorum, DescribeCluster) change slowly, yet DescribeLogDirs alone (every replica of every
broker, decoded by kafka-python) was the largest Python cost of a collection at 2,000 partitions
(docs/performance.md). An answer is reused while all of these hold:
- it is younger than `--slow-phase-interval` (a minute by default: every fourth collection);
- it was complete: a phase that failed, or a broker that did not answer, is asked again at the
  next collection, never served from an older answer;
- what it depends on in this collection's metadata is unchanged (`key`): the live brokers for all
  three, and the topics (with their partitions and replicas, for the sizes). A broker that stops or
  comes back, a new topic or partition, a reassignment: the phase is asked again at once.
So a broker's up/down state (from the metadata, every collection) and a new topic's size and
configs are never late; a config change or an existing partition's growth shows up to the
interval late. The adapter asks the sizes every collection while a topic has a size limit (its
retention margin needs sizes as fresh as the offsets).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Answer:
    key: Hashable
    value: Any
    asked_at: float
    duration: float  # seconds the phase took when it was asked, reported while it is reused


class SlowPhases:
    """Thread-safe: the phases run concurrently on the collection pool."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._answers: dict[str, Answer] = {}

    def reusable(self, phase: str, key: Hashable) -> Answer | None:
        """The phase's last complete answer, when it is young enough and asked for `key`."""
        with self._lock:
            answer = self._answers.get(phase)
        if answer is None or answer.key != key:
            return None
        if self._clock() - answer.asked_at >= self._interval:
            return None
        return answer

    def keep(self, phase: str, key: Hashable, value: Any, duration: float, complete: bool) -> None:
        """Records a fresh answer; an incomplete one is forgotten, so the next collection asks."""
        with self._lock:
            if complete and self._interval > 0:
                self._answers[phase] = Answer(key, value, self._clock() - duration, duration)
            else:
                self._answers.pop(phase, None)
