"""`vigia-ingest repair --date D` of a whole day on the real stack, phase by phase.

The harness's parts (tests/realstack, as benchmarks/connect_log_volume.py, without the tenants'
load): a 3-node Kafka cluster, the MariaDB HES, a distributed Connect worker with connector
``hes-measure`` as registered from docker/connect/, and the ingest job streaming in this process
(local[2], the product's trigger interval and batch size unless told otherwise).

1. The day: --meters × 96 periods × --magnitudes rows written into ``hes.measure`` by one
   ``INSERT … SELECT`` over MariaDB's sequence engine, with the binlog off for that session
   (``sql_log_bin=0``): the HES holds the day, the connector never sees it, Parquet lacks all of
   it, as after a binlog purge. --other-days writes neighbouring days the same way, which the
   snapshot's chunk queries walk past (the table's key is meter first).
2. The repair, with the job streaming: `vigia-ingest repair` as the CLI runs it (main_repair, in
   this process's Spark session). Watched every second: the topic's end offsets (the connector's
   snapshot rows in Kafka) and the offsets of the job's last finished batch (stored in Parquet).
3. Each measure of the day stored once: rows and distinct keys of the day's Parquet (pyarrow).

Printed: the phases, signal → every snapshot row in Kafka → every row stored in Parquet →
completeness complete, each with its seconds and rows/s; the job's batches; the CPU seconds of
the connector, the HES, the brokers and the job over the repair; the machine's load average.

    VIGIA_TEST_KAFKA_HOME=/work/shared/kafka/kafka_2.13-4.0.0 \\
    VIGIA_TEST_CONNECT_HOME=/work/shared/connect-debezium-runtime \\
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.repair_day --meters 1000
    ... --connector-setting incremental.snapshot.chunk.size=1024    # another connector setting
    ... --max-offsets-per-trigger 250000                            # another job setting

Results: docs/performance.md, "Repairing a day".
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
import pyarrow.dataset as ds
from tqdm import tqdm

from tests.conftest import free_port
from tests.realstack.connect_worker import CONNECTOR, ConnectWorker, connector_config
from tests.realstack.kafka_cluster import KafkaCluster
from vigia.common.logs import setup_logging
from vigia.ingest.cli import build_parser
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, preflight_kafka, quiet_spark_logs, session_settings
from vigia.ingest.kafka_source.adapter import KafkaAdmin
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.repair import EXIT_REPAIRED
from vigia.ingest.repair_cli import SIGNAL_DSN_ENV, main_repair
from vigia.ingest.schema import MAGNITUDES, MEASURE_KEY_COLUMNS, PERIODS_PER_DAY
from vigia.ingest.spark_session import start_session
from vigia.launcher.mariadb import HesDatabase

log = logging.getLogger("benchmark")

TOPIC = "measure"
DAY = dt.date(2026, 11, 20)
# The connector settings that decide a snapshot's speed, printed with the results.
TUNING = ("incremental.snapshot", "max.", "poll.interval", "producer.override")


@dataclasses.dataclass
class Moments:
    """Monotonic seconds of each phase's end (None until it happens)."""

    signal: float | None = None
    first_in_kafka: float | None = None
    all_in_kafka: float | None = None
    all_stored: float | None = None
    complete: float | None = None
    kafka_end: int = 0  # the topic's summed end offset once every snapshot row is in it
    load: list[tuple[str, tuple[float, float, float]]] = dataclasses.field(default_factory=list)

    def mark(self, name: str, at: float) -> None:
        setattr(self, name, at)
        self.load.append((name, os.getloadavg()))
        log.info("%s (load average %.1f)", name.replace("_", " "), os.getloadavg()[0])


class SignalSent(logging.Handler):
    """The repair's own log line says when the signal went out."""

    def __init__(self, moments: Moments) -> None:
        super().__init__()
        self.moments = moments

    def emit(self, record: logging.LogRecord) -> None:
        if self.moments.signal is None and str(record.msg).startswith("signal "):
            self.moments.mark("signal", time.monotonic())


