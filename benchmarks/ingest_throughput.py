"""Ingest throughput: steady-state measures/s through validation into Parquet, three ways.

1. kafka     vigia-kafka source (librdkafka's mock cluster in this process, or a real cluster with
             --bootstrap-servers) → transform → exactly-once Parquet sink: the real job's pipeline.
2. rate      Spark's native ``rate-micro-batch`` source turned into the same Kafka-shaped rows (the
             same JSON, built from its value column) → the same transform and sink.
3. pyarrow   the valid rows, already typed, written with pyarrow.parquet partitioned by
             measure_date: the ceiling for a Parquet write on this machine.
4. phases    one batch of the same rows, read from Parquet, through each step of the job in turn
             (parse, classify, persist, dedupe, the whole BatchWriter): wall and CPU seconds of each
             step (CPU of this process, the JVM and its Python workers: steadier than wall time on
             a shared machine).

The last Kafka round is also shown by Spark stage (the UI's REST API: wall, run and CPU time per
stage) and by JVM thread (the JIT compilers and the GC included), see ``spark_profile.py``.

Both streaming runs use the job's own code (`ingest.job.observed_stream`, `BatchWriter`,
`ExactlyOnceSink`) with ``maxOffsetsPerTrigger`` / ``rowsPerBatch`` = --rows-per-batch; the rate
is Σ rows / Σ batch durations over the batches after the first (JVM and Python-worker warm-up).
Goals (issue 12): kafka ≥ 150,000 measures/s (aim 250,000) on 2 cores and ≥ 70 % of rate.
Every report line carries the 1-minute load average: on a shared machine, compare runs made back
to back.

    python benchmarks/ingest_throughput.py                      # mock cluster, local[2], 250k
    python benchmarks/ingest_throughput.py --rows-per-batch 800000 --batches-per-round 1
    python benchmarks/ingest_throughput.py --bootstrap-servers broker:9092 --topic vigia-bench
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil
import pyarrow.parquet as pq
from confluent_kafka import Producer
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from tqdm import tqdm

from benchmarks.spark_profile import jvm_thread_cpu, last_stage_id, stage_report, thread_report
from tests.rdkafka_mock import ControlledCluster
from vigia.common.logs import setup_logging
from vigia.ingest import transform
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import (
    BYPASS_PARTIAL_AGGREGATION,
    BatchWriter,
    IngestJob,
    build_spark,
    observed_stream,
    preflight_kafka,
    read_stream,
    start_query,
)
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.schema import KAFKA_SOURCE_COLUMNS, MAGNITUDES
from vigia.ingest.sinks import ExactlyOnceSink

log = logging.getLogger("benchmark")

METERS = 10_000
DAY = "2026-11-20"
# librdkafka's mock broker keeps about 5 MB of log per partition: ≈200,000 of these messages,
# lz4-compressed. A round must fit in what the topic keeps.
MOCK_MESSAGES_PER_PARTITION = 200_000


def measure_columns(n: Column) -> tuple[Column, Column]:
    """(key, value) of measure number ``n``: meter, period and magnitude cycle so that every key is
    distinct below 10,000 × 96 × 4; value and TS vary like real readings do."""
    meter = n % METERS
    period = (F.floor(n / METERS) % 96) + 1
    magnitude = F.element_at(
        F.array(*(F.lit(m) for m in MAGNITUDES)), (F.floor(n / (METERS * 96)) % 4 + 1).cast("int")
    )
    value = ((n * 7919) % 5000) / 1000.0
    ts = F.date_format(
        F.timestamp_seconds(F.unix_timestamp(F.lit(DAY), "yyyy-MM-dd") + period * 900 + n % 300),
        "yyyy-MM-dd'T'HH:mm:ss'Z'",
    )
    key = F.format_string("UY%06d", meter)
    json = F.format_string(
        '{"meter":"UY%06d","measure_date":"' + DAY + '","period":%d,"magnitude":"%s",'
        '"value":%.3f,"ts":"%s"}',
        meter,
        period,
        magnitude,
        value,
        ts,
    )
    return key.cast("binary"), json.cast("binary")


def kafka_rows(numbers: DataFrame, topic: str, partitions: int) -> DataFrame:
    """Rows shaped like Spark's Kafka source, from a DataFrame with a long column ``n``."""
    key, value = measure_columns(F.col("n"))
    return numbers.select(
        key.alias("key"),
        value.alias("value"),
        F.lit(topic).alias("topic"),
        (F.col("n") % partitions).cast("int").alias("partition"),
        F.col("n").alias("offset"),
        F.current_timestamp().alias("timestamp"),
        F.lit(0).alias("timestampType"),
    ).select(*KAFKA_SOURCE_COLUMNS)


