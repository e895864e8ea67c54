"""The freshness SLI: how long each stored measure took from the HES to Parquet, as a histogram.

A measure's age is the seconds from its own ``ts`` (when the HES wrote the row) to the moment its
batch stored it: the batch's ``ingested_at`` stamp, which every stored row carries, so an age can be
recomputed from storage. The job stamps a batch once its messages are parsed and cached, before the
dedupe and the write; the batch commits a few seconds later (its write and publish), which the
age leaves out: a small share of the 1,800 s objective (see docs/metrics.md).

Counted in Spark, in the aggregation pass that already counts the batch's stored rows per day
(`freshness_exprs` joins that ``observe``), never row by row in Python: per cohort, one count per
bucket (``age <= le``, cumulative as Prometheus' buckets are), the row count and the sum of ages
in microseconds (integers, so nothing is lost summing a million rows). `batch_freshness` reads the
observed row back into counts per cohort, which `IngestMetrics` adds up across batches.

Cohorts: ``live`` rows came from the HES's binlog; ``redelivered`` rows were read by a Debezium
snapshot (the initial one, or an incremental one `vigia-ingest repair` asks for), written long
before they were read: they would burn the live budget for an outage that never happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pyspark.sql import Column
from pyspark.sql import functions as F

FRESHNESS_BUCKETS: Final = (60, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)
"""Upper bounds in seconds, +Inf aside (see docs/metrics.md for why these)."""
COHORT_LIVE: Final = "live"
COHORT_REDELIVERED: Final = "redelivered"
COHORTS: Final = (COHORT_LIVE, COHORT_REDELIVERED)
_MICROS: Final = 1_000_000


def _key(cohort: str, what: str) -> str:
    return f"freshness_{cohort}_{what}"


def freshness_exprs(stored_at: Column, ts: Column, snapshot_read: Column) -> list[Column]:
    """Aggregates for ``observe``: per cohort (``snapshot_read`` true: redelivered), the rows
    whose age (``stored_at`` − ``ts``) is at most each bucket's bound, all rows, and the sum of
    ages in microseconds. A ``ts`` after ``stored_at`` (an HES clock ahead) counts as age ≤ 0."""
    age = F.unix_micros(stored_at) - F.unix_micros(ts)
    exprs: list[Column] = []
    for cohort, member in ((COHORT_LIVE, ~snapshot_read), (COHORT_REDELIVERED, snapshot_read)):
        exprs.extend(
            F.count_if(member & (age <= le * _MICROS)).alias(_key(cohort, str(le)))
            for le in FRESHNESS_BUCKETS
        )
        exprs.append(F.count_if(member).alias(_key(cohort, "count")))
        exprs.append(
            F.coalesce(F.sum(F.when(member, age)), F.lit(0)).alias(_key(cohort, "sum_micros"))
        )
    return exprs


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


def batch_freshness(observed: Mapping[str, int]) -> dict[str, AgeCounts]:
    """The observed row of `freshness_exprs` → counts per cohort. A key the row lacks is 0: Spark
    leaves out the observation of a batch it proved empty (`ingest.job.observed_counts`)."""
    return {
        cohort: AgeCounts(
            tuple(int(observed.get(_key(cohort, str(le)), 0)) for le in FRESHNESS_BUCKETS),
            int(observed.get(_key(cohort, "count"), 0)),
            int(observed.get(_key(cohort, "sum_micros"), 0)) / _MICROS,
        )
        for cohort in COHORTS
    }