def load_day(hes: HesDatabase, day: dt.date, meters: int, magnitudes: int) -> int:
    """The day's rows, by one INSERT … SELECT without binlog; returns the rows written."""
    names = " UNION ALL ".join(f"SELECT '{m}' AS magnitude" for m in MAGNITUDES[:magnitudes])
    connection = hes.admin()
    try:
        with connection.cursor() as cursor:
            cursor.execute("USE hes")  # the sequence engine's tables live in a database
            cursor.execute("SET SESSION sql_log_bin = 0")
            rows = cursor.execute(
                "INSERT INTO hes.measure (meter, measure_date, period, magnitude, value, ts) "
                "SELECT CONCAT('MTR', LPAD(m.seq, 8, '0')), %s, p.seq, g.magnitude, "
                "p.seq * 0.25, %s "
                f"FROM seq_0_to_{meters - 1} m CROSS JOIN seq_1_to_{PERIODS_PER_DAY} p "
                f"CROSS JOIN ({names}) g",
                (day, dt.datetime.combine(day, dt.time(23, 59))),
            )
    finally:
        connection.close()
    return int(rows)


def set_connector(worker: ConnectWorker, config: dict[str, Any], timeout: float = 180.0) -> None:
    answer = httpx.put(f"{worker.url}/connectors/{CONNECTOR}/config", json=config, timeout=60)
    answer.raise_for_status()
    time.sleep(2)  # the PUT restarts the task: RUNNING before it is the old one's
    wait(worker.connector_running, timeout, "the connector RUNNING with its new settings")


def binlog_readers(worker: ConnectWorker) -> int:
    """How many times the worker's task has started reading the binlog."""
    assert worker.process is not None
    return worker.process.new_output().count("Connected to binlog")


def wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout:g} s")
        time.sleep(1)


def ends(admin: KafkaAdmin) -> int:
    return sum(admin.topic_watermarks([TOPIC])[1].values())


def job_offset(job: IngestJob) -> int:
    """The summed end offsets of the job's last finished batch."""
    progress = job.query.lastProgress if job.query is not None else None
    if not progress:
        return 0
    end = progress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    return sum(int(offset) for offset in end.get(TOPIC, {}).values())


def watch(
    admin: KafkaAdmin,
    job: IngestJob,
    start: int,
    rows: int,
    moments: Moments,
    done: threading.Event,
) -> None:
    """Marks the phases the topic and the job show, with a bar over the rows in Kafka."""
    with tqdm(total=rows, desc="snapshot rows in Kafka", unit="row", disable=None) as bar:
        while not done.wait(1.0):
            now, end = time.monotonic(), ends(admin)
            bar.update(min(rows, end - start) - bar.n)
            if moments.first_in_kafka is None and end > start:
                moments.mark("first_in_kafka", now)
            if moments.all_in_kafka is None and end - start >= rows:
                moments.kafka_end = end
                moments.mark("all_in_kafka", now)
            if (
                moments.all_in_kafka
                and moments.all_stored is None
                and job_offset(job) >= moments.kafka_end
            ):
                moments.mark("all_stored", now)


def cpu_seconds(pids: dict[str, list[int]]) -> dict[str, float]:
    """User + system CPU seconds per named group of processes, their children included."""
    totals: dict[str, float] = {}
    for name, group in pids.items():
        total = 0.0
        for pid in group:
            try:
                process = psutil.Process(pid)
                for p in [process, *process.children(recursive=True)]:
                    times = p.cpu_times()
                    total += times.user + times.system
            except psutil.NoSuchProcess:
                continue
        totals[name] = total
    return totals


