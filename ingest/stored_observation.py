"""What a batch's write observes of the rows it stores: how many per measure date of the window,
and how fresh they were (`ingest.freshness`), for the price of few aggregates.

One ``observe`` on the rows the sink writes, counted while they are written. Each row is in one
day cell (a date of the window, or any other date) and one freshness cell; both families are
counted packed (`ingest.packed_counts`), and the stored rows are the sum of the day cells. With
the job's default batches of up to a million rows: 3 sums for the 8 day cells, 4 for the 10 live
freshness cells and a sum of ages, 8 aggregates, as many as the write had before the freshness SLI
(a batch holding snapshot reads too: 7 sums for its 20 freshness cells and 2 sums of ages).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from vigia.ingest import freshness
from vigia.ingest.freshness import AgeCounts
from vigia.ingest.packed_counts import Packing

_DAY: Final = "_stored_day_cell"
_AGE: Final = "_stored_age_micros"
_FRESHNESS: Final = "_stored_freshness_cell"


@dataclass(frozen=True)
class StoredCounts:
    rows: int
    rows_by_date: dict[dt.date, int]
    """The dates of the window with rows stored."""
    freshness: dict[str, AgeCounts]


@dataclass(frozen=True)
class StoredObservation:
    """The observation of a batch's stored rows; ``days``: the window, consecutive; ``cohorts``:
    those the batch holds."""

    days: tuple[dt.date, ...]
    cohorts: tuple[str, ...]
    dated: Packing
    fresh: Packing

    @classmethod
    def for_batch(
        cls, days: Sequence[dt.date], rows: int, snapshot_reads: int
    ) -> StoredObservation:
        """For a batch of at most ``rows`` rows, ``snapshot_reads`` of them read by a snapshot."""
        cohorts = freshness.cohorts_held(rows, snapshot_reads)
        return cls(
            tuple(days),
            cohorts,
            Packing.for_rows("day", len(days) + 1, rows),
            Packing.for_rows("freshness", freshness.cells(cohorts), rows),
        )

    def observe(
        self,
        frame: DataFrame,
        observation: Observation,
        *,
        measure_date: Column,
        stored_at: Column,
        ts: Column,
        snapshot_read: Column,
    ) -> DataFrame:
        """``frame``, its columns unchanged, observed into ``observation``."""
        offset = F.datediff(measure_date, F.lit(self.days[0]))
        in_window = (offset >= 0) & (offset < len(self.days))
        # Each cell is worked out once, in a projection of its own, then read twice.
        cells = frame.withColumns(
            {
                _DAY: F.when(in_window, offset).otherwise(len(self.days)),
                _AGE: freshness.age_micros(stored_at, ts),
            }
        ).withColumn(_FRESHNESS, freshness.cell(F.col(_AGE), snapshot_read, self.cohorts))
        packed = cells.withColumns(
            {**self.dated.project(F.col(_DAY)), **self.fresh.project(F.col(_FRESHNESS))}
        )
        observed = packed.observe(
            observation,
            *self.dated.aggregates(),
            *self.fresh.aggregates(),
            *freshness.age_sums(F.col(_AGE), snapshot_read, self.cohorts),
        )
        return observed.drop(_DAY, _AGE, _FRESHNESS, *self.dated.columns, *self.fresh.columns)

    def read(self, observed: Mapping[str, Any]) -> StoredCounts:
        """The counts in the observed row (`ingest.job.observed_counts`; empty: none stored)."""
        per_day = self.dated.counts(observed)
        return StoredCounts(
            rows=sum(per_day),
            rows_by_date={day: n for day, n in zip(self.days, per_day, strict=False) if n},
            freshness=freshness.cohort_ages(self.fresh.counts(observed), observed, self.cohorts),
        )
