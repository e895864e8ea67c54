"""What the freshness histogram adds to a batch: the write's observation with and without
`ingest.freshness.freshness_exprs`, over the same cached rows, alternated so both see the same
load; CPU seconds of this process tree (the JVM included), steadier than wall time on a shared
machine. Compare the difference with the whole BatchWriter's CPU (ingest_throughput.py --only
phases) for the share of a batch.

    python benchmarks/freshness_cost.py --rows 1000000 --rounds 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from benchmarks.ingest_throughput import cpu_seconds
from vigia.ingest.config import IngestConfig
from vigia.ingest.freshness import freshness_exprs
from vigia.ingest.job import build_spark
from vigia.ingest.metrics import day_window


def observed_write(frame: DataFrame, exprs: list[Column], name: str) -> float:
    from pyspark.sql import Observation

    before = cpu_seconds()
    frame.observe(Observation(name), *exprs).write.format("noop").mode("overwrite").save()
    return cpu_seconds() - before


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
    base = [
        F.count(F.lit(1)).alias("rows"),
        *(F.count_if(F.col("measure_date") == F.lit(d)).alias(d.isoformat()) for d in days),
    ]
    more = base + freshness_exprs(F.col("ingested_at"), F.col("ts"), F.col("snapshot_read"))
    observed_write(rows, base, "warm-base")
    observed_write(rows, more, "warm-more")
    without, with_ = [], []
    for i in range(args.rounds):
        without.append(observed_write(rows, base, f"base-{i}"))
        with_.append(observed_write(rows, more, f"more-{i}"))
    print(f"{args.rows:,} rows, {args.rounds} rounds, CPU s per pass (median, min–max):")
    for name, values in (("day counts", without), ("day counts + freshness", with_)):
        spread = f"{min(values):.3f}–{max(values):.3f}"
        print(f"  {name:<24} {statistics.median(values):.3f}  ({spread})")
    print(f"  freshness adds {statistics.median(with_) - statistics.median(without):.3f} CPU s")
    spark.stop()


if __name__ == "__main__":
    main()
