"""The driver of tests/ingest/test_task_counts_cluster.py, in a process of its own: one JVM holds
one SparkContext, and the test process may already hold a local one (the `spark` fixture).

    python -m tests.ingest.standalone_driver SPARK_MASTER_URL WORKDIR RESULT_JSON

Hosts a two-broker librdkafka mock cluster (its control API works in the process that made it)
with a topic of two partitions, one led by each broker, reads it in one available-now batch on the
standalone master with the job's own wiring (`read_stream` registering the source with the
accumulator of `TaskCounts`, `job_metrics`), and makes both of the batch's read tasks retry: right
before the batch's foreachBatch reads Kafka (the planner has fixed the batch's offsets by then and
makes no Kafka call until the next batch), each broker is told to fail its next two ListOffsets,
i.e. the watermark query of the read task of the partition it leads. The job waits for both
one-core executors before it schedules, so the two read tasks run at once, one on each.
Writes what the job's /metrics would serve (the executor health too), each channel's own counts
and the driver's REST account of its executors to RESULT_JSON.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError
from prometheus_client import CollectorRegistry, generate_latest
from pyspark.sql import DataFrame

from tests.ingest.conftest import TOPIC, backfill, utc_day
from tests.rdkafka_mock import LIST_OFFSETS, controlled_cluster
from vigia.ingest import job
from vigia.ingest.config import IngestConfig
from vigia.ingest.kafka_source.retry_spool import RetrySpool
from vigia.ingest.kafka_source.task_counts import TaskCounts
from vigia.ingest.spark_health import SparkHealth
from vigia.ingest.spark_session import start_session

BROKERS = 2
"""And partitions of the topic, and executors: one read task of each partition on each executor."""
METERS = 6  # their keys fill both partitions (1,152 measures each)


def rest(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


def main(master: str, workdir: Path, result: Path) -> None:
    with controlled_cluster(brokers=BROKERS) as kafka:
        kafka.create_topic(TOPIC, BROKERS, replication=1)
        for broker in range(1, BROKERS + 1):
            kafka.set_leader(TOPIC, broker - 1, broker)
        manifest = backfill(
            kafka.bootstrap_servers, workdir / "manifest.json", day=utc_day(1), meters=METERS
        )
        config = IngestConfig(
            bootstrap_servers=kafka.bootstrap_servers,
            output=str(workdir / "measure"),
            quarantine=str(workdir / "quarantine"),
            checkpoint=str(workdir / "checkpoint"),
            available_now=True,
            metrics_port=0,
            kafka_timeout=10.0,
            spark_master=master,
        )
        spark = start_session(
            "vigia-task-counts",
            {
                **job.session_settings(master),
                "spark.cores.max": str(BROKERS),
                # Both executors up before the first task: then each takes one of the two reads.
                "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
                "spark.executor.memory": "512m",
                "spark.sql.shuffle.partitions": "1",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
            },
        )
        job.quiet_spark_logs(spark, "INFO")
        spool, tasks = RetrySpool(), TaskCounts()
        try:
            metrics = job.job_metrics(config, spool, tasks)

            def read_retrying(batch: DataFrame, batch_id: int) -> None:
                for broker in range(1, BROKERS + 1):
                    kafka.push_broker_errors(
                        broker, LIST_OFFSETS, *[KafkaError.NOT_LEADER_FOR_PARTITION] * 2
                    )
                counted.append(batch.count())

            counted: list[int] = []
            # The job's source wiring; the batch is only counted, the rest of the job adds
            # stages, not channels (a minute of CPU on a shared machine).
            stream = job.read_stream(spark, config, spool.directory, tasks)
            query = (
                stream.writeStream.foreachBatch(read_retrying)
                .option("checkpointLocation", config.checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            health = SparkHealth(config.query_name)
            job.watch_executors(spark, health)
            registry = CollectorRegistry()
            registry.register(metrics)
            registry.register(health)
            context = spark.sparkContext
            api = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}"
            # The UI's first REST answer takes seconds (its JAX-RS application starts then):
            # asked first here, as a running job's first scrape would have.
            began = time.monotonic()
            executors = rest(f"{api}/allexecutors")
            first_answer_s = time.monotonic() - began
            report = {
                "exposition": generate_latest(registry).decode(),
                "accumulator": [[*key, n] for key, n in tasks.retries().items()],
                "spool": [[*key, n] for key, n in spool.counts().items()],
                "input_rows": sum(counted),
                "messages": manifest.valid_total,
                "allexecutors": executors,
                "first_answer_s": first_answer_s,
            }
        finally:
            spool.close()
            spark.stop()
    result.write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
