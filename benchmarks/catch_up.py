"""Catch-up as users feel it: a day of backlog, then one ``vigia-ingest run --available-now``.

1. librdkafka's mock cluster (3 brokers) in this process, topic ``measure`` created with
   --partitions partitions: the mock keeps ≈200,000 messages per partition, so a day of 20,000
   meters (7.68 M measures) needs at least 39;
2. ``vigia-simulate backfill --days 1 --meters N`` into it (N × 96 periods × 4 magnitudes);
3. ``vigia-ingest run --available-now --max-offsets-per-trigger M`` into a temporary directory,
   watched from outside: wall time from start to exit (the last batch committed), when the query
   started (the job's log), when each batch was planned and committed (the checkpoint's offset
   and commit logs, written by Spark at those moments), the peak RSS of the driver process, the
   JVM, the Spark Python workers and the whole process tree (sampled every 0.2 s), and the
   tree's peak proportional set size (every 2 s). Then the stored rows are counted: every
   measure must be there once.

    python benchmarks/catch_up.py                    # 20,000 meters, 1,000,000 rows per batch
    python benchmarks/catch_up.py --meters 1000      # a quick run (384,000 measures)
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import logging
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pyarrow.dataset as ds
from tqdm import tqdm

from tests.ingest.ingest_process import ingest_command
from tests.rdkafka_mock import ControlledCluster
from vigia.common.logs import setup_logging
from vigia.ingest.schema import MAGNITUDES, PERIODS_PER_DAY

log = logging.getLogger("benchmark")

ROOT = Path(__file__).resolve().parent.parent
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ [\w.]+: (.*)$")
STORED = re.compile(r"batch (\d+): (\d+) measures stored")


@dataclass
class Peaks:
    """Highest RSS seen, in bytes, per kind of process and for the whole tree; and the tree's
    highest proportional set size, which counts the pages forked Python workers share once:
    closer to what a container's memory limit sees than summed RSS."""

    driver: int = 0
    jvm: int = 0
    workers: int = 0
    tree: int = 0
    tree_pss: int = 0

    def sample(self, root: psutil.Process, *, with_pss: bool) -> None:
        """``with_pss``: also read the proportional set sizes, which walks every mapping of every
        process (the JVM's are thousands): too costly for each sample."""
        driver = jvm = workers = pss = 0
        for process in [root, *root.children(recursive=True)]:
            try:
                rss = process.memory_info().rss
                pss += process.memory_full_info().pss if with_pss else 0
                name = process.name()
            except psutil.Error:  # exited between the listing and the reading
                continue
            if process.pid == root.pid:
                driver = rss
            elif name == "java":
                jvm += rss
            else:
                workers += rss
        self.driver = max(self.driver, driver)
        self.jvm = max(self.jvm, jvm)
        self.workers = max(self.workers, workers)
        self.tree = max(self.tree, driver + jvm + workers)
        self.tree_pss = max(self.tree_pss, pss)


@dataclass
class Run:
    started: float
    exited: float = 0.0
    query_started: float | None = None
    stored: list[tuple[float, int, int]] = field(default_factory=list)  # (at, batch, rows)
    planned: dict[int, float] = field(default_factory=dict)  # batch → offsets written
    committed: dict[int, float] = field(default_factory=dict)  # batch → commit written
    peaks: Peaks = field(default_factory=Peaks)
    returncode: int | None = None


def run_simulator(servers: str, meters: int, day: dt.date) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "vigia.ingest.simulator.cli",
            "backfill",
            "--bootstrap-servers",
            servers,
            "--meters",
            str(meters),
            "--days",
            "1",
            "--start-date",
            day.isoformat(),
            "--metrics-port",
            "0",
            "--log-level",
            "WARNING",
        ],
        check=True,
        cwd=ROOT,
    )
    return time.perf_counter() - started


Sampler = Callable[[psutil.Process, int], None]


