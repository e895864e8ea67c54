"""Catch-up from the real 3-broker Kafka cluster, local[2] and a standalone cluster side by side
(issue 25 §4).

1. The harness's real Kafka 4.0 cluster (tests/realstack: 3 combined broker+controller JVMs),
   topic ``measure`` with --partitions partitions (48, as catch_up.py: a day of 20,000 meters
   needs at least 39 on the mock), RF 3, min.insync.replicas 2 as compose's; --idle-partitions N
   adds N partitions in other topics (of 40, and one of the rest), and unless --no-live-traffic
   a producer writes about 100 messages/s across them (exporter_collect_real.py's) from before
   the backfill to the end: the cluster the pipeline has, 2,100 partitions with live traffic;
2. ``vigia-simulate backfill --days 1`` of ⌈--measures / 384⌉ meters into it (catch_up.py's);
   the brokers' CPU with no ingest watched for 15 s, then the fetch path alone: one consumer with
   the job's read settings reads the whole topic (messages/s, its CPU and the brokers' per million);
3. the same backlog ingested --repetitions times per setup, each time from the start with its own
   output, quarantine and checkpoint (``vigia-ingest run --available-now``, catch_up.py's command
   and watch): (a) ``--spark-master local[2]``; (b) a standalone master with --workers one-core
   workers (tests/spark_standalone.py), started after (a)'s runs so that its daemons are not in
   (a)'s numbers;
4. with --mock (default), the same size once more from librdkafka's mock cluster in this process
   with the real brokers stopped (drained alone first too): catch_up.py's pipeline, the baseline
   of docs/ingest-performance.md.

For each run: start → exit, measures/s overall and beyond the first batch (checkpoint log
mtimes), peak summed RSS and CPU-s per kind of process (the driver's Python, its JVM, its Python
workers; the executors' JVMs and their Python workers; the master and worker daemons; each
process's own CPU and its reaped children's, benchmarks/process_cpu.py, so Python workers that
live between two samples count too), the CPU-s of each broker process over the ingest (/proc), of
this process (which holds the mock brokers in run 4) and of the whole machine (/proc/stat: other
sessions' work shows there), Spark's per-stage task time and CPU from the driver's event log, and
the JVMs' per-thread CPU. Every measure must be stored once (row count and distinct keys). The
table gives each setup's median (min–max) over its repetitions.

A day of 20,000 meters (7,680,000 measures) from the issue's cluster, three repetitions each:

    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.ingest_real_cluster \\
        --measures 7680000 --idle-partitions 2052 --repetitions 3
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.ingest_real_cluster \\
        --measures 200000 --rows-per-batch 100000 --idle-partitions 2052 --repetitions 2 \\
        --no-mock                                                       # a quick check

Results: docs/ingest-performance.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pyarrow.dataset as ds
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from benchmarks.catch_up import Run, after_first_batch, run_ingest, run_simulator
from benchmarks.exporter_collect_real import produce
from benchmarks.exporter_cost_curve import chunks, cpu_seconds
from benchmarks.exporter_restarts import PARTITIONS, seed
from benchmarks.process_cpu import CpuBook, reading
from benchmarks.spark_profile import thread_cpu, thread_report
from tests.ingest.ingest_process import ingest_command
from tests.rdkafka_mock import ControlledCluster
from tests.realstack.kafka_cluster import KafkaCluster
from tests.realstack.topics import create_topic
from tests.spark_standalone import LOOPBACK, standalone_cluster
from vigia.common.logs import setup_logging
from vigia.ingest.kafka_source.adapter import consumer_config
from vigia.ingest.schema import MAGNITUDES, PERIODS_PER_DAY

log = logging.getLogger("benchmark")

KAFKA_HOME = Path("/work/shared/kafka/kafka_2.13-4.0.0")
TOPIC = "measure"
KEY = ["meter", "measure_date", "period", "magnitude"]
MIB = 1024 * 1024
DRIVER, DRIVER_JVM, DRIVER_WORKERS = "driver Python", "driver JVM", "driver's Python workers"
EXECUTORS, EXECUTOR_WORKERS = "executor JVMs", "executors' Python workers"
DAEMONS = "master + worker daemons"
KINDS = (DRIVER, DRIVER_JVM, DRIVER_WORKERS, EXECUTORS, EXECUTOR_WORKERS, DAEMONS)
IDLE_S = 15.0  # the brokers watched doing nothing, for their baseline
THREAD_EVERY = 10  # ticks of 0.2 s between readings of the JVMs' threads (hundreds of files)


@dataclass
class Watch:
    """What catch_up.py's sampler sees, per kind of process and across the standalone daemons'
    trees too (executors are the workers' children, not the driver's)."""

    daemons: Sequence[int]
    peak_rss: Counter[str] = field(default_factory=Counter)  # summed over a kind, at one sample
    largest: Counter[str] = field(default_factory=Counter)  # one process
    most: Counter[str] = field(default_factory=Counter)  # processes of a kind at once
    # The daemons predate the job; a reaped worker's CPU lands in its parent's kind.
    cpu: CpuBook = field(default_factory=lambda: CpuBook(frozenset({DAEMONS})))
    seen: dict[int, psutil.Process] = field(default_factory=dict)  # to tell which ended
    threads: dict[int, Counter[str]] = field(default_factory=dict)  # per JVM, last seen

    def processes(self, root: psutil.Process) -> Iterator[tuple[str, psutil.Process]]:
        yield DRIVER, root
        trees = [(root, DRIVER_JVM, DRIVER_WORKERS)]
        for pid in self.daemons:
            try:
                daemon = psutil.Process(pid)
            except psutil.Error:
                continue
            yield DAEMONS, daemon
            trees.append((daemon, EXECUTORS, EXECUTOR_WORKERS))
        for parent, jvm, python in trees:
            try:
                children = parent.children(recursive=True)
            except psutil.Error:
                continue
            for child in children:
                try:
                    yield (jvm if child.name() == "java" else python), child
                except psutil.Error:
                    continue

    def sample(self, root: psutil.Process, tick: int) -> None:
        rss: Counter[str] = Counter()
        count: Counter[str] = Counter()
        readings = []
        for kind, process in self.processes(root):
            try:
                with process.oneshot():
                    memory = process.memory_info().rss
                    cpu = reading(process, kind)
                    is_java = process.name() == "java"
                threads = thread_cpu(process.pid) if is_java and tick % THREAD_EVERY == 0 else None
            except (psutil.Error, OSError):  # exited meanwhile
                continue
            rss[kind] += memory
            count[kind] += 1
            self.largest[kind] = max(self.largest[kind], memory)
            readings.append(cpu)
            self.seen[process.pid] = process
            if threads is not None and kind != DAEMONS:
                self.threads[process.pid] = threads
        self.cpu.update(readings, lambda pid: self.seen[pid].is_running())
        for kind, total in rss.items():
            self.peak_rss[kind] = max(self.peak_rss[kind], total)
            self.most[kind] = max(self.most[kind], count[kind])

    def cpu_by_kind(self) -> Counter[str]:
        return self.cpu.by_kind()

    def job_cpu(self) -> float:
        """The driver's and executors' processes; the standalone daemons are the cluster's."""
        return sum(seconds for kind, seconds in self.cpu_by_kind().items() if kind != DAEMONS)

    def job_threads(self) -> Counter[str]:
        return sum(self.threads.values(), Counter())