def produce(spark: SparkSession, servers: str, topic: str, first: int, count: int) -> None:
    """Measures first … first+count−1 to Kafka, the JSON built by Spark exactly as for `rate`."""
    producer = Producer(
        {
            "bootstrap.servers": servers,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 500_000,
            "log_level": 3,
        }
    )
    chunk = 100_000
    with tqdm(total=count, desc="producing", unit="msg", leave=False) as bar:
        for start in range(first, first + count, chunk):
            numbers = spark.range(start, min(start + chunk, first + count)).withColumnRenamed(
                "id", "n"
            )
            table = kafka_rows(numbers, topic, 1).select("key", "value").toArrow()
            for key, value in zip(
                table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True
            ):
                while True:
                    try:
                        producer.produce(topic, value, key)
                        break
                    except BufferError:
                        producer.poll(0.05)
            producer.poll(0)
            bar.update(table.num_rows)
    if producer.flush(120):
        raise RuntimeError("the benchmark's messages were not all delivered")


@dataclass
class Result:
    name: str
    rows: int
    seconds: float
    batch_rows: list[int]
    load: float = field(default_factory=lambda: os.getloadavg()[0])

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


def steady_state(name: str, progress: list[dict[str, Any]]) -> Result:
    measured = [p for p in progress if p["numInputRows"]][1:]  # the first batch warms up
    return Result(
        name,
        sum(p["numInputRows"] for p in measured),
        sum(p["batchDuration"] for p in measured) / 1000,
        [p["numInputRows"] for p in measured],
    )


def noop_writer(frame: DataFrame, batch_id: int) -> None:
    """Reads every row and does nothing with it: the cost of the source alone."""
    frame.write.format("noop").mode("overwrite").save()


def run_kafka(spark: SparkSession, args: argparse.Namespace, work: Path) -> tuple[Result, Result]:
    """(the job's pipeline, the source alone), over the same messages, round after round."""
    cluster = None
    servers = args.bootstrap_servers
    if not servers:
        cluster = ControlledCluster(brokers=3)
        cluster.create_topic(args.topic, args.partitions)
        servers = cluster.bootstrap_servers
    config = IngestConfig(
        bootstrap_servers=servers,
        topic=args.topic,
        output=str(work / "kafka" / "measure"),
        quarantine=str(work / "kafka" / "quarantine"),
        checkpoint=str(work / "kafka" / "checkpoint"),
        max_offsets_per_trigger=args.rows_per_batch,
        available_now=True,
        metrics_port=0,
        spark_master=args.spark_master,
    )
    source_only = replace(
        config,
        checkpoint=str(work / "kafka-source" / "checkpoint"),
        query_name="vigia-bench-source",
        group_id="",
    )
    pipeline: list[dict[str, Any]] = []
    source: list[dict[str, Any]] = []
    per_round = args.rows_per_batch * args.batches_per_round
    for round_number in range(args.rounds):
        produce(spark, servers, args.topic, round_number * per_round, per_round)
        job = IngestJob(spark, config, IngestMetrics(config.query_name), preflight_kafka(config))
        first_stage, threads = last_stage_id(spark), jvm_thread_cpu(spark)
        job.run()
        if round_number == args.rounds - 1:
            log.info(
                "the last round's Kafka pipeline (%d batches), by Spark stage:\n%s\n"
                "and by JVM thread:\n%s",
                args.batches_per_round,
                stage_report(spark, first_stage),
                thread_report(threads, jvm_thread_cpu(spark)),
            )
        assert job.query is not None
        pipeline.extend(json.loads(p.json) for p in job.query.recentProgress)
        query = start_query(read_stream(spark, source_only), source_only, noop_writer)
        query.awaitTermination()
        source.extend(json.loads(p.json) for p in query.recentProgress)
        log.info("kafka round %d of %d done", round_number + 1, args.rounds)
    if cluster is not None:
        cluster.close()
    return (
        steady_state("kafka (vigia-kafka) → validation → Parquet", pipeline),
        steady_state("  kafka source alone (noop sink)", source),
    )