def run_ingest(
    command: list[str],
    work: Path,
    batches: int,
    env: Mapping[str, str] | None = None,
    sampler: Sampler | None = None,
) -> Run:
    """Runs ``command`` (``ingest_command``) with ``env`` on top of the environment; every 0.2 s
    ``sampler`` (by default the run's Peaks) is handed the job's process and the tick's number."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    run = Run(started=time.time())
    job = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    root = psutil.Process(job.pid)
    done = threading.Event()

    def peaks(process: psutil.Process, tick: int) -> None:
        run.peaks.sample(process, with_pss=tick % 10 == 0)

    def sample() -> None:
        for tick in itertools.count():
            if done.is_set():
                return
            (sampler or peaks)(root, tick)
            done.wait(0.2)

    sampling = threading.Thread(target=sample, daemon=True)
    sampling.start()
    assert job.stderr is not None
    with tqdm(total=batches, desc="batches stored", unit="batch") as bar:
        for line in job.stderr:
            match = LOG_LINE.match(line.strip())
            if match is None:
                continue
            at = dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            message = match.group(2)
            if message.startswith("ingesting ") and run.query_started is None:
                run.query_started = at
            elif stored := STORED.search(message):
                run.stored.append((at, int(stored.group(1)), int(stored.group(2))))
                bar.update(1)
    run.returncode = job.wait()
    run.exited = time.time()
    done.set()
    sampling.join()
    run.planned = written_at(work / "checkpoint" / "offsets")
    run.committed = written_at(work / "checkpoint" / "commits")
    return run


def written_at(log_dir: Path) -> dict[int, float]:
    """Batch id → when Spark wrote its file in a checkpoint log (offsets/ or commits/)."""
    if not log_dir.is_dir():
        return {}
    return {int(p.name): p.stat().st_mtime for p in log_dir.iterdir() if p.name.isdigit()}


def after_first_batch(run: Run) -> tuple[int, float] | None:
    """(rows, seconds) from the first batch's commit to the last's: throughput beyond start-up
    (the JVM, Spark's Python workers, code generation and the JIT all land in the first batch)."""
    if len(run.committed) < 2:
        return None
    first, last = min(run.committed), max(run.committed)
    after = sum(rows for _, batch, rows in run.stored if batch != first)
    return after, run.committed[last] - run.committed[first]


def report(run: Run, measures: int, stored_rows: int, produce_s: float) -> str:
    mib = 1024 * 1024
    total = run.exited - run.started
    lines = [
        f"measures produced: {measures:,} in {produce_s:.1f} s ({measures / produce_s:,.0f}/s)",
        f"ingest exit code: {run.returncode}; rows stored: {stored_rows:,} "
        f"({'all, once' if stored_rows == measures else 'MISMATCH'})",
        f"start → exit (last batch committed): {total:.1f} s, "
        f"{measures / total:,.0f} measures/s overall",
    ]
    if run.query_started is not None:
        lines.append(
            "start → query started (JVM, session, Kafka preflight, listeners, source): "
            f"{run.query_started - run.started:.1f} s"
        )
    rows_of = {batch: rows for _, batch, rows in run.stored}
    for batch in sorted(run.planned):
        planned, committed = run.planned[batch], run.committed.get(batch)
        took = f"{committed - planned:.1f} s" if committed is not None else "not committed"
        lines.append(
            f"  batch {batch}: {rows_of.get(batch, 0):,} rows, planned at "
            f"+{planned - run.started:.1f} s, {took}"
        )
    if (beyond := after_first_batch(run)) is not None:
        after, seconds = beyond
        lines.append(
            f"after the first batch: {after:,} rows in {seconds:.1f} s "
            f"({after / seconds:,.0f} measures/s)"
        )
    peaks = run.peaks
    lines.append(
        f"peak RSS: driver {peaks.driver / mib:,.0f} MiB, JVM {peaks.jvm / mib:,.0f} MiB, "
        f"Python workers {peaks.workers / mib:,.0f} MiB, whole tree {peaks.tree / mib:,.0f} MiB; "
        f"whole tree, shared pages once (PSS): {peaks.tree_pss / mib:,.0f} MiB"
    )
    lines.append(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--meters", type=int, default=20_000, help="meters (20000)")
    parser.add_argument("--rows-per-batch", type=int, default=1_000_000, help="(1000000)")
    parser.add_argument("--partitions", type=int, default=48, help="topic partitions (48)")
    parser.add_argument("--work-dir", help="keep the outputs here instead of a temporary dir")
    args = parser.parse_args()
    setup_logging("INFO")

    measures = args.meters * PERIODS_PER_DAY * len(MAGNITUDES)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="vigia-catch-up-"))
    cluster = ControlledCluster(brokers=3)
    try:
        cluster.create_topic("measure", args.partitions)
        day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
        log.info("producing %s measures (%d meters, %s)", f"{measures:,}", args.meters, day)
        produce_s = run_simulator(cluster.bootstrap_servers, args.meters, day)
        batches = math.ceil(measures / args.rows_per_batch)
        log.info("ingesting them in %d batches of at most %s", batches, f"{args.rows_per_batch:,}")
        command = ingest_command(
            cluster.bootstrap_servers, work, "--available-now", batch=args.rows_per_batch
        )
        run = run_ingest(command, work, batches)
    finally:
        cluster.close()
    stored_rows = ds.dataset(work / "measure", format="parquet", partitioning="hive").count_rows()
    log.info("catch-up (%s):\n%s", work, report(run, measures, stored_rows, produce_s))


if __name__ == "__main__":
    main()
