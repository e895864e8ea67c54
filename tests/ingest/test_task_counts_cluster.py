"""Kafka retries of read tasks on two standalone workers' executors reach the driver's metrics.

A master and two one-core workers from PySpark's own distribution on loopback
(`tests.spark_standalone`); the driver (`tests.ingest.standalone_driver`, its own process) runs
the ingest job's batch there and makes each of its two read tasks, one on each executor, retry on
the mock cluster. The executors share the driver's disk here, so the spool would reach the driver
too: the test asserts the retries came through the accumulator (the channel that also works across
hosts) and not the spool, both of them, and that what /metrics serves includes them, beside the
executors the driver's REST API reports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.spark_standalone import standalone_cluster

pytestmark = pytest.mark.spark

ROOT = Path(__file__).parents[2]
DRIVER = "tests.ingest.standalone_driver"
WATERMARKS_RETRY = ["watermarks", "NOT_LEADER_FOR_PARTITION"]


def test_retries_on_both_workers_executors_reach_the_drivers_metrics(tmp_path: Path) -> None:
    result = tmp_path / "result.json"
    with standalone_cluster(tmp_path / "spark", workers=2) as cluster:
        log = tmp_path / "driver.log"
        with log.open("w") as out:
            driver = subprocess.run(
                [sys.executable, "-m", DRIVER, cluster.url, str(tmp_path), str(result)],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=240,
                check=False,
            )
        assert driver.returncode == 0, log.read_text()[-6000:] + cluster.tails()
    report = json.loads(result.read_text())
    assert report["input_rows"] == report["messages"] > 0

    # The reads ran on both workers' executors, not in the driver.
    ran = {e["id"]: e["totalTasks"] for e in report["allexecutors"] if e["totalTasks"]}
    assert len(ran) == 2 and "driver" not in ran, ran

    # Counted there, one on each executor, they came back through the accumulator; the spool has
    # the planner's only.
    counted = [n for *key, n in report["accumulator"] if key == WATERMARKS_RETRY]
    assert counted == [2], f"accumulator {report['accumulator']}; the spool: {report['spool']}"
    [n] = counted
    assert all(row[0] != "watermarks" for row in report["spool"])

    families = {f.name: f for f in text_string_to_metric_families(report["exposition"])}
    served = {
        (s.labels["call"], s.labels["error"]): s.value
        for s in families["vigia_ingest_kafka_retries"].samples
    }
    assert served[tuple(WATERMARKS_RETRY)] == n

    # The same /metrics serves the cluster's health from the driver's UI: two one-core executors.
    health = {
        name: [s.value for s in families[name].samples]
        for name in ("vigia_ingest_executors", "vigia_ingest_executor_cores")
    }
    assert health == {"vigia_ingest_executors": [2], "vigia_ingest_executor_cores": [2]}
