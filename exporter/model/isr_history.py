"""ISR history: since when each replica has been out of the ISR, and observed shrinks/expands.

Pure logic, no I/O. Kafka's own `IsrShrinksPerSec` stays 0 in KRaft when the controller removes a
stopped broker from the ISRs (seen in tests/fixtures/kafka-4.0-3node: 67 ISRs shrank with broker 1
down, every `isrshrinks_total` stayed 0), so the exporter's own observation of consecutive
metadata is the reliable source.

Per replica (topic, partition, broker) the tracker remembers when it left the ISR:
- A replica seen in the ISR at the previous observation of its partition and out of it now left
  somewhere in between; the estimate is the midpoint of the two observation times, so
  `out_of_sync_seconds` is off by at most half the gap between them (half a collection interval).
- A replica already out of the ISR the first time its partition is observed (exporter start, new
  partition, replica added by a reassignment) is counted from that first observation: a lower bound.
- `out_of_sync_seconds` is 0 for replicas in the ISR.

Counters, per broker owning the replica, monotonic for the life of the process:
- a shrink: a replica in the ISR at the previous observation of its partition, out of it now;
- an expand: a replica out of the ISR at the previous observation, in it now.
Each replica counts once (two replicas leaving one partition's ISR at once are two shrinks, where
Kafka's broker meter would count one ISR change). Nothing is counted at a partition's first
observation. Replicas removed from a partition and partitions absent from a pruning `update` are
forgotten; the counters keep their totals.

Use from the collection loop (one tracker for the life of the process)::

    isr = IsrTracker()
    # every collection, from the metadata phase:
    isr.update(collected_at, {(topic, partition): (replicas, isr), ...}, prune=metadata_ok)
    isr.out_of_sync_seconds(now=collected_at)  # {(topic, partition, broker): seconds}, 0 if in sync
    isr.shrinks, isr.expands                    # {broker: count} → counters
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

OUT_OF_SYNC_SECONDS_HELP = (
    "Seconds since this replica left the ISR, 0 when in sync. From consecutive exporter "
    "collections: the leave time is the midpoint between the last collection that saw it in sync "
    "and the first that did not (error ≤ half a collection interval); counted from the exporter's "
    "first sight when it was already out."
)
ISR_SHRINKS_HELP = (
    "Replicas of this broker seen leaving a partition's ISR between two exporter collections "
    "(one per replica; Kafka's own IsrShrinksPerSec stays 0 in KRaft when a broker stops)."
)
ISR_EXPANDS_HELP = (
    "Replicas of this broker seen joining a partition's ISR between two exporter collections "
    "(one per replica)."
)

PartitionKey = tuple[str, int]
ReplicaKey = tuple[str, int, int]


@dataclass(slots=True)
class _PartitionState:
    seen_at: float
    replicas: tuple[int, ...]
    out_since: dict[int, float] = field(default_factory=dict)


class IsrTracker:
    """Out-of-sync time per replica and shrink/expand counts per broker, from successive views."""

    def __init__(self) -> None:
        self._partitions: dict[PartitionKey, _PartitionState] = {}
        self._shrinks: dict[int, int] = {}
        self._expands: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._partitions)

    @property
    def shrinks(self) -> Mapping[int, int]:
        return dict(self._shrinks)

    @property
    def expands(self) -> Mapping[int, int]:
        return dict(self._expands)

    def update(
        self,
        collected_at: float,
        partitions: Mapping[PartitionKey, tuple[Sequence[int], Sequence[int]]],
        *,
        prune: bool = True,
    ) -> None:
        """Feed one collection's {(topic, partition): (replicas, isr)}."""
        for key, (replicas, isr) in partitions.items():
            replicas_now = tuple(replicas)
            isr_now = frozenset(isr)
            previous = self._partitions.get(key)
            state = _PartitionState(collected_at, replicas_now)
            for broker in replicas_now:
                if broker in isr_now:
                    if previous is not None and broker in previous.out_since:
                        self._expands[broker] = self._expands.get(broker, 0) + 1
                    continue
                if previous is None or broker not in previous.replicas:
                    state.out_since[broker] = collected_at
                elif broker in previous.out_since:
                    state.out_since[broker] = previous.out_since[broker]
                else:
                    state.out_since[broker] = (previous.seen_at + collected_at) / 2
                    self._shrinks[broker] = self._shrinks.get(broker, 0) + 1
            self._partitions[key] = state
        if prune:
            for key in self._partitions.keys() - partitions.keys():
                del self._partitions[key]

    def out_of_sync_since(self, topic: str, partition: int, broker: int) -> float | None:
        """Estimated time the replica left the ISR; None when it is in sync or unknown."""
        state = self._partitions.get((topic, partition))
        return None if state is None else state.out_since.get(broker)

    def out_of_sync_seconds(self, now: float) -> dict[ReplicaKey, float]:
        """Seconds out of the ISR for every replica of every tracked partition (0 when in sync)."""
        return {
            (topic, partition, broker): max(0.0, now - state.out_since[broker])
            if broker in state.out_since
            else 0.0
            for (topic, partition), state in self._partitions.items()
            for broker in state.replicas
        }
