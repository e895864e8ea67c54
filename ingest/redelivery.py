"""Measures an incremental snapshot delivers again are stored once: only when not stored yet.

`vigia-ingest repair` has Debezium read a whole day again from the HES (an incremental snapshot
filtered on measure_date), so the topic carries that day's rows a second time: the ones the store
lacks, and every one it already holds. The connector marks those reads (``__source_snapshot`` =
``incremental``, `ingest.schema.SNAPSHOT_FIELD`), and the job keeps such a row only when its
measure key is not stored yet. Inserts and corrections streamed from the binlog are stored as
before, never looked up.

Cost: a batch first counts its valid rows and its re-delivered ones (a pass over the persisted
batch, the one that fills the cache anyway); a batch without any (every batch outside a repair)
stops there. One with some collects the dates they touch; the stored keys of those dates alone
are read (partition pruning) and anti-joined with the batch's re-delivered rows, on the measure
key the in-batch dedupe already partitioned it by.
"""

from __future__ import annotations

import datetime as dt
import operator
from dataclasses import dataclass
from functools import reduce
from typing import Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from vigia.ingest.schema import MEASURE_KEY_COLUMNS, REDELIVERED, SNAPSHOT_READ
from vigia.ingest.sinks import batch_dir_name

_STORED_SCHEMA: Final = "meter string, period int, magnitude string, measure_date date"


@dataclass(frozen=True)
class Survey:
    """A classified batch's valid rows (a bound on the rows it stores; the rest are duplicates
    or stored already), how many of them a snapshot read, and the measure dates of its valid
    re-delivered rows."""

    valid: int
    snapshot_reads: int
    redelivered: list[dt.date]


def survey(classified: DataFrame) -> Survey:
    """One aggregate over the batch (code-generated, no grouping: the pass that fills the cache),
    and a second pass for the dates only in a batch that re-delivers any."""
    valid = F.col("reason").isNull()
    (counts,) = classified.agg(
        F.count_if(valid).alias("valid"),
        F.count_if(valid & F.col(SNAPSHOT_READ)).alias("snapshot_reads"),
        F.count_if(valid & F.col(REDELIVERED)).alias("again"),
    ).collect()
    dates = []
    if counts["again"]:
        again = classified.where(valid & F.col(REDELIVERED)).select("measure_date").distinct()
        dates = sorted(row["measure_date"] for row in again.collect())
    return Survey(counts["valid"], counts["snapshot_reads"], dates)


def stored_keys(spark: SparkSession, output: str, dates: list[dt.date], batch_id: int) -> DataFrame:
    """The measure keys stored under ``output`` for ``dates``, but for batch ``batch_id``'s own
    files: a replayed batch stages before it retracts what its earlier attempt published
    (`ingest.sinks`), and must not mistake those rows for stored ones."""
    own = f"/{batch_dir_name(batch_id)}-"
    return (
        spark.read.schema(_STORED_SCHEMA)
        .parquet(output)
        .where(F.col("measure_date").isin(*dates))
        .where(~F.input_file_name().contains(own))
        .select(*MEASURE_KEY_COLUMNS)
    )


def without_stored(latest: DataFrame, stored: DataFrame) -> DataFrame:
    """``latest`` (deduplicated, with REDELIVERED) less the re-delivered rows whose key ``stored``
    holds, without the REDELIVERED column."""
    same_key = reduce(operator.and_, (latest[name] == stored[name] for name in MEASURE_KEY_COLUMNS))
    return latest.join(stored, same_key & latest[REDELIVERED], "left_anti").drop(REDELIVERED)
