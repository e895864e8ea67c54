"""Consumer lag status without thresholds: Burrow's window rules over the exporter's observations.

Pure logic, no I/O. Each collection gives, per (group, topic, partition), one `Observation`:
the committed offset, the partition's latest offset, the collection time, and whether a live group
member had the partition assigned. `LagStatusTracker` keeps the last `window_size` observations
per key and evaluates them with Burrow's rules (linkedin/Burrow, core/internal/evaluator), in this
order:

1. OK     the current lag is ≤ `allowed_lag` (0 by default), or the window is not yet complete
          (fewer than `window_size` observations; the evaluation carries its completeness 0..1).
2. STOP   the consumer has not committed for longer than the window spans and was not caught up
          recently (see "STOP from observations" below).
3. REWIND the committed offset went backwards inside the window and is still below the window's
          highest committed offset (it has not recovered).
4. OK     the lag was ≤ `allowed_lag` at some observation of the window.
5. STALL  the committed offset never moved in the window although there is lag.
6. WARN   the lag never decreased from one observation to the next (a slow consumer).
7. OK     otherwise.

Group status is the worst partition status, where STOP, STALL and REWIND count as ERR.

Differences from Burrow, on purpose:
- Burrow checks REWIND only when the lag was never zero in the window; here REWIND comes before
  "lag was zero at some point", so a consumer that was caught up and is then rewound (an offset
  reset for reprocessing, a restore from an old checkpoint) is reported until it has recovered.
- STOP from observations. Burrow stores every commit with its timestamp and calls a partition
  stopped when `now − last commit > last commit − first commit` of the window. The exporter only
  reads committed offsets at collection times (OffsetFetch carries no commit time), so "did not
  commit" and "committed the same offset again" look the same. The mapping used here:
  the committed offset has not changed for at least the span of the window
  (`now − time it last changed ≥ newest − oldest observation time`, which for a complete window
  means: unchanged across all `window_size` observations), **no live member owns the partition**
  (`Observation.assigned` is false at the newest observation: the group is Empty, the member left,
  or the application commits without group membership like Spark), and the consumer was not caught
  up at any observation of the window (Burrow's "recent broker offsets ≤ last commit").
  When a live member does own the partition, the consumer is alive and its non-moving offset is
  STALL (rule 5), which matches Burrow's meaning of STALL (commits keep arriving, offset stuck).
  Both are ERR at group level.

Numeric codes follow the metric contract: partition status 1 OK, 2 WARN, 3 STOP, 4 STALL,
5 REWIND (`kafka_consumergroup_partition_status`); group 1 OK, 2 WARN, 3 ERR
(`kafka_consumergroup_status`).

Use from the collection loop (keep one tracker for the life of the process)::

    tracker = LagStatusTracker(window_size=10)
    # every collection, for every (group, topic, partition) with a committed offset:
    tracker.observe({(g, t, p): Observation(collected_at, committed, latest, assigned), ...},
                    prune=groups_phase_succeeded)
    report = tracker.evaluate()      # or evaluate(keys) for the keys just observed
    report.partitions[(g, t, p)].status / .complete  → partition status and window completeness
    report.groups[g].status / .complete               → group status, fraction of complete windows

`observe(..., prune=True)` forgets every key absent from the call (deleted groups, topics,
partitions); pass `prune=False` when the group phase failed partially so windows are not lost.
Memory: at most `window_size` observations per key observed in the last pruning call.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

logger = logging.getLogger(__name__)

DEFAULT_WINDOW_SIZE = 10

PartitionKey = tuple[str, str, int]
"""(group id, topic, partition)."""


class PartitionStatus(IntEnum):
    OK = 1
    WARN = 2
    STOP = 3
    STALL = 4
    REWIND = 5


class GroupStatus(IntEnum):
    OK = 1
    WARN = 2
    ERR = 3


PARTITION_STATUS_HELP = (
    "Burrow-style status of the group's consumption of this partition over the last N collections, "
    "no thresholds: 1 OK, 2 WARN (lag never decreased), 3 STOP (offset unchanged for the whole "
    "window, no live member owns the partition, lag > 0), 4 STALL (offset unchanged, a live member "
    "owns the partition, lag > 0), 5 REWIND (committed offset went backwards). OK until the window "
    "is complete."
)
GROUP_STATUS_HELP = (
    "Worst partition status of the consumer group: 1 OK, 2 WARN, 3 ERR (any partition in STOP, "
    "STALL or REWIND). Burrow-style window evaluation, no thresholds."
)


@dataclass(frozen=True, slots=True)
class Observation:
    """One collection's view of a group-partition."""

    time: float
    committed: int
    latest: int
    assigned: bool = False
    """A live member of the group had this partition assigned at this collection."""

    @property
    def lag(self) -> int:
        return max(0, self.latest - self.committed)


@dataclass(frozen=True, slots=True)
class PartitionEvaluation:
    status: PartitionStatus
    complete: float
    """Fraction of the window filled (1.0 when `window_size` observations are held)."""
    lag: int

    @property
    def window_complete(self) -> bool:
        return self.complete >= 1.0


@dataclass(frozen=True, slots=True)
class GroupEvaluation:
    status: GroupStatus
    complete: float
    """Fraction of the group's partitions whose window is complete."""
    partitions: int