def stage_kind(rdds: set[str], records_read: int, shuffle_records_written: int) -> str:
    """What a stage of the job's batch does (every stage is named after the query's `start`),
    by the plan of docs/ingest-performance.md: only the source's stage counts records read (a
    cached batch's lineage lists the source's RDD too)."""
    if "ShuffledRowRDD" in rdds:
        return "shuffle → dedupe → Parquet"
    if shuffle_records_written:
        return "cache → dedupe's shuffle"
    if records_read:
        return "source → parse, classify → cache"
    return "cache → quarantine; other"


@dataclass(frozen=True)
class StageTotal:
    stages: int
    tasks: int
    wall_s: float
    run_s: float
    cpu_s: float
    gc_s: float
    records_in: int


def stage_totals(events: Path) -> dict[str, StageTotal]:
    """Per kind of stage, over the whole run: Spark's own account from the driver's event log (the
    same numbers as spark_profile.py's REST API, which dies with a driver that exits)."""
    names: dict[int, set[str]] = {}
    walls: dict[int, float] = {}
    tasks: Counter[int] = Counter()
    run: Counter[int] = Counter()
    cpu: Counter[int] = Counter()
    gc: Counter[int] = Counter()
    records: Counter[int] = Counter()
    shuffled: Counter[int] = Counter()
    for path in events.iterdir() if events.is_dir() else []:
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                names[info["Stage ID"]] = {rdd["Name"] for rdd in info["RDD Info"]}
                walls[info["Stage ID"]] = (info["Completion Time"] - info["Submission Time"]) / 1e3
            elif event["Event"] == "SparkListenerTaskEnd" and "Task Metrics" in event:
                stage, metrics = event["Stage ID"], event["Task Metrics"]
                tasks[stage] += 1
                run[stage] += metrics["Executor Run Time"] / 1e3
                cpu[stage] += metrics["Executor CPU Time"] / 1e9
                gc[stage] += metrics["JVM GC Time"] / 1e3
                records[stage] += metrics.get("Input Metrics", {}).get("Records Read", 0)
                shuffled[stage] += metrics["Shuffle Write Metrics"]["Shuffle Records Written"]
    by_name: dict[str, StageTotal] = {}
    for stage, rdds in sorted(names.items()):
        name = stage_kind(rdds, records[stage], shuffled[stage])
        seen = by_name.get(name, StageTotal(0, 0, 0.0, 0.0, 0.0, 0.0, 0))
        by_name[name] = StageTotal(
            seen.stages + 1,
            seen.tasks + tasks[stage],
            seen.wall_s + walls[stage],
            seen.run_s + run[stage],
            seen.cpu_s + cpu[stage],
            seen.gc_s + gc[stage],
            seen.records_in + records[stage],
        )
    return by_name