def run_rate(
    spark: SparkSession, args: argparse.Namespace, work: Path, *, pipeline: bool
) -> Result:
    """rate-micro-batch → the same Kafka-shaped rows → the job's pipeline (or a noop sink)."""
    batches = args.rounds * args.batches_per_round
    raw = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", args.rows_per_batch)
        .option("numPartitions", args.partitions)
        .load()
        .select(F.col("value").alias("n"))
    )
    name = "rate" if pipeline else "rate-source"
    config = IngestConfig(
        bootstrap_servers="unused",
        output=str(work / name / "measure"),
        quarantine=str(work / name / "quarantine"),
        checkpoint=str(work / name / "checkpoint"),
        trigger_interval=0.001,
        metrics_port=0,
        query_name=f"vigia-bench-{name}",
    )
    rows = kafka_rows(raw, args.topic, args.partitions)
    work_on: Callable[[DataFrame, int], None] = noop_writer
    if pipeline:
        rows = observed_stream(rows)
        work_on = BatchWriter(
            ExactlyOnceSink(spark, config.checkpoint), config, IngestMetrics(config.query_name)
        )

    def writer(frame: DataFrame, batch_id: int) -> None:
        # Batches past the last measured one do nothing, so that stopping the query interrupts
        # no real work (an interrupted write fills stderr with stack traces).
        if batch_id <= batches:
            work_on(frame, batch_id)

    query = start_query(rows, config, writer)
    try:
        with tqdm(total=batches + 1, desc=f"{name} batches", leave=False) as bar:
            done = 0
            while done < batches + 2:
                query.awaitTermination(1)
                if query.exception() is not None:
                    raise RuntimeError(str(query.exception()))
                last = query.lastProgress
                finished = last.batchId + 1 if last is not None else 0
                bar.update(min(finished, batches + 1) - min(done, batches + 1))
                done = finished
    finally:
        query.stop()
    progress = [json.loads(p.json) for p in query.recentProgress]
    progress = [p for p in progress if p["batchId"] <= batches]
    if pipeline:
        return steady_state("rate-micro-batch → validation → Parquet", progress)
    return steady_state("  rate-micro-batch + JSON build alone (noop)", progress)


def run_pyarrow(spark: SparkSession, args: argparse.Namespace, work: Path) -> Result:
    """The rows the pipelines store, already typed in Arrow, written by pyarrow alone."""
    numbers = spark.range(args.rows_per_batch).withColumnRenamed("id", "n")
    valid, _ = transform.process(kafka_rows(numbers, args.topic, args.partitions))
    table = valid.toArrow()
    seconds = 0.0
    repeats = 3
    for repeat in range(repeats):
        started = time.perf_counter()
        pq.write_to_dataset(
            table,
            str(work / "pyarrow" / str(repeat)),
            partition_cols=["measure_date"],
            compression="snappy",
        )
        seconds += time.perf_counter() - started
    return Result(
        "pyarrow Parquet write of the same rows (ceiling)",
        table.num_rows * repeats,
        seconds,
        [table.num_rows] * repeats,
    )


def cpu_seconds() -> float:
    """CPU time of this process and its children: the JVM and Spark's Python workers."""
    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:  # a worker that exited meanwhile
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


@dataclass
class Phase:
    name: str
    wall: float
    cpu: float
    load: float


