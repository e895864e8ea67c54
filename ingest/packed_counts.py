"""Many counts of a batch's rows for the price of a few aggregates.

A count per *cell* (each row in exactly one: a freshness bucket of its cohort, a day of the
window) costs one aggregate per cell when the write's ``observe`` counts it, and Spark evaluates an
observation's aggregates one by one for every row, outside whole-stage code generation
(docs/ingest-performance.md): the number of aggregates is the cost. So the cells' counts are
packed side by side in the bits of a few long sums. A projection before the observation
(code-generated, with the rest of its stage) gives each row the sum its cell counts in and the
increment it adds there (``1 << (bits × place)``); the observation adds them up; `Packing.counts`
takes them apart. ``bits`` is enough for the batch's row count, so no count can carry into its
neighbour.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql import Column
from pyspark.sql import functions as F

_SUM_BITS: Final = 63
"""A long sum's bits that counts may use: the sign bit stays clear (ANSI sums fail on overflow)."""


@dataclass(frozen=True)
class Packing:
    """``cells`` counts named ``name``, each in ``bits`` bits, ``per_sum`` of them to a sum."""

    name: str
    cells: int
    bits: int
    per_sum: int

    @classmethod
    def for_rows(cls, name: str, cells: int, rows: int) -> Packing:
        """Room for a count of up to ``rows``: a batch of at most that many rows cannot carry."""
        bits = max(rows, 1).bit_length()
        return cls(name, cells, bits, max(1, _SUM_BITS // bits))

    @property
    def sums(self) -> int:
        return math.ceil(self.cells / self.per_sum)

    @property
    def columns(self) -> tuple[str, str]:
        """The projection's two columns (drop them after the observation)."""
        return (f"_{self.name}_sum", f"_{self.name}_increment")

    def project(self, cell: Column) -> dict[str, Column]:
        """The projection's columns for a row in ``cell`` (0 ≤ cell < cells); ``cell`` should be
        a column of its own, worked out once."""
        index, increment = self.columns
        # PySpark's shiftleft takes a literal shift; the SQL function takes a column.
        shift = ((cell % self.per_sum) * self.bits).cast("int")
        return {
            index: (cell / self.per_sum).cast("int"),
            increment: F.call_function("shiftleft", F.lit(1).cast("long"), shift),
        }

    def aggregates(self) -> list[Column]:
        """The sums, for ``observe``."""
        index, increment = self.columns
        return [
            F.coalesce(F.sum(F.when(F.col(index) == i, F.col(increment))), F.lit(0)).alias(
                self._key(i)
            )
            for i in range(self.sums)
        ]

    def counts(self, observed: Mapping[str, Any]) -> list[int]:
        """Each cell's count, in cell order, from the observed row (a sum it lacks is 0)."""
        mask = (1 << self.bits) - 1
        sums = [int(observed.get(self._key(i), 0)) for i in range(self.sums)]
        return [
            (sums[cell // self.per_sum] >> (self.bits * (cell % self.per_sum))) & mask
            for cell in range(self.cells)
        ]

    def _key(self, index: int) -> str:
        return f"{self.name}_{index}"
