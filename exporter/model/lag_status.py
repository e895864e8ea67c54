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
the rows of four arrays (25 bytes per observation, 250 per key at the default window), which one
collection appends to and evaluates all at once.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np

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


class PartitionEvaluation(NamedTuple):
    """One per group-partition per collection: a named tuple, as `Lagging` is."""

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
    if not window:
        return PartitionEvaluation(PartitionStatus.OK, 0.0, 0)
    padding = [0] * (window_size - len(window))
    statuses, shares, lags = _evaluations(
        np.array([padding + [o.committed for o in window]], np.int64),
        np.array([padding + [o.latest for o in window]], np.int64),
        np.array([window[-1].assigned]),
        np.array([len(window)]),
        allowed_lag,
    )
    return PartitionEvaluation(PartitionStatus(statuses[0]), float(shares[0]), int(lags[0]))


def _evaluations(
    committed: np.ndarray,
    latest: np.ndarray,
    assigned: np.ndarray,
    held: np.ndarray,
    allowed_lag: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per window (a row of `committed` and `latest`, the newest observation last, `held` of them
    in the row; `assigned`: the newest one's): its status (OK while incomplete), the share of the
    window it fills, and its current lag."""
    window_size = committed.shape[1]
    complete = held == window_size
    statuses = np.full(len(held), PartitionStatus.OK, np.int8)
    statuses[complete] = _statuses(
        committed[complete], latest[complete], assigned[complete], allowed_lag
    )
    lags = np.maximum(latest[:, -1] - committed[:, -1], 0)
    return statuses, held / window_size, lags


def _statuses(
    committed: np.ndarray, latest: np.ndarray, assigned: np.ndarray, allowed_lag: int
) -> np.ndarray:
    """The rules above for complete windows, one per row (oldest observation first): a column
    each of partition statuses. Every window of the cluster at once: this is the exporter's
    hottest loop at 60,000 group-partitions."""
    # Not clamped at 0: a negative lag is within the allowed lag, as its clamped 0 would be, and
    # that decides every rule before the one (WARN) that compares lags with each other.
    lags = latest - committed
    highest = committed.max(axis=1)
    never_moved = committed.min(axis=1) == highest
    # Burrow's "recent lag zero" (a latest offset of the window within reach of the last commit)
    # is, with an unchanged commit, the same as a lag within the allowed lag somewhere.
    caught_up_once = lags.min(axis=1) <= allowed_lag
    lag_never_decreased = (np.diff(lags, axis=1) >= 0).all(axis=1)
    return np.select(
        [
            lags[:, -1] <= allowed_lag,
            never_moved & ~assigned & ~caught_up_once,
            committed[:, -1] < highest,  # it went back and has not recovered
            caught_up_once,
            never_moved,
            lag_never_decreased,
        ],
        [
            PartitionStatus.OK,
            PartitionStatus.STOP,
            PartitionStatus.REWIND,
            PartitionStatus.OK,
            PartitionStatus.STALL,
            PartitionStatus.WARN,
        ],
        default=PartitionStatus.OK,
    )


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


class LagStatusTracker:
    """Sliding windows of observations per (group, topic, partition), evaluated on demand.

    The windows are the rows of four arrays (times, committed and latest offsets, assignment),
    the newest observation in the last column, so that one collection appends to and evaluates
    every window at once; `_held` counts each row's observations (a row is complete at
    `window_size`; the columns left of its observations are unused)."""

    def __init__(self, window_size: int = DEFAULT_WINDOW_SIZE, allowed_lag: int = 0) -> None:
        if window_size < 2:
            raise ValueError(f"window_size must be at least 2, got {window_size}")
        if allowed_lag < 0:
            raise ValueError(f"allowed_lag must be ≥ 0, got {allowed_lag}")
        self.window_size = window_size
        self.allowed_lag = allowed_lag
        self._rows: dict[PartitionKey, int] = {}
        self._times = np.zeros((0, window_size), np.float64)
        self._committed = np.zeros((0, window_size), np.int64)
        self._latest = np.zeros((0, window_size), np.int64)
        self._assigned = np.zeros((0, window_size), np.bool_)
        self._held = np.zeros(0, np.int32)

    def __len__(self) -> int:
        return len(self._rows)

    def observe(
        self, observations: Mapping[PartitionKey, Observation], *, prune: bool = True
    ) -> None:
        """Append one collection's observations; with `prune`, forget keys absent from it."""
        values = observations.values()
        self._append(
            observations.keys(),
            np.fromiter((o.time for o in values), np.float64, len(values)),
            [(o.committed, o.latest, o.assigned) for o in values],
        )
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
        `at`, without an `Observation` per key (the exporter's path: 60,000 keys at 10,000
        groups)."""
        self._append(offsets.keys(), np.full(len(offsets), at), list(offsets.values()))
        if prune:
            self._prune(offsets.keys())

    def _append(
        self,
        keys: Collection[PartitionKey],
        times: np.ndarray,
        offsets: list[tuple[int, int, bool]],
    ) -> None:
        if not keys:
            return
        self._add_rows([key for key in keys if key not in self._rows])
        rows = np.fromiter(map(self._rows.__getitem__, keys), np.intp, len(keys))
        columns = np.array(offsets, np.int64).reshape(len(keys), 3)
        # The same collection fed twice (or a clock step back): keep the newer reading only.
        again = (self._held[rows] > 0) & (self._times[rows, -1] >= times)
        if again.any():
            logger.debug(
                "%d observations not newer than the last ones; replacing them", again.sum()
            )
        moving = rows[~again]
        for array in (self._times, self._committed, self._latest, self._assigned):
            array[moving, :-1] = array[moving, 1:]
        self._held[moving] = np.minimum(self._held[moving] + 1, self.window_size)
        self._times[rows, -1] = times
        self._committed[rows, -1] = columns[:, 0]
        self._latest[rows, -1] = columns[:, 1]
        self._assigned[rows, -1] = columns[:, 2].astype(np.bool_)

    def _add_rows(self, keys: list[PartitionKey]) -> None:
        if not keys:
            return
        first = len(self._rows)
        self._rows.update(zip(keys, range(first, first + len(keys)), strict=True))
        shape = (len(keys), self.window_size)
        self._times = np.concatenate([self._times, np.zeros(shape, np.float64)])
        self._committed = np.concatenate([self._committed, np.zeros(shape, np.int64)])
        self._latest = np.concatenate([self._latest, np.zeros(shape, np.int64)])
        self._assigned = np.concatenate([self._assigned, np.zeros(shape, np.bool_)])
        self._held = np.concatenate([self._held, np.zeros(len(keys), np.int32)])

    def _prune(self, seen: Collection[PartitionKey]) -> None:
        if not self._rows.keys() - seen:
            return
        kept = [key for key in self._rows if key in seen]
        rows = np.fromiter(map(self._rows.__getitem__, kept), np.intp, len(kept))
        self._rows = {key: row for row, key in enumerate(kept)}
        self._times = self._times[rows]
        self._committed = self._committed[rows]
        self._latest = self._latest[rows]
        self._assigned = self._assigned[rows]
        self._held = self._held[rows]

    def window(self, key: PartitionKey) -> tuple[Observation, ...]:
        row = self._rows.get(key)
        if row is None:
            return ()
        held = -int(self._held[row])
        return tuple(
            Observation(t, c, x, a)
            for t, c, x, a in zip(
                self._times[row, held:].tolist(),
                self._committed[row, held:].tolist(),
                self._latest[row, held:].tolist(),
                self._assigned[row, held:].tolist(),
                strict=True,
            )
        )

    def last_assigned(self, key: PartitionKey) -> bool:
        """Whether a live member owned the partition at its newest observation (False: none)."""
        row = self._rows.get(key)
        return row is not None and bool(self._assigned[row, -1])

    def evaluate(self, keys: Iterable[PartitionKey] | None = None) -> LagStatusReport:
        """Every window, or only `keys` (e.g. those observed in the current collection, so that
        windows kept through a partial collection do not report stale statuses); groups are
        aggregated over the evaluated partitions only."""
        selected = list(self._rows) if keys is None else [k for k in keys if k in self._rows]
        rows = np.fromiter(map(self._rows.__getitem__, selected), np.intp, len(selected))
        held = self._held[rows]
        statuses, shares, lags = _evaluations(
            self._committed[rows],
            self._latest[rows],
            self._assigned[rows, -1],
            held,
            self.allowed_lag,
        )
        partitions: dict[PartitionKey, PartitionEvaluation] = {}
        # Per group: its worst status so far, complete windows and partitions.
        by_group: dict[str, list[int]] = {}
        for key, status, share, lag, full in zip(
            selected,
            statuses.tolist(),
            shares.tolist(),
            lags.tolist(),
            (held == self.window_size).tolist(),
            strict=True,
        ):
            partitions[key] = PartitionEvaluation(_PARTITION_STATUSES[status], share, lag)
            as_group = _AS_GROUP_CODE[status]
            held_by_group = by_group.get(key[0])
            if held_by_group is None:
                by_group[key[0]] = [as_group, full, 1]
            else:
                if as_group > held_by_group[0]:
                    held_by_group[0] = as_group
                held_by_group[1] += full
                held_by_group[2] += 1
        groups = {
            group: GroupEvaluation(GroupStatus(worst), complete / count, count)
            for group, (worst, complete, count) in by_group.items()
        }
        return LagStatusReport(partitions=partitions, groups=groups)


_PARTITION_STATUSES = {status.value: status for status in PartitionStatus}
_AS_GROUP_CODE = {status.value: group.value for status, group in _AS_GROUP.items()}
