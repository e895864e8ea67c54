"""The freshness SLI: how long each stored measure took from the HES to Parquet, as a histogram.

A measure's age is the seconds from its own ``ts`` (when the HES wrote the row) to the moment its
batch stored it: the batch's ``ingested_at`` stamp, which every stored row carries, so an age can
be recomputed from storage. The job stamps a batch once its messages are parsed and cached, before
the dedupe and the write; the batch commits a few seconds later (its write and publish), which the
age leaves out: a small share of the 1,800 s objective (see docs/metrics.md).

Counted in Spark, in the observation of the rows a batch stores (`ingest.stored_observation`),
never row by row in Python: each row's *cell* — its cohort and the first bound its age is at most —
counted packed (`ingest.packed_counts`), and one sum of ages per cohort, in seconds as doubles
(microseconds in a long would overflow for a batch of old measures). Only the cohorts a batch
holds are counted: a batch streamed from the binlog has no redelivered row, and its 10 cells
take fewer sums than 20. `cohort_ages` turns the
cells' counts into each cohort's cumulative buckets, which `IngestMetrics` adds up across batches.

Cohorts: ``live`` rows came from the HES's binlog; ``redelivered`` rows were read by a Debezium
snapshot (the initial one, or an incremental one `vigia-ingest repair` asks for), written long
before they were read: they would burn the live budget for an outage that never happened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import accumulate
from typing import Any, Final

from pyspark.sql import Column
from pyspark.sql import functions as F

FRESHNESS_BUCKETS: Final = (60, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)
"""Upper bounds in seconds, +Inf aside (see docs/metrics.md for why these)."""
COHORT_LIVE: Final = "live"
COHORT_REDELIVERED: Final = "redelivered"
COHORTS: Final = (COHORT_LIVE, COHORT_REDELIVERED)
_SLOTS: Final = len(FRESHNESS_BUCKETS) + 1
"""A cohort's cells: one per bound (ages above the bound before it), one past the last bound."""
_MICROS: Final = 1_000_000


def age_micros(stored_at: Column, ts: Column) -> Column:
    return F.unix_micros(stored_at) - F.unix_micros(ts)


def cohorts_held(valid: int, snapshot_reads: int) -> tuple[str, ...]:
    """The cohorts a batch of ``valid`` rows, ``snapshot_reads`` of them read by a snapshot,
    holds: a batch streamed from the binlog (nearly all of them) counts the live cells alone."""
    held = ((COHORT_LIVE, valid > snapshot_reads), (COHORT_REDELIVERED, snapshot_reads > 0))
    return tuple(cohort for cohort, present in held if present)


def cells(cohorts: Sequence[str]) -> int:
    return len(cohorts) * _SLOTS


def cell(age: Column, snapshot_read: Column, cohorts: Sequence[str]) -> Column:
    """A row's cell among those of ``cohorts`` (`cohorts_held`), 0 ≤ cell < `cells`, from its age
    in microseconds: its cohort's (``snapshot_read`` true: redelivered), then the first bound its
    age is at most. An age ≤ 0 (an HES clock ahead) is in the first bucket."""
    slot = reduce(
        lambda later, bound: F.when(age <= bound[1] * _MICROS, bound[0]).otherwise(later),
        reversed(list(enumerate(FRESHNESS_BUCKETS))),
        F.lit(len(FRESHNESS_BUCKETS)),
    )
    if len(cohorts) < len(COHORTS):
        return slot
    return slot + F.when(snapshot_read, _SLOTS).otherwise(0)


def age_sums(age: Column, snapshot_read: Column, cohorts: Sequence[str]) -> list[Column]:
    """Aggregates for ``observe``: the sum of ages of each of ``cohorts``, in seconds, from ages
    in microseconds."""
    seconds = age / _MICROS
    members = {COHORT_LIVE: ~snapshot_read, COHORT_REDELIVERED: snapshot_read}
    if len(cohorts) < len(COHORTS):
        return [F.coalesce(F.sum(seconds), F.lit(0.0)).alias(_age_key(c)) for c in cohorts]
    return [
        F.coalesce(F.sum(F.when(members[c], seconds)), F.lit(0.0)).alias(_age_key(c))
        for c in cohorts
    ]


def _age_key(cohort: str) -> str:
    return f"freshness_{cohort}_age_seconds"


@dataclass(frozen=True)
class AgeCounts:
    """A cohort's measures: how many were at most each bound old (cumulative, in
    FRESHNESS_BUCKETS order), how many in all (the +Inf bucket), the sum of their ages."""

    buckets: tuple[int, ...] = (0,) * len(FRESHNESS_BUCKETS)
    count: int = 0
    sum_seconds: float = 0.0

    def __add__(self, other: AgeCounts) -> AgeCounts:
        return AgeCounts(
            tuple(a + b for a, b in zip(self.buckets, other.buckets, strict=True)),
            self.count + other.count,
            self.sum_seconds + other.sum_seconds,
        )


def cohort_ages(
    counts: Sequence[int], observed: Mapping[str, Any], cohorts: Sequence[str] = COHORTS
) -> dict[str, AgeCounts]:
    """Each cohort's histogram from the counts of ``cohorts``' cells (in cell order) and the
    observed row's age sums; a cohort the batch did not hold has none (a sum the row lacks is 0:
    Spark leaves out the observation of a batch it proved empty, `ingest.job.observed_counts`)."""
    ages = dict.fromkeys(COHORTS, AgeCounts())
    for index, cohort in enumerate(cohorts):
        cumulative = list(accumulate(counts[index * _SLOTS : (index + 1) * _SLOTS]))
        ages[cohort] = AgeCounts(
            tuple(cumulative[:-1]), cumulative[-1], float(observed.get(_age_key(cohort), 0.0))
        )
    return ages