def run_phases(spark: SparkSession, args: argparse.Namespace, work: Path) -> list[Phase]:
    """Each step of a batch, cumulative, over one batch of rows read from Parquet; a step's cost is
    the difference with the step before. Each is run once to warm up, then measured once."""
    source = str(work / "phases" / "raw")
    numbers = spark.range(args.rows_per_batch).withColumnRenamed("id", "n")
    kafka_rows(numbers, args.topic, args.partitions).repartition(args.partitions).write.parquet(
        source
    )
    raw = spark.read.parquet(source)
    config = IngestConfig(
        bootstrap_servers="unused",
        output=str(work / "phases" / "measure"),
        quarantine=str(work / "phases" / "quarantine"),
        checkpoint=str(work / "phases" / "checkpoint"),
    )
    writer = BatchWriter(
        ExactlyOnceSink(spark, config.checkpoint), config, IngestMetrics(config.query_name)
    )
    batch_ids = iter(range(1_000_000))

    def noop(frame: DataFrame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def persisted() -> None:
        frame = observed_stream(raw).persist()
        try:
            noop(frame)
        finally:
            frame.unpersist()

    def deduped() -> None:
        # The session setting BatchWriter makes for the dedupe.
        spark.conf.set(BYPASS_PARTIAL_AGGREGATION, "true")
        valid, _ = transform.split_classified(observed_stream(raw))
        noop(transform.dedupe_latest(valid))

    steps: list[tuple[str, Callable[[], None]]] = [
        ("read the batch (Parquet, noop sink)", lambda: noop(raw)),
        ("+ parse", lambda: noop(transform.parse(raw))),
        ("+ classify, observe, slim", lambda: noop(observed_stream(raw))),
        ("+ persist", persisted),
        ("classify + split + dedupe (no persist)", deduped),
        (
            "whole BatchWriter (persist, dedupe, sink)",
            lambda: writer(observed_stream(raw), next(batch_ids)),
        ),
    ]
    phases = []
    for name, step in steps:
        step()
        cpu, wall = cpu_seconds(), time.perf_counter()
        step()
        phases.append(
            Phase(name, time.perf_counter() - wall, cpu_seconds() - cpu, os.getloadavg()[0])
        )
    return phases


def phase_report(phases: list[Phase], rows: int) -> str:
    lines = [
        f"{'step (cumulative)':<44} {'wall s':>7} {'CPU s':>7} {'rows/CPU-s':>11} {'load':>5}",
        "-" * 78,
    ]
    for phase in phases:
        lines.append(
            f"{phase.name:<44} {phase.wall:>7.2f} {phase.cpu:>7.2f} "
            f"{rows / phase.cpu if phase.cpu else 0:>11,.0f} {phase.load:>5.1f}"
        )
    return "\n".join(lines)


def report(rows: list[tuple[Result, Result]], native: Result, kafka: Result) -> str:
    """One line per result, with its rate relative to the reference given with it."""
    lines = [
        f"{'pipeline':<48} {'rows':>10} {'seconds':>8} {'rows/s':>10} {'vs rate':>8} {'load':>5}",
        "-" * 94,
    ]
    for result, reference in rows:
        share = result.rate / reference.rate if reference.rate else 0.0
        lines.append(
            f"{result.name:<48} {result.rows:>10,} {result.seconds:>8.2f} "
            f"{result.rate:>10,.0f} {share:>8.0%} {result.load:>5.1f}"
        )
    lines.append("")
    lines.append(
        f"goal ≥ 150,000 measures/s: {'met' if kafka.rate >= 150_000 else 'NOT met'} "
        f"(aim 250,000: {'met' if kafka.rate >= 250_000 else 'not met'}) "
        f"({kafka.rate:,.0f}); goal ≥ 70 % of rate: "
        f"{'met' if kafka.rate >= 0.7 * native.rate else 'NOT met'} "
        f"({kafka.rate / native.rate:.0%})"
    )
    lines.append(f"kafka batch sizes: {kafka.batch_rows}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap-servers", help="a real cluster (default: in-process mock)")
    parser.add_argument("--topic", default="measure", help="topic to fill and read (measure)")
    parser.add_argument("--rows-per-batch", type=int, default=250_000)
    parser.add_argument("--batches-per-round", type=int, default=2, help="batches per production")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="produce, then drain, this many times",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=8,
        help="partitions of the mock cluster's topic and of the rate source (8); the mock keeps "
        f"≈{MOCK_MESSAGES_PER_PARTITION:,} messages per partition",
    )
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--work-dir", help="keep the outputs here instead of a temporary dir")
    parser.add_argument(
        "--only",
        choices=["all", "phases", "streams"],
        default="all",
        help="the per-step profile of one batch, the streaming runs, or both (all)",
    )
    args = parser.parse_args()
    per_round = args.rows_per_batch * args.batches_per_round
    fits = per_round <= MOCK_MESSAGES_PER_PARTITION * args.partitions
    if args.only != "phases" and not args.bootstrap_servers and not fits:
        parser.error(
            f"a round of {per_round:,} messages does not fit in the mock cluster's "
            f"{args.partitions} partitions (≈{MOCK_MESSAGES_PER_PARTITION:,} each): "
            "raise --partitions or lower --batches-per-round"
        )
    setup_logging("INFO")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="vigia-ingest-bench-"))
    spark = build_spark(
        replace(IngestConfig(bootstrap_servers="unused"), spark_master=args.spark_master)
    )
    phases: list[Phase] = []
    try:
        if args.only in ("all", "phases"):
            phases = run_phases(spark, args, work)
            log.info(
                "one batch, step by step (%s rows):\n%s",
                f"{args.rows_per_batch:,}",
                phase_report(phases, args.rows_per_batch),
            )
        if args.only == "phases":
            return
        native = run_rate(spark, args, work, pipeline=True)
        log.info("rate: %s rows/s over %d batches", f"{native.rate:,.0f}", len(native.batch_rows))
        native_source = run_rate(spark, args, work, pipeline=False)
        kafka, kafka_source = run_kafka(spark, args, work)
        log.info("kafka: %s rows/s over %d batches", f"{kafka.rate:,.0f}", len(kafka.batch_rows))
        ceiling = run_pyarrow(spark, args, work)
    finally:
        spark.stop()
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    table = report(
        [
            (kafka, native),
            (native, native),
            (kafka_source, native_source),
            (native_source, native_source),
            (ceiling, native),
        ],
        native,
        kafka,
    )
    log.info("results (%s rows per batch):\n%s", f"{args.rows_per_batch:,}", table)
    if phases:
        log.info("one batch, step by step:\n%s", phase_report(phases, args.rows_per_batch))


if __name__ == "__main__":
    main()