@dataclass
class Result:
    label: str
    run: Run
    watch: Watch
    brokers_cpu: dict[str, float]  # broker → CPU-s over the ingest
    own_cpu: float  # this process over the ingest: the sampler, and the mock's brokers
    machine_cpu: float  # every process's, over the ingest: what else ran shows as the rest
    rows: int
    keys: int
    stages: dict[str, StageTotal]

    @property
    def seconds(self) -> float:
        return self.run.exited - self.run.started


@dataclass(frozen=True)
class Drain:
    """The fetch path alone: one consumer with the job's read settings reads the whole topic."""

    messages: int
    seconds: float
    client_cpu: float  # this process: on the mock, the mock's brokers are in it
    brokers_cpu: float

    def line(self) -> str:
        per_million = 1e6 / self.messages
        return (
            f"{self.messages:,} messages in {self.seconds:.1f} s "
            f"({self.messages / self.seconds:,.0f}/s); per million: this process "
            f"{self.client_cpu * per_million:.2f} CPU-s, "
            f"brokers {self.brokers_cpu * per_million:.2f} CPU-s"
        )


def drain(bootstrap: str, partitions: int, brokers: Mapping[str, int]) -> Drain:
    consumer = Consumer(consumer_config(bootstrap, {}, "vigia-benchmark-drain"))
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    brokers_before = {name: cpu_seconds(pid) for name, pid in brokers.items()}
    own_before = sum(psutil.Process().cpu_times()[:2])
    started = time.perf_counter()
    messages, ended = 0, 0
    while ended < partitions:
        for message in consumer.consume(num_messages=20_000, timeout=1.0):
            error = message.error()
            if error is None:
                messages += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                ended += 1
    seconds = time.perf_counter() - started
    own = sum(psutil.Process().cpu_times()[:2]) - own_before
    consumer.close()
    spent = sum(cpu_seconds(pid) - brokers_before[name] for name, pid in brokers.items())
    return Drain(messages, seconds, own, spent)


