"""The source's counts as one value that adds: Kafka retries and skipped offsets, keyed.

The read tasks count into a Spark accumulator (`task_counts`), whose value must be one object that
Spark merges from every task; the planner's and the driver's own counts come from the spool
(`retry_spool`). Both end up in the same two metric families, summed here. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Final, TypeVar

Counts = Counter[tuple[str, str, str]]
"""``(RETRY, call, error)`` → retries; ``(SKIPPED, topic, partition)`` → offsets skipped (the
partition as text: one key type for both kinds). Treated as immutable: `added` makes a new one."""

RetryCounts = dict[tuple[str, str], int]
"""(call, error) → retries."""
SkippedOffsets = dict[tuple[str, int], int]
"""(topic, partition) → offsets a read skipped because retention had deleted them."""

RETRY: Final = "retry"
SKIPPED: Final = "skipped"

K = TypeVar("K")


def retry(call: str, error: str) -> Counts:
    """One retry of ``call`` after ``error``."""
    return Counter({(RETRY, call, error): 1})


def skipped(topic: str, partition: int, offsets: int) -> Counts:
    """``offsets`` offsets of a partition that a read went on past."""
    return Counter({(SKIPPED, topic, str(partition)): offsets})


def added(first: Counts, second: Counts) -> Counts:
    """A new value: the driver reads the accumulator's value from the scrape's thread while Spark's
    update thread merges task results into it, so a value, once made, is never changed."""
    total: Counts = Counter(first)
    total.update(second)
    return total


def retries_of(counts: Counts) -> RetryCounts:
    return {(call, error): n for (kind, call, error), n in counts.items() if kind == RETRY}


def skipped_of(counts: Counts) -> SkippedOffsets:
    return {
        (topic, int(partition)): n
        for (kind, topic, partition), n in counts.items()
        if kind == SKIPPED
    }


def summed(*parts: Mapping[K, int]) -> dict[K, int]:
    """Counts of the same series from several channels, added per key."""
    total: dict[K, int] = {}
    for part in parts:
        for key, n in part.items():
            total[key] = total.get(key, 0) + n
    return total