def stored_once(output: Path, day: dt.date) -> tuple[int, int]:
    """Rows and distinct measure keys of the day in Parquet."""
    table = ds.dataset(output / f"measure_date={day}", format="parquet").to_table(
        columns=[c for c in MEASURE_KEY_COLUMNS if c != "measure_date"]
    )
    return table.num_rows, table.group_by(table.column_names).aggregate([]).num_rows


def rate(rows: int, began: float | None, ended: float | None) -> str:
    """Seconds between two moments, with rows/s when rows are counted."""
    if began is None or ended is None:
        return "not reached"
    seconds = ended - began
    per_second = f"  {rows / max(seconds, 1e-9):>9,.0f} rows/s" if rows else ""
    return f"{seconds:8.1f} s{per_second}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meters", type=int, default=1000)
    parser.add_argument("--magnitudes", type=int, default=len(MAGNITUDES))
    parser.add_argument("--other-days", type=int, default=0, help="days written around the day")
    parser.add_argument(
        "--connector-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a connector setting over docker/connect/'s (repeatable)",
    )
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument("--trigger-interval", type=float)
    parser.add_argument("--poll-interval", type=float, default=5.0, help="the repair's")
    parser.add_argument("--timeout", type=float, default=2400.0, help="the repair's")
    args = parser.parse_args()
    setup_logging("INFO")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # a line per call into the JVM
    moments = Moments()
    logging.getLogger("vigia.ingest.repair_cli").addHandler(SignalSent(moments))

    with tempfile.TemporaryDirectory(prefix="vigia-repair-day-") as tmp:
        workdir = Path(tmp)
        cluster = KafkaCluster(Path(os.environ["VIGIA_TEST_KAFKA_HOME"]), workdir / "kafka")
        hes = HesDatabase(workdir / "hes", free_port())
        worker = ConnectWorker(
            Path(os.environ["VIGIA_TEST_CONNECT_HOME"]), cluster.home, workdir / "connect"
        )
        try:
            cluster.start_all()
            cluster.create_pipeline_topics()
            hes.start()
            worker.start(cluster.bootstrap, hes)
            config = connector_config(cluster.bootstrap, hes)
            for setting in args.connector_setting:
                key, value = setting.split("=", 1)
                config[key] = value
            if args.connector_setting:
                set_connector(worker, config)
            # The task streams the binlog once its initial snapshot (of an empty table) is over:
            # one that began after the load would carry the day to Kafka before the repair.
            streams = 2 if args.connector_setting else 1
            wait(lambda: binlog_readers(worker) >= streams, 300, "the connector on the binlog")
            settings = {k: config[k] for k in sorted(config) if k.startswith(TUNING)}
            print(f"connector: {settings}")

            began = time.monotonic()
            rows = load_day(hes, DAY, args.meters, args.magnitudes)
            loaded = time.monotonic() - began
            print(f"HES: {rows:,} rows of {DAY} in {loaded:.1f} s ({rows / loaded:,.0f} rows/s)")
            for k in range(1, args.other_days + 1):
                around = DAY + dt.timedelta(days=k if k % 2 else -k)
                print(f"HES: {load_day(hes, around, args.meters, args.magnitudes):,} of {around}")
            return repair(args, cluster, hes, worker, workdir, rows, moments)
        finally:
            worker.close()
            hes.close()
            cluster.close()


