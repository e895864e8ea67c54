"""Where a Spark run's time went, from Spark's own accounting: the stages its UI lists (REST API)
and the CPU of each of the JVM's threads (``/proc/<pid>/task``, Linux), grouped by thread name.

Used by ``ingest_throughput.py`` around the last Kafka round; numbers, not a profiler: the JIT
compilers and the garbage collector show up as threads of their own, which a sampling profiler
inside the JVM does not see.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections import Counter
from datetime import datetime
from typing import Any

from pyspark.sql import SparkSession


def _get(spark: SparkSession, path: str) -> Any:
    app = spark.sparkContext.applicationId
    url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{app}/{path}"
    with urllib.request.urlopen(url, timeout=10) as answer:  # the driver's own UI, loopback
        return json.load(answer)


def last_stage_id(spark: SparkSession) -> int:
    stages = _get(spark, "stages")
    return max((s["stageId"] for s in stages), default=-1)


def _when(text: str) -> datetime:
    return datetime.strptime(text.removesuffix("GMT"), "%Y-%m-%dT%H:%M:%S.%f")


def stage_report(spark: SparkSession, after_stage: int) -> str:
    """One line per completed stage with an id above ``after_stage``."""
    stages = sorted(
        (s for s in _get(spark, "stages?status=complete") if s["stageId"] > after_stage),
        key=lambda s: s["stageId"],
    )
    if not stages:
        return "(no stage)"
    start = _when(stages[0]["submissionTime"])
    lines = [
        f"{'stage':>5} {'tasks':>5} {'from':>7} {'wall':>6} {'run':>6} {'CPU':>6} {'GC':>5} "
        f"{'shuffle w':>9} {'rows in':>9} {'rows out':>9}  name"
    ]
    for s in stages:
        began = (_when(s["submissionTime"]) - start).total_seconds()
        wall = (_when(s["completionTime"]) - _when(s["submissionTime"])).total_seconds()
        lines.append(
            f"{s['stageId']:>5} {s['numTasks']:>5} {began:>6.2f}s {wall:>5.2f}s "
            f"{s['executorRunTime'] / 1000:>5.2f}s {s['executorCpuTime'] / 1e9:>5.2f}s "
            f"{s['jvmGcTime'] / 1000:>4.2f}s {s['shuffleWriteBytes'] / 1e6:>7.1f}MB "
            f"{s['inputRecords']:>9,} {s['outputRecords']:>9,}  {s['name'][:40]}"
        )
    return "\n".join(lines)


def jvm_thread_cpu(spark: SparkSession) -> Counter[str]:
    """CPU seconds of the driver JVM's threads so far, by name with digits folded (so the two
    "C2 CompilerThread" threads or the executor's task threads add up); the kernel keeps the first
    15 characters of a name ("CN CompilerThre": the JIT compilers)."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    return thread_cpu(pid)


def thread_cpu(pid: int) -> Counter[str]:
    """CPU seconds of process ``pid``'s threads so far, by name with digits folded."""
    ticks = os.sysconf("SC_CLK_TCK")
    cpu: Counter[str] = Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:  # the thread ended meanwhile
            continue
        name = re.sub(r"\d+", "N", stat[stat.index("(") + 1 : stat.rindex(")")])
        fields = stat[stat.rindex(")") + 2 :].split()
        cpu[name] += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return cpu


def thread_report(before: Counter[str], after: Counter[str], top: int = 8) -> str:
    spent = Counter({name: after[name] - before.get(name, 0.0) for name in after})
    total = sum(spent.values())
    lines = [f"{name:<24} {seconds:>6.2f} CPU-s" for name, seconds in spent.most_common(top)]
    lines.append(f"{'all threads':<24} {total:>6.2f} CPU-s")
    return "\n".join(lines)
