"""What the freshness histogram adds to a batch: the write's observation four ways, over the
same cached rows, alternated so all see the same load; CPU seconds of this process tree (the JVM
included), steadier than wall time on a shared machine.

- before the SLI: the stored rows and a count per day of the window, an aggregate each;
- days packed: the same counts packed (`ingest.packed_counts`), without freshness;
- the job's: `ingest.stored_observation` as the job runs it (days and freshness packed for a
  batch of --rows, the age sums), for a live batch (every row from the binlog: the live cohort's
  cells alone) and a mixed one (2 % snapshot reads: both cohorts' cells).

The job's less "before the SLI" is what the histogram costs a batch; the job's less "days packed"
is the freshness's own part. Compare them with the whole BatchWriter's CPU
(ingest_throughput.py --only phases) for the share of a batch.

    python -m benchmarks.freshness_cost --rows 1000000 --rounds 9
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
from collections.abc import Callable

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from tqdm import tqdm

from benchmarks.ingest_throughput import cpu_seconds
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import build_spark
from vigia.ingest.metrics import day_window
from vigia.ingest.packed_counts import Packing
from vigia.ingest.stored_observation import StoredObservation


def noop_write(frame: DataFrame) -> float:
    before = cpu_seconds()
    frame.write.format("noop").mode("overwrite").save()
    return cpu_seconds() - before


def counted_per_day(rows: DataFrame, days: list[dt.date]) -> DataFrame:
    return rows.observe(
        Observation(),
        F.count(F.lit(1)).alias("rows"),
        *(F.count_if(F.col("measure_date") == F.lit(d)).alias(d.isoformat()) for d in days),
    )


def packed_per_day(rows: DataFrame, days: list[dt.date], bound: int) -> DataFrame:
    packing = Packing.for_rows("day", len(days) + 1, bound)
    offset = F.datediff(F.col("measure_date"), F.lit(days[0]))
    cell = F.when((offset >= 0) & (offset < len(days)), offset).otherwise(len(days))
    cells = rows.withColumn("_day", cell)
    observed = cells.withColumns(packing.project(F.col("_day"))).observe(
        Observation(), *packing.aggregates()
    )
    return observed.drop("_day", *packing.columns)


def the_jobs(rows: DataFrame, days: list[dt.date], bound: int, snapshot_reads: int) -> DataFrame:
    return StoredObservation.for_batch(days, bound, snapshot_reads).observe(
        rows,
        Observation(),
        measure_date=F.col("measure_date"),
        stored_at=F.col("ingested_at"),
        ts=F.col("ts"),
        snapshot_read=F.col("snapshot_read"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spark = build_spark(
        IngestConfig(bootstrap_servers="unused", spark_master="local[2]", log_level="WARN")
    )
    now = dt.datetime.now(dt.UTC)
    days = day_window(now.date())
    rows = (
        spark.range(args.rows)
        .select(
            F.lit(now).alias("ingested_at"),
            (F.lit(now) - F.make_interval(secs=(F.col("id") % 7200).cast("int"))).alias("ts"),
            (F.col("id") % 50 == 0).alias("snapshot_read"),
            F.date_sub(F.lit(now.date()), (F.col("id") % 3).cast("int")).alias("measure_date"),
        )
        .persist()
    )
    rows.count()
    live = rows.withColumn("snapshot_read", F.lit(False))
    ways: dict[str, Callable[[], DataFrame]] = {
        "before the SLI": lambda: counted_per_day(rows, days),
        "days packed": lambda: packed_per_day(rows, days, args.rows),
        "the job's, live": lambda: the_jobs(live, days, args.rows, 0),
        "the job's, mixed": lambda: the_jobs(rows, days, args.rows, args.rows // 50),
    }
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    for way in ways.values():
        noop_write(way())
    for _ in tqdm(range(args.rounds), desc="rounds"):
        for name, way in ways.items():
            cpu[name].append(noop_write(way()))
    load = os.getloadavg()[0]
    print(f"{args.rows:,} rows, {args.rounds} rounds, load {load:.1f}; CPU s per pass:")
    median = {name: statistics.median(values) for name, values in cpu.items()}
    for name, values in cpu.items():
        print(f"  {name:<18} {median[name]:.3f}  ({min(values):.3f}–{max(values):.3f})")
    before, days_only = median["before the SLI"], median["days packed"]
    for batch in ("live", "mixed"):
        job = median[f"the job's, {batch}"]
        print(f"  {batch}: the histogram's cost {job - before:+.3f} CPU s,", end=" ")
        print(f"the freshness's own part {job - days_only:+.3f} CPU s")
    spark.stop()


if __name__ == "__main__":
    main()
