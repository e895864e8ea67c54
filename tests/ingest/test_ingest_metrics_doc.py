"""docs/metrics.md lists exactly the families the ingest job serves, with their types and labels."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from tests.metrics_doc import documented, served
from vigia.ingest.deadline import DeadlineState
from vigia.ingest.metrics import BatchWritten, IngestMetrics, sample_from_progress
from vigia.ingest.spark_health import SparkHealth

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "progress-backlog.json").read_text())
EXECUTORS = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "spark-rest" / "lost-allexecutors.json").read_text()
)


def test_ingest_families_match_docs() -> None:
    metrics = IngestMetrics(
        "vigia-ingest",
        trigger_interval=30.0,
        expected_per_day=768,
        kafka_retries=lambda: {("list_offsets", "NOT_LEADER_FOR_PARTITION"): 2},
        skipped_offsets=lambda: {("measure", 0): 230},
    )
    metrics.query_started()
    metrics.running_since(0.0)  # running for ages: every closed day is judged
    for event in RECORDED:
        metrics.progress(sample_from_progress(event))
    today = dt.datetime.now(dt.UTC).date()
    metrics.batch_written(BatchWritten(1, 10, 0, {today: 10}))
    metrics.deadline_counted(DeadlineState(today, 768, 760), 0)
    health = SparkHealth("vigia-ingest")
    health.attach(lambda: EXECUTORS)
    registry = CollectorRegistry()
    registry.register(metrics)
    registry.register(health)  # the job serves both (ingest.job.serve_metrics)
    code = served([generate_latest(registry).decode()])
    doc = documented(("vigia_ingest_",))
    assert len(doc) == 27
    assert code == doc
