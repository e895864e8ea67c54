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
Memory: at most `window_size` observations per key observed in the last pruning call, kept as
columns (≈ 0.4 KB per key at the default window). A window that stays full of one (committed,
latest) pair keeps its evaluation instead of redoing it (`_Window`).
"""

from __future__ import annotations

import logging
from array import array
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
    window = list(window)[-window_size:]
    return _evaluate(
        [o.committed for o in window],
        [o.latest for o in window],
        bool(window) and window[-1].assigned,
        window_size,
        allowed_lag,
    )


def _evaluate(
    committed: list[int], latest: list[int], assigned: bool, window_size: int, allowed_lag: int
) -> PartitionEvaluation:
    """The evaluation of a window given as columns, oldest first; `assigned`: the newest one's.
    It reads nothing else (not the times): what `LagStatusTracker` relies on to keep it."""
    if not committed:
        return PartitionEvaluation(PartitionStatus.OK, 0.0, 0)
    complete = len(committed) / window_size
    lag = max(0, latest[-1] - committed[-1])
    if complete < 1.0:
        return PartitionEvaluation(PartitionStatus.OK, complete, lag)
    return PartitionEvaluation(_verdict(committed, latest, assigned, allowed_lag), complete, lag)


def _verdict(
    committed: list[int], latest: list[int], assigned: bool, allowed_lag: int
) -> PartitionStatus:
    if max(0, latest[-1] - committed[-1]) <= allowed_lag:
        return PartitionStatus.OK
    lags = [x - c for c, x in zip(committed, latest, strict=True)]
    if min(lags) < 0:  # clamped only when needed: max() per element dominates this function
        lags = [max(0, lag) for lag in lags]
    highest = max(committed)
    never_moved = min(committed) == highest
    # Burrow's "recent lag zero" (a latest offset of the window within reach of the last commit)
    # is, with an unchanged commit, the same as a lag within the allowed lag somewhere.
    caught_up_once = min(lags) <= allowed_lag
    if never_moved and not assigned and not caught_up_once:
        return PartitionStatus.STOP
    # A sequence went down somewhere exactly when it is not already sorted (sorted() runs in C:
    # this is the hot loop when every group-partition of a large cluster is evaluated).
    went_back = committed != sorted(committed)
    if went_back and committed[-1] < highest:
        return PartitionStatus.REWIND
    if caught_up_once:
        return PartitionStatus.OK
    if never_moved:
        return PartitionStatus.STALL
    if lags == sorted(lags):  # the lag never decreased
        return PartitionStatus.WARN
    return PartitionStatus.OK


# What each partition status makes of its group's: STOP, STALL and REWIND are ERR.
_AS_GROUP = {
    PartitionStatus.OK: GroupStatus.OK,
    PartitionStatus.WARN: GroupStatus.WARN,
    PartitionStatus.STOP: GroupStatus.ERR,
    PartitionStatus.STALL: GroupStatus.ERR,
    PartitionStatus.REWIND: GroupStatus.ERR,
}


def group_status(statuses: Iterable[PartitionStatus]) -> GroupStatus:
    """Worst partition status; STOP, STALL and REWIND are ERR. A group without partitions is OK."""
    return max((_AS_GROUP[status] for status in statuses), default=GroupStatus.OK)


class _Window:
    """One key's last observations, oldest first, as columns (a quarter of the memory of a deque
    of `Observation`s, 12,000 of them at 2,000 groups), and its last evaluation while `steady`
    (issue 24)."""

    __slots__ = ("assigned", "committed", "evaluation", "latest", "steady", "times")

    def __init__(self) -> None:
        self.times = array("d")
        self.committed = array("q")
        self.latest = array("q")
        self.assigned = bytearray()
        # The window is full and every observation in it has the same committed and latest
        # offsets: a new observation equal to them, with the same `assigned`, leaves every column
        # `_evaluate` reads as it was, so `evaluation` (when set) still holds.
        self.steady = False
        self.evaluation: PartitionEvaluation | None = None

    def append(self, at: float, committed: int, latest: int, assigned: bool, size: int) -> None:
        if self.times and at <= self.times[-1]:
            # The same collection fed twice (or a clock step back): keep the newer reading only.
            logger.debug("observation not newer than the last one; replacing it")
            self._pop()
        same = (
            self.steady
            and committed == self.committed[-1]
            and latest == self.latest[-1]
            and assigned == bool(self.assigned[-1])
        )
        self.times.append(at)
        self.committed.append(committed)
        self.latest.append(latest)
        self.assigned.append(assigned)
        if len(self.times) > size:
            del self.times[0], self.committed[0], self.latest[0], self.assigned[0]
        if not same:
            self.evaluation = None
            self.steady = len(self.times) == size and _constant(self.committed, self.latest)

    def _pop(self) -> None:
        self.times.pop()
        self.committed.pop()
        self.latest.pop()
        self.assigned.pop()
        self.steady = False
        self.evaluation = None

    def observations(self) -> tuple[Observation, ...]:
        return tuple(
            Observation(t, c, x, bool(a))
            for t, c, x, a in zip(
                self.times, self.committed, self.latest, self.assigned, strict=True
            )
        )

    def evaluate(self, window_size: int, allowed_lag: int) -> PartitionEvaluation:
        if self.evaluation is not None:
            return self.evaluation
        evaluation = _evaluate(
            self.committed.tolist(),
            self.latest.tolist(),
            bool(self.assigned) and bool(self.assigned[-1]),
            window_size,
            allowed_lag,
        )
        if self.steady:
            self.evaluation = evaluation
        return evaluation


def _constant(committed: array[int], latest: array[int]) -> bool:
    return committed.count(committed[0]) == len(committed) and latest.count(latest[0]) == len(
        latest
    )


class LagStatusTracker:
    """Sliding windows of observations per (group, topic, partition), evaluated on demand."""

    def __init__(self, window_size: int = DEFAULT_WINDOW_SIZE, allowed_lag: int = 0) -> None:
        if window_size < 2:
            raise ValueError(f"window_size must be at least 2, got {window_size}")
        if allowed_lag < 0:
            raise ValueError(f"allowed_lag must be ≥ 0, got {allowed_lag}")
        self.window_size = window_size
        self.allowed_lag = allowed_lag
        self._windows: dict[PartitionKey, _Window] = {}

    def __len__(self) -> int:
        return len(self._windows)

    def observe(
        self, observations: Mapping[PartitionKey, Observation], *, prune: bool = True
    ) -> None:
        """Append one collection's observations; with `prune`, forget keys absent from it."""
        windows, size = self._windows, self.window_size
        for key, o in observations.items():
            window = windows.get(key)
            if window is None:
                window = windows[key] = _Window()
            window.append(o.time, o.committed, o.latest, o.assigned, size)
        if prune:
            self._prune(observations.keys())

    def observe_at(
        self,
        at: float,
        offsets: Mapping[PartitionKey, tuple[int, int, bool]],
        *,
        prune: bool = True,
    ) -> None:
        """`observe` for one collection's (committed, latest, assigned) per key, all seen at
        `at`, without an `Observation` per key (the exporter's path: 12,000 keys at 2,000
        groups)."""
        windows, size = self._windows, self.window_size
        for key, (committed, latest, assigned) in offsets.items():
            window = windows.get(key)
            if window is None:
                window = windows[key] = _Window()
            window.append(at, committed, latest, assigned, size)
        if prune:
            self._prune(offsets.keys())

    def _prune(self, seen: Iterable[PartitionKey]) -> None:
        windows = self._windows
        for key in windows.keys() - seen:
            del windows[key]

    def window(self, key: PartitionKey) -> tuple[Observation, ...]:
        window = self._windows.get(key)
        return () if window is None else window.observations()

    def last_assigned(self, key: PartitionKey) -> bool:
        """Whether a live member owned the partition at its newest observation (False: none)."""
        window = self._windows.get(key)
        return window is not None and bool(window.assigned) and bool(window.assigned[-1])

    def evaluate(self, keys: Iterable[PartitionKey] | None = None) -> LagStatusReport:
        """Every window, or only `keys` (e.g. those observed in the current collection, so that
        windows kept through a partial collection do not report stale statuses); groups are
        aggregated over the evaluated partitions only."""
        selected = (
            self._windows.items()
            if keys is None
            else ((key, self._windows[key]) for key in keys if key in self._windows)
        )
        size, allowed = self.window_size, self.allowed_lag
        partitions: dict[PartitionKey, PartitionEvaluation] = {}
        # Per group: its worst status so far, complete windows and partitions.
        by_group: dict[str, list[int]] = {}
        for key, window in selected:
            evaluation = partitions[key] = window.evaluate(size, allowed)
            as_group = _AS_GROUP[evaluation.status]
            held = by_group.get(key[0])
            if held is None:
                by_group[key[0]] = [as_group, evaluation.complete >= 1.0, 1]
            else:
                if as_group > held[0]:
                    held[0] = as_group
                held[1] += evaluation.complete >= 1.0
                held[2] += 1
        groups = {
            group: GroupEvaluation(GroupStatus(worst), complete / count, count)
            for group, (worst, complete, count) in by_group.items()
        }
        return LagStatusReport(partitions=partitions, groups=groups)
