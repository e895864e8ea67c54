"""Counts packed side by side in long sums come apart as they went in, however large."""

from __future__ import annotations

import pytest

from vigia.ingest.packed_counts import Packing

CELLS = 20


def packed(packing: Packing, counts: list[int]) -> dict[str, int]:
    """The sums `Packing.aggregates` would observe for these cell counts."""
    sums = [0] * packing.sums
    for cell, count in enumerate(counts):
        sums[cell // packing.per_sum] += count << (packing.bits * (cell % packing.per_sum))
    return {f"{packing.name}_{i}": total for i, total in enumerate(sums)}


@pytest.mark.parametrize("rows", [0, 1, 7, 8, 1_000_000, 2**21 - 1, 2**21, 2**31, 2**62])
def test_a_count_as_large_as_the_batch_never_carries_into_its_neighbour(rows: int) -> None:
    packing = Packing.for_rows("cells", CELLS, rows)
    assert packing.per_sum * packing.bits <= 63
    for cell in range(CELLS):
        counts = [0] * CELLS
        counts[cell] = rows
        assert packing.counts(packed(packing, counts)) == counts


def test_counts_spread_over_every_cell_come_apart() -> None:
    counts = [3 * cell for cell in range(CELLS)]
    packing = Packing.for_rows("cells", CELLS, sum(counts))
    assert packing.counts(packed(packing, counts)) == counts


def test_a_missing_sum_is_zero() -> None:
    assert Packing.for_rows("cells", CELLS, 10).counts({}) == [0] * CELLS


def test_a_million_row_batch_needs_seven_sums_and_a_small_one_a_single_sum() -> None:
    sums = [Packing.for_rows("cells", CELLS, rows).sums for rows in (1_000_000, 5)]
    assert sums == [7, 1]
