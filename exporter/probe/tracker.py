"""Probe bookkeeping: produce and round-trip latencies, replication estimate, outcomes. Pure.

Not thread-safe by itself: `ProbeRunner` serialises calls with a lock. Times are seconds from one
monotonic clock, passed in by the caller.

Lifecycle of one probe message (`message_id` unique per message):
- `sent(...)`: registered with its partition, the broker leading that partition when it was sent
  (the label of every metric), the producer's acks setting and the probe round.
- `delivered(...)`: the producer's delivery report. Success → a produce latency observation for
  (broker, acks); failure → outcome `failed` (unless it was already consumed).
- `received(...)`: the probe consumer read it → a round-trip observation for the broker and outcome
  `ok`, if it was neither failed nor given up, and arrived before its deadline (a late arrival is
  `lost`, like kminion's end-to-end "roundtrip SLA").
- `expire(now)`: a message past its deadline that was delivered but not consumed → `lost`. One whose
  delivery report has not come yet waits for it (→ `failed` on error) up to a second deadline
  period, then counts as `lost`: a producer that is still retrying is not a lost message yet.
Each message gets exactly one outcome.

Replication latency per broker: for each round and partition where both the acks=all and the acks=1
message were delivered, the difference of their produce latencies (acks=all waits for the ISR,
acks=1 only for the leader); the estimate is the median of the last `replication_window`
differences, clamped at 0 because noise can make single differences negative.

Memory: pending messages ≤ partitions × 2 × 2 deadlines / interval; histograms have fixed buckets;
replication differences ≤ `replication_window` per broker.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

ACKS = ("all", "1")
OUTCOMES = ("ok", "failed", "lost")
# Loopback and in-rack produce latencies are around a millisecond, cross-zone tens of ms.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
DEFAULT_DEADLINE_SECONDS = 10.0
DEFAULT_REPLICATION_WINDOW = 12

_K = TypeVar("_K")


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """Cumulative bucket counts (upper bound, count), the last bound being +Inf; sum; count."""

    buckets: tuple[tuple[float, int], ...]
    sum: float
    count: int


@dataclass(frozen=True, slots=True)
class ProbeStats:
    produce_latency: Mapping[tuple[int, str], HistogramSnapshot]
    """(broker, acks) → produce latency histogram."""
    roundtrip_latency: Mapping[int, HistogramSnapshot]
    replication_latency: Mapping[int, float]
    messages: Mapping[tuple[int, str], int]
    """(broker, outcome) → count; every outcome is present for every broker probed so far."""
    pending: int


class _Histogram:
    __slots__ = ("_bounds", "_counts", "_sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = tuple(bounds)
        self._counts = [0] * (len(self._bounds) + 1)
        self._sum = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect_left(self._bounds, value)] += 1
        self._sum += value

    def snapshot(self) -> HistogramSnapshot:
        cumulative, total = [], 0
        for bound, count in zip((*self._bounds, float("inf")), self._counts, strict=True):
            total += count
            cumulative.append((bound, total))
        return HistogramSnapshot(tuple(cumulative), self._sum, total)


@dataclass(slots=True)
class _Message:
    partition: int
    broker: int
    acks: str
    round_id: int
    sent_at: float
    deadline: float
    delivered: bool = False
    outcome: str | None = None


class LatencyTracker:
    def __init__(
        self,
        deadline_seconds: float = DEFAULT_DEADLINE_SECONDS,
        replication_window: int = DEFAULT_REPLICATION_WINDOW,
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> None:
        if deadline_seconds <= 0:
            raise ValueError(f"deadline_seconds must be > 0, got {deadline_seconds}")
        if replication_window < 1:
            raise ValueError(f"replication_window must be ≥ 1, got {replication_window}")
        self.deadline_seconds = deadline_seconds
        self._buckets = tuple(buckets)
        self._window = replication_window
        self._pending: dict[str, _Message] = {}
        self._produce: dict[tuple[int, str], _Histogram] = {}
        self._roundtrip: dict[int, _Histogram] = {}
        self._outcomes: dict[tuple[int, str], int] = {}
        # (round, partition) → {acks: produce latency} until both settings are known.
        self._pairs: dict[tuple[int, int], dict[str, float]] = {}
        self._pair_expiry: dict[tuple[int, int], float] = {}
        self._replication: dict[int, deque[float]] = {}

    def sent(
        self, message_id: str, *, partition: int, broker: int, acks: str, round_id: int, at: float
    ) -> None:
        if acks not in ACKS:
            raise ValueError(f"acks must be one of {ACKS}, got {acks!r}")
        self._pending[message_id] = _Message(
            partition, broker, acks, round_id, at, at + self.deadline_seconds
        )
        for outcome in OUTCOMES:
            self._outcomes.setdefault((broker, outcome), 0)

    def delivered(
        self, message_id: str, *, at: float, latency: float | None = None, error: bool = False
    ) -> None:
        """Delivery report; `latency` is the client's own measure when it has one."""
        message = self._pending.get(message_id)
        if message is None or message.delivered:
            return
        message.delivered = True
        if error:
            if message.outcome is None:
                self._resolve(message_id, message, "failed")
            else:  # consumed although the report says failed (e.g. an ack lost): stays ok
                del self._pending[message_id]
            return
        seconds = at - message.sent_at if latency is None else latency
        self._histogram(self._produce, (message.broker, message.acks)).observe(seconds)
        self._pair(message, seconds)
        if message.outcome is not None:
            del self._pending[message_id]

    def received(self, message_id: str, *, at: float) -> bool:
        """The consumer read a probe; False for unknown, failed, late or given-up messages."""
        message = self._pending.get(message_id)
        if message is None or message.outcome is not None:
            return False
        if at > message.deadline:
            self._resolve(message_id, message, "lost")
            return False
        self._histogram(self._roundtrip, message.broker).observe(at - message.sent_at)
        self._resolve(message_id, message, "ok")
        return True

    def expire(self, now: float) -> int:
        """Give up on messages past their deadline; returns how many were counted lost."""
        lost = 0
        for message_id, message in list(self._pending.items()):
            if now < message.deadline:
                continue
            if message.outcome is None:
                if not message.delivered and now < message.deadline + self.deadline_seconds:
                    continue  # the producer may still report a failure
                self._count(message.broker, "lost")
                lost += 1
            del self._pending[message_id]
        for key, expiry in list(self._pair_expiry.items()):
            if now >= expiry:
                del self._pair_expiry[key]
                self._pairs.pop(key, None)
        return lost

    def stats(self) -> ProbeStats:
        return ProbeStats(
            produce_latency={k: h.snapshot() for k, h in self._produce.items()},
            roundtrip_latency={k: h.snapshot() for k, h in self._roundtrip.items()},
            replication_latency={
                broker: max(0.0, statistics.median(diffs))
                for broker, diffs in self._replication.items()
                if diffs
            },
            messages=dict(self._outcomes),
            pending=len(self._pending),
        )

    def _resolve(self, message_id: str, message: _Message, outcome: str) -> None:
        message.outcome = outcome
        self._count(message.broker, outcome)
        if message.delivered:
            del self._pending[message_id]

    def _count(self, broker: int, outcome: str) -> None:
        self._outcomes[(broker, outcome)] = self._outcomes.get((broker, outcome), 0) + 1

    def _histogram(self, histograms: dict[_K, _Histogram], key: _K) -> _Histogram:
        histogram = histograms.get(key)
        if histogram is None:
            histogram = histograms[key] = _Histogram(self._buckets)
        return histogram

    def _pair(self, message: _Message, seconds: float) -> None:
        key = (message.round_id, message.partition)
        pair = self._pairs.setdefault(key, {})
        self._pair_expiry.setdefault(key, message.deadline)
        pair[message.acks] = seconds
        if len(pair) == len(ACKS):
            del self._pairs[key]
            del self._pair_expiry[key]
            diffs = self._replication.setdefault(message.broker, deque(maxlen=self._window))
            diffs.append(pair["all"] - pair["1"])