@dataclass(frozen=True, slots=True)
class LagStatusReport:
    partitions: Mapping[PartitionKey, PartitionEvaluation]
    groups: Mapping[str, GroupEvaluation]


def evaluate_partition(
    window: Sequence[Observation], *, window_size: int = DEFAULT_WINDOW_SIZE, allowed_lag: int = 0
) -> PartitionEvaluation:
    """Status of one group-partition from its observations, oldest first (at most `window_size`)."""
    if window_size < 2:
        raise ValueError(f"window_size must be at least 2, got {window_size}")
    if not window:
        return PartitionEvaluation(PartitionStatus.OK, 0.0, 0)
    window = list(window)[-window_size:]
    newest = window[-1]
    complete = len(window) / window_size
    status = _verdict(window, allowed_lag) if complete >= 1.0 else PartitionStatus.OK
    return PartitionEvaluation(status, complete, newest.lag)


def _verdict(window: Sequence[Observation], allowed_lag: int) -> PartitionStatus:
    newest = window[-1]
    if newest.lag <= allowed_lag:
        return PartitionStatus.OK
    committed = [o.committed for o in window]
    lags = [o.latest - o.committed for o in window]
    if min(lags) < 0:  # clamped only when needed: max() per element dominates this function
        lags = [max(0, lag) for lag in lags]
    highest = max(committed)
    never_moved = min(committed) == highest
    # Burrow's "recent lag zero" (a latest offset of the window within reach of the last commit)
    # is, with an unchanged commit, the same as a lag within the allowed lag somewhere.
    caught_up_once = min(lags) <= allowed_lag
    if never_moved and not newest.assigned and not caught_up_once:
        return PartitionStatus.STOP
    # A sequence went down somewhere exactly when it is not already sorted (sorted() runs in C:
    # this is the hot loop when every group-partition of a large cluster is evaluated).
    went_back = committed != sorted(committed)
    if went_back and newest.committed < highest:
        return PartitionStatus.REWIND
    if caught_up_once:
        return PartitionStatus.OK
    if never_moved:
        return PartitionStatus.STALL
    if lags == sorted(lags):  # the lag never decreased
        return PartitionStatus.WARN
    return PartitionStatus.OK


def group_status(statuses: Iterable[PartitionStatus]) -> GroupStatus:
    """Worst partition status; STOP, STALL and REWIND are ERR. A group without partitions is OK."""
    worst = GroupStatus.OK
    for status in statuses:
        as_group = GroupStatus.WARN if status is PartitionStatus.WARN else GroupStatus.OK
        if status in (PartitionStatus.STOP, PartitionStatus.STALL, PartitionStatus.REWIND):
            as_group = GroupStatus.ERR
        worst = max(worst, as_group)
    return worst


class LagStatusTracker:
    """Sliding windows of observations per (group, topic, partition), evaluated on demand."""

    def __init__(self, window_size: int = DEFAULT_WINDOW_SIZE, allowed_lag: int = 0) -> None:
        if window_size < 2:
            raise ValueError(f"window_size must be at least 2, got {window_size}")
        if allowed_lag < 0:
            raise ValueError(f"allowed_lag must be ≥ 0, got {allowed_lag}")
        self.window_size = window_size
        self.allowed_lag = allowed_lag
        self._windows: dict[PartitionKey, deque[Observation]] = {}

    def __len__(self) -> int:
        return len(self._windows)

    def observe(
        self, observations: Mapping[PartitionKey, Observation], *, prune: bool = True
    ) -> None:
        """Append one collection's observations; with `prune`, forget keys absent from it."""
        for key, observation in observations.items():
            window = self._windows.get(key)
            if window is None:
                window = self._windows[key] = deque(maxlen=self.window_size)
            elif window and observation.time <= window[-1].time:
                # The same collection fed twice (or a clock step back): keep the newer reading only.
                logger.debug("observation for %s not newer than the last one; replacing it", key)
                window.pop()
            window.append(observation)
        if prune:
            for key in self._windows.keys() - observations.keys():
                del self._windows[key]

    def window(self, key: PartitionKey) -> tuple[Observation, ...]:
        return tuple(self._windows.get(key, ()))

    def evaluate(self, keys: Iterable[PartitionKey] | None = None) -> LagStatusReport:
        """Every window, or only `keys` (e.g. those observed in the current collection, so that
        windows kept through a partial collection do not report stale statuses); groups are
        aggregated over the evaluated partitions only."""
        selected = (
            self._windows.items()
            if keys is None
            else ((key, self._windows[key]) for key in keys if key in self._windows)
        )
        partitions = {
            key: evaluate_partition(
                window, window_size=self.window_size, allowed_lag=self.allowed_lag
            )
            for key, window in selected
        }
        by_group: dict[str, list[PartitionEvaluation]] = {}
        for (group, _, _), evaluation in partitions.items():
            by_group.setdefault(group, []).append(evaluation)
        groups = {
            group: GroupEvaluation(
                status=group_status(e.status for e in evaluations),
                complete=sum(e.window_complete for e in evaluations) / len(evaluations),
                partitions=len(evaluations),
            )
            for group, evaluations in by_group.items()
        }
        return LagStatusReport(partitions=partitions, groups=groups)