def repair(
    args: argparse.Namespace,
    cluster: KafkaCluster,
    hes: HesDatabase,
    worker: ConnectWorker,
    workdir: Path,
    rows: int,
    moments: Moments,
) -> int:
    session = start_session(
        "vigia-repair-day", {**session_settings("local[2]", "2g"), "spark.ui.enabled": "false"}
    )
    quiet_spark_logs(session, "WARN")
    admin = KafkaAdmin(cluster.bootstrap, {}, "vigia-bench-unused", 30)
    config = IngestConfig(
        bootstrap_servers=cluster.bootstrap,
        output=str(workdir / "measure"),
        quarantine=str(workdir / "quarantine"),
        checkpoint=str(workdir / "checkpoint"),
        metrics_port=0,
        group_id="vigia-bench-repair",
    )
    if args.max_offsets_per_trigger:
        config = dataclasses.replace(config, max_offsets_per_trigger=args.max_offsets_per_trigger)
    if args.trigger_interval:
        config = dataclasses.replace(config, trigger_interval=args.trigger_interval)
    Path(config.output).mkdir(parents=True)
    job = IngestJob(session, config, IngestMetrics(config.query_name), preflight_kafka(config))
    streaming = threading.Thread(target=job.run, name="ingest", daemon=True)
    streaming.start()
    wait(lambda: job.query is not None and job.query.lastProgress is not None, 300, "job")
    print(f"job: trigger {config.trigger_interval:g} s, {config.max_offsets_per_trigger} a batch")

    pids = {
        "connect": [worker.process.pid] if worker.process and worker.process.pid else [],
        "HES": [int((hes.base_dir / "mariadbd.pid").read_text())],
        "kafka (3 nodes)": [p.pid for _, p in cluster.logs() if p.pid],
        "job + repair": [os.getpid()],
    }
    os.environ[SIGNAL_DSN_ENV] = hes.dsn("signal")
    argv = ["repair", "--date", str(DAY), "--output", config.output, "--hes-dsn", hes.dsn("reader")]
    argv += ["--connect-url", worker.url, "--poll-interval", f"{args.poll_interval:g}"]
    repair_args = build_parser().parse_args([*argv, "--timeout", f"{args.timeout:g}"])

    done = threading.Event()
    start = ends(admin)
    if start:
        raise RuntimeError(f"{start:,} records in {TOPIC} before the repair: not a lost day")
    watcher = threading.Thread(
        target=watch, args=(admin, job, start, rows, moments, done), daemon=True
    )
    cpu_before = cpu_seconds(pids)
    began = time.monotonic()
    watcher.start()
    try:
        code = main_repair(repair_args, session)
        moments.mark("complete", time.monotonic())
    finally:
        done.set()
        watcher.join(30)
        job.request_stop()
        streaming.join(300)
        admin.close()
    cpu = cpu_seconds(pids)
    stored, distinct = stored_once(Path(config.output), DAY)
    session.stop()

    print(f"\nrepair of {rows:,} rows ({args.meters:,} meters), exit {code}")
    phases = [
        ("repair started → signal sent", 0, began, moments.signal),
        ("signal → first row in Kafka", 0, moments.signal, moments.first_in_kafka),
        ("signal → every row in Kafka", rows, moments.signal, moments.all_in_kafka),
        ("→ every row stored in Parquet", rows, moments.all_in_kafka, moments.all_stored),
        ("→ completeness: complete", rows, moments.all_stored, moments.complete),
        ("signal → complete", rows, moments.signal, moments.complete),
        ("repair command, start to exit", rows, began, moments.complete),
    ]
    for name, counted, since, until in phases:
        print(f"  {name:32} {rate(counted, since, until)}")
    print(f"  in Kafka: {moments.kafka_end - start:,} records (the day once is {rows:,})")
    print(f"  Parquet: {stored:,} rows, {distinct:,} distinct keys (the day is {rows:,})")
    for name, total in cpu.items():
        print(f"  CPU over the repair: {name:16} {total - cpu_before[name]:8.1f} s")
    for name, load in moments.load:
        print(f"  load average at {name:15} {load[0]:5.2f} {load[1]:5.2f} {load[2]:5.2f}")
    batches = [p for p in job.query.recentProgress if p["numInputRows"]] if job.query else []
    for p in batches:
        took = p["durationMs"].get("triggerExecution", 0) / 1000
        print(f"  batch {p['batchId']:3}: {p['numInputRows']:>9,} rows in {took:6.1f} s")
    assert stored == distinct == rows, "the day is not stored once"
    return 0 if code == EXIT_REPAIRED else 1


if __name__ == "__main__":
    raise SystemExit(main())
