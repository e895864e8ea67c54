"""The ingest job on a Spark standalone cluster (issue 25): `vigia-ingest run --spark-master
spark://…` in client mode against the harness's master and two one-core workers, a backlog on
the real Kafka cluster. The job's guarantees hold there as in local mode: every valid measure
stored once, malformed ones quarantined with their reason, the group's offsets committed to the
end. Spark's event log says which executors ran the tasks: the driver has exited by the time the
test looks, its REST API with it, and the log is Spark's own record of the same events."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark (the ingest extra) is not installed")

import pyarrow.dataset as ds
from confluent_kafka.admin import AdminClient

from common import kafka_config
from ingest.kafka_source.adapter import KafkaAdmin
from ingest.schema import MEASURE_KEY_COLUMNS
from launcher.spark_cluster import QUICK_JVM
from tests.ingest.conftest import backfill, utc_day
from tests.realstack.spark_cluster import LOOPBACK, SparkCluster
from tests.realstack.topics import create_topic
from tests.scripts import console_script

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4
METERS = 20  # 7,680 valid measures
BATCH_ROWS = 4_000  # two batches
RUN_TIMEOUT_S = 240.0


@pytest.fixture
def topic(real_kafka_bootstrap: str) -> Iterator[str]:
    name = f"vigia-spark-{uuid.uuid4().hex[:8]}"
    options = kafka_config.from_env()
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap, **options})
    create_topic(real_kafka_bootstrap, name, PARTITIONS, options=options)
    try:
        yield name
    finally:
        admin.delete_consumer_groups([name], request_timeout=30)[name].exception(timeout=30)
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)


def driver_conf(directory: Path, events: Path) -> Path:
    """The driver's spark-defaults.conf, as a deployment would give it (SPARK_CONF_DIR).
    `spark.cores.max` is the two workers' cores: the session waits until both executors have
    registered (spark.scheduler.minRegisteredResourcesRatio, within the waiting time), so both
    get tasks. The event log: one plain file."""
    settings = {
        "spark.cores.max": "2",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        "spark.executor.memory": "512m",
        "spark.driver.extraJavaOptions": QUICK_JVM,
        "spark.executor.extraJavaOptions": QUICK_JVM,
        "spark.ui.enabled": "false",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    directory.mkdir(parents=True)
    events.mkdir()
    text = "".join(f"{key} {value}\n" for key, value in settings.items())
    (directory / "spark-defaults.conf").write_text(text)
    return directory


def tasks_per_executor(events: Path) -> Counter[str]:
    """Finished tasks per executor id, from the application's event log."""
    (log,) = (p for p in events.iterdir() if not p.name.startswith("."))  # no Hadoop .crc
    counts: Counter[str] = Counter()
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerTaskEnd":
            counts[event["Task Info"]["Executor ID"]] += 1
    return counts


def test_backfill_through_a_standalone_cluster(
    real_kafka_bootstrap: str, spark_cluster: SparkCluster, topic: str, tmp_path: Path
) -> None:
    manifest = backfill(
        real_kafka_bootstrap,
        tmp_path / "manifest.json",
        day=utc_day(1),
        meters=METERS,
        malformed_ratio=0.01,
        topic=topic,
    )
    events = tmp_path / "events"
    data = tmp_path / "shared"  # every node's path: one machine, one directory
    env = {
        **os.environ,
        "SPARK_CONF_DIR": str(driver_conf(tmp_path / "conf", events)),
        "SPARK_LOCAL_IP": LOOPBACK,
    }
    driver_log = tmp_path / "driver.out"
    with driver_log.open("wb") as out:
        done = subprocess.run(
            [
                console_script("vigia-ingest"),
                "run",
                *("--spark-master", spark_cluster.url),
                *("--bootstrap-servers", real_kafka_bootstrap),
                *("--topic", topic),
                *("--group-id", topic),
                *("--output", str(data / "measure")),
                *("--quarantine", str(data / "quarantine")),
                *("--checkpoint", str(data / "checkpoint")),
                *("--max-offsets-per-trigger", str(BATCH_ROWS)),
                *("--metrics-port", "0"),
                "--available-now",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    tail = "\n".join(driver_log.read_text(errors="replace").splitlines()[-30:])
    assert done.returncode == 0, tail

    measures = ds.dataset(data / "measure", partitioning="hive").to_table()
    assert measures.num_rows == manifest.valid_total
    keys = measures.group_by(list(MEASURE_KEY_COLUMNS)).aggregate([]).num_rows
    assert keys == manifest.valid_total
    rejected = ds.dataset(data / "quarantine").to_table()
    assert Counter(rejected.column("reason").to_pylist()) == Counter(
        {reason: n for reason, n in manifest.malformed.items() if n}
    )
    admin = KafkaAdmin(real_kafka_bootstrap, kafka_config.from_env(), topic, 30)
    try:
        _, latest = admin.topic_watermarks([topic])
        assert admin.committed(latest) == latest
    finally:
        admin.close()

    ran = tasks_per_executor(events)
    assert "driver" not in ran, ran
    assert len(ran) == 2, f"tasks per executor: {dict(ran)}"