def busy_seconds() -> float:
    """CPU-s all cores spent running anything, since boot (guest time is inside user's)."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + t.irq + t.softirq)


def stored(output: Path) -> tuple[int, int]:
    """(rows, distinct measure keys) under the output root."""
    if not output.is_dir():
        return 0, 0
    table = ds.dataset(output, format="parquet", partitioning="hive").to_table(columns=KEY)
    return table.num_rows, table.group_by(KEY).aggregate([]).num_rows


def ingest(
    label: str,
    bootstrap: str,
    master: str,
    work: Path,
    args: argparse.Namespace,
    brokers: Mapping[str, int],
    daemons: Sequence[int] = (),
) -> Result:
    events = work / "events"
    events.mkdir(parents=True)
    env = {
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": LOOPBACK,  # as vigia-stack runs it: the driver binds loopback
        "PYSPARK_SUBMIT_ARGS": (
            f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://{events} "
            # One plain JSON file per application (Spark 4 rolls and compresses by default).
            "--conf spark.eventLog.rolling.enabled=false --conf spark.eventLog.compress=false "
            "pyspark-shell"
        ),
    }
    watch = Watch(daemons)
    brokers_before = {name: cpu_seconds(pid) for name, pid in brokers.items()}
    own_before = sum(psutil.Process().cpu_times()[:2])
    machine_before = busy_seconds()
    log.info("%s: ingesting into %s", label, work)
    command = ingest_command(
        bootstrap, work, "--available-now", master=master, batch=args.rows_per_batch
    )
    batches = math.ceil(args.measures / args.rows_per_batch)
    run = run_ingest(command, work, batches, env=env, sampler=watch.sample)
    own = sum(psutil.Process().cpu_times()[:2]) - own_before
    machine = busy_seconds() - machine_before
    spent = {name: cpu_seconds(pid) - brokers_before[name] for name, pid in brokers.items()}
    rows, keys = stored(work / "measure")
    result = Result(label, run, watch, spent, own, machine, rows, keys, stage_totals(events))
    log.info("%s:\n%s", label, details(result))
    return result


def details(result: Result) -> str:
    lines = [
        f"{'stage':<32} {'stages':>6} {'tasks':>6} {'wall':>7} {'run':>7} {'CPU':>7} {'GC':>6} "
        f"{'rows in':>10}"
    ]
    for name, s in sorted(result.stages.items(), key=lambda item: -item[1].run_s):
        lines.append(
            f"{name[:32]:<32} {s.stages:>6} {s.tasks:>6} {s.wall_s:>6.1f}s {s.run_s:>6.1f}s "
            f"{s.cpu_s:>6.1f}s {s.gc_s:>5.1f}s {s.records_in:>10,}"
        )
    lines.append("JVM threads of the job (driver and executors), CPU-s:")
    lines.append(thread_report(Counter(), result.watch.job_threads(), top=10))
    return "\n".join(lines)


def spread(values: Sequence[float], spec: str) -> str:
    """One run's value, or the repetitions' median (min–max)."""
    median, low, high = (
        format(v, spec) for v in (statistics.median(values), min(values), max(values))
    )
    return median if len(values) == 1 else f"{median} ({low}–{high})"


def table(groups: Sequence[Sequence[Result]], measures: int) -> str:
    """The side-by-side table, markdown: a column per setup, the spread of its runs per cell."""
    rows: list[tuple[str, list[str]]] = []

    def row(name: str, cell: Callable[[Sequence[Result]], str]) -> None:
        rows.append((name, [cell(runs) for runs in groups]))

    def each(name: str, value: Callable[[Result], float], spec: str, unit: str = "") -> None:
        row(name, lambda runs: spread([value(r) for r in runs], spec) + unit)

    def beyond(runs: Sequence[Result]) -> str:
        found = [f for f in (after_first_batch(r.run) for r in runs) if f is not None]
        if not found:
            return "one batch"
        rates = spread([after / seconds for after, seconds in found], ",.0f")
        return f"{rates}/s ({found[0][0]:,} measures, {len(found)} runs)"

    def stored_once(runs: Sequence[Result]) -> str:
        once = all(r.rows == r.keys == measures for r in runs)
        counts = ", ".join(sorted({f"{r.rows:,} rows, {r.keys:,} keys" for r in runs}))
        return counts + (" — each once" if once else " — **MISMATCH**")

    def job_share(r: Result) -> float:
        return sum(r.watch.cpu_by_kind().values()) / (2 * r.seconds) * 100

    each("start → exit (catch-up)", lambda r: r.seconds, ".1f", " s")
    each("measures/s overall", lambda r: measures / r.seconds, ",.0f")
    row("measures/s beyond the first batch", beyond)
    each(
        "start → query started",
        lambda r: (r.run.query_started or math.nan) - r.run.started,
        ".1f",
        " s",
    )
    row("stored", stored_once)
    row("exit code", lambda runs: ", ".join(sorted({str(r.run.returncode) for r in runs})))
    for kind in KINDS:
        row(
            f"peak RSS: {kind}",
            lambda runs, k=kind: (
                spread([r.watch.peak_rss[k] / MIB for r in runs], ",.0f")
                + f" MiB ({max(r.watch.most[k] for r in runs)}; largest "
                f"{max(r.watch.largest[k] for r in runs) / MIB:,.0f})"
                if any(r.watch.most[k] for r in runs)
                else "—"
            ),
        )
    for kind in KINDS:
        row(
            f"CPU-s: {kind}",
            lambda runs, k=kind: (
                spread([r.watch.cpu_by_kind()[k] for r in runs], ".1f")
                if any(r.watch.most[k] for r in runs)
                else "—"
            ),
        )
    each("**CPU-s: the job** (all but the daemons)", lambda r: r.watch.job_cpu(), ".1f")
    each("job CPU-s per million measures", lambda r: r.watch.job_cpu() / measures * 1e6, ".1f")
    row(
        "CPU-s: brokers",
        lambda runs: (
            spread([sum(r.brokers_cpu.values()) for r in runs], ".1f")
            if runs[0].brokers_cpu
            else "in this process: " + spread([r.own_cpu for r in runs], ".1f")
        ),
    )
    each("CPU-s: this process (sampler, live traffic)", lambda r: r.own_cpu, ".1f")
    each("CPU-s: the whole machine (/proc/stat)", lambda r: r.machine_cpu, ".1f")
    each("share of 2 cores: the job", job_share, ".0f", " %")
    each(
        "share of 2 cores: brokers",
        lambda r: sum(r.brokers_cpu.values()) / (2 * r.seconds) * 100,
        ".0f",
        " %",
    )
    each("task run-s, all stages", lambda r: sum(s.run_s for s in r.stages.values()), ".1f")
    each("task CPU-s, all stages", lambda r: sum(s.cpu_s for s in r.stages.values()), ".1f")
    lines = [
        "| | " + " | ".join(f"{runs[0].label} ({len(runs)} runs)" for runs in groups) + " |",
        "|---|" + "---:|" * len(groups),
    ]
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows]
    return "\n".join(lines)


def idle_topics(bootstrap: str, partitions: int) -> list[str]:
    """Topics of PARTITIONS and one of the rest, `partitions` in all besides `measure`, as the
    issue's cluster (2,100 partitions): a broker's idle work grows with the partitions it leads
    and follows. Returns the full ones, which the live traffic writes to."""
    full = [f"idle-{n:03d}" for n in range(partitions // PARTITIONS)]
    log.info("creating %d idle topics of %d partitions", len(full), PARTITIONS)
    for batch in chunks(full, 25):
        seed(bootstrap, list(batch), 0)
    if rest := partitions % PARTITIONS:
        create_topic(bootstrap, "idle-rest", rest)
    return full


def real_runs(
    args: argparse.Namespace, work: Path, meters: int, day: dt.date
) -> list[list[Result]]:
    cluster = KafkaCluster(args.kafka_home, work / "kafka")
    stop = threading.Event()
    traffic = None
    groups: list[list[Result]] = [[], []]
    try:
        cluster.start_all()
        create_topic(cluster.bootstrap, TOPIC, args.partitions, config={"min.insync.replicas": "2"})
        topics = idle_topics(cluster.bootstrap, args.idle_partitions)
        if topics and args.live_traffic:
            log.info("live traffic: about 100 messages/s across the idle topics, until the end")
            traffic = threading.Thread(target=produce, args=(cluster.bootstrap, topics, stop))
            traffic.start()
        log.info("producing %s measures into the real cluster", f"{args.measures:,}")
        produce_s = run_simulator(cluster.bootstrap, meters, day)
        log.info("produced in %.1f s (%s/s)", produce_s, f"{args.measures / produce_s:,.0f}")
        brokers = {name: process.pid for name, process in cluster.logs() if process.pid}
        before = {name: cpu_seconds(pid) for name, pid in brokers.items()}
        time.sleep(IDLE_S)
        idle = sum(cpu_seconds(pid) - before[name] for name, pid in brokers.items()) / IDLE_S
        log.info("brokers with no ingest (after the backfill): %.2f CPU-s per s, together", idle)
        drained = drain(cluster.bootstrap, args.partitions, brokers)
        log.info("real brokers, drained: %s", drained.line())
        for n in range(args.repetitions):
            groups[0].append(
                ingest(
                    "real, local[2]",
                    cluster.bootstrap,
                    "local[2]",
                    work / "local" / str(n),
                    args,
                    brokers,
                )
            )
        with standalone_cluster(work / "spark", workers=args.workers) as spark:
            daemons = [spark.master_pid, *spark.workers.values()]
            label = f"real, standalone {args.workers} × 1 core"
            for n in range(args.repetitions):
                groups[1].append(
                    ingest(
                        label,
                        cluster.bootstrap,
                        spark.url,
                        work / "cluster" / str(n),
                        args,
                        brokers,
                        daemons,
                    )
                )
    finally:
        stop.set()
        if traffic is not None:
            traffic.join(60)
        cluster.close()
    return groups


def mock_run(args: argparse.Namespace, work: Path, meters: int, day: dt.date) -> Result:
    cluster = ControlledCluster(brokers=3)
    try:
        cluster.create_topic(TOPIC, args.partitions)
        run_simulator(cluster.bootstrap_servers, meters, day)
        drained = drain(cluster.bootstrap_servers, args.partitions, {})
        log.info("mock brokers, drained: %s", drained.line())
        return ingest("mock, local[2]", cluster.bootstrap_servers, "local[2]", work, args, {})
    finally:
        cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kafka-home", type=Path, default=KAFKA_HOME)
    parser.add_argument("--measures", type=int, default=2_000_000, help="at least (2000000)")
    parser.add_argument("--partitions", type=int, default=48, help="of measure (48)")
    parser.add_argument("--rows-per-batch", type=int, default=1_000_000, help="(1000000)")
    parser.add_argument("--workers", type=int, default=2, help="one-core workers (2)")
    parser.add_argument(
        "--idle-partitions", type=int, default=0, help="in other topics, besides measure's (0)"
    )
    parser.add_argument(
        "--live-traffic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="about 100 messages/s across the idle topics (on)",
    )
    parser.add_argument("--repetitions", type=int, default=1, help="of each real-broker ingest (1)")
    parser.add_argument("--mock", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--work-dir", type=Path, help="kept (default: a temporary directory)")
    args = parser.parse_args()
    setup_logging("INFO")
    per_meter = PERIODS_PER_DAY * len(MAGNITUDES)
    meters = math.ceil(args.measures / per_meter)
    args.measures = meters * per_meter
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="vigia-real-catch-up-"))
    day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    started = time.monotonic()
    groups = real_runs(args, work, meters, day)
    if args.mock:
        groups.append([mock_run(args, work / "mock", meters, day)])
    traffic = "live traffic" if args.idle_partitions and args.live_traffic else "no traffic"
    print(
        f"\n{args.measures:,} measures ({meters:,} meters × 1 day), {args.partitions} partitions "
        f"of measure, {args.partitions + args.idle_partitions:,} in all ({traffic}), "
        f"{args.rows_per_batch:,} per batch; median (min–max) of the repetitions; "
        f"{time.monotonic() - started:.0f} s in all, load average now {os.getloadavg()[0]:.1f}\n"
    )
    print(table(groups, args.measures))


if __name__ == "__main__":
    main()
