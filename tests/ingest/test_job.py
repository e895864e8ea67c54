"""The ingest job end to end, in this process on the shared Spark session: simulator → mock
cluster → vigia-kafka source → validation → Parquet + quarantine, metrics and group commits."""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import signal
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from confluent_kafka import Producer
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession

import vigia.ingest.job
from tests.conftest import MockCluster, free_port, start_mock_cluster
from tests.ingest.conftest import TOPIC, backfill, create_topic, utc_day
from tests.ingest.test_source_restart import restart
from tests.rdkafka_mock import controlled_cluster
from vigia.ingest.cli import build_parser
from vigia.ingest.completeness import main_completeness
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, preflight_kafka, run_job, serve_metrics
from vigia.ingest.kafka_source.adapter import KafkaAdmin
from vigia.ingest.kafka_source.counts import summed
from vigia.ingest.kafka_source.retry_spool import RetrySpool
from vigia.ingest.kafka_source.task_counts import TaskCounts
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.schema import MEASURE_KEY_COLUMNS, REASONS
from vigia.ingest.simulator.manifest import Manifest

pytestmark = pytest.mark.spark

INGEST_FAMILIES = (
    "vigia_ingest_query_active",
    "vigia_ingest_trigger_interval_seconds",
    "vigia_ingest_batches",
    "vigia_ingest_input_rows",
    "vigia_ingest_valid_rows",
    "vigia_ingest_invalid_rows",
    "vigia_ingest_duplicate_rows",
    "vigia_ingest_batch_input_rows",
    "vigia_ingest_input_rows_per_second",
    "vigia_ingest_processed_rows_per_second",
    "vigia_ingest_batch_duration_seconds",
    "vigia_ingest_phase_duration_seconds",
    "vigia_ingest_offsets_behind_latest",
    "vigia_ingest_last_progress_timestamp_seconds",
    "vigia_ingest_newest_measure_timestamp_seconds",
    "vigia_ingest_day_measures",
)


def job_config(cluster: MockCluster, base: Path, **overrides: Any) -> IngestConfig:
    return replace(
        IngestConfig(
            bootstrap_servers=cluster.bootstrap_servers,
            topic=TOPIC,
            output=str(base / "measure"),
            quarantine=str(base / "quarantine"),
            checkpoint=str(base / "checkpoint"),
            available_now=True,
            metrics_port=0,
            kafka_timeout=10.0,
        ),
        **overrides,
    )


def run(spark: SparkSession, config: IngestConfig, metrics: IngestMetrics | None = None) -> Any:
    """Run to completion; the recent progress events of the run, as JSON."""
    job = IngestJob(
        spark, config, metrics or IngestMetrics(config.query_name), preflight_kafka(config)
    )
    job.run()
    assert job.query is not None
    return [json.loads(p.json) for p in job.query.recentProgress]


def stored(config: IngestConfig) -> pa.Table:
    return ds.dataset(config.output, partitioning="hive").to_table()


def quarantined(config: IngestConfig) -> pa.Table:
    return ds.dataset(config.quarantine).to_table()


def distinct_keys(table: pa.Table) -> int:
    return table.group_by(list(MEASURE_KEY_COLUMNS)).aggregate([]).num_rows


def committed(cluster: MockCluster, group: str = "vigia-ingest") -> dict[tuple[str, int], int]:
    admin = KafkaAdmin(cluster.bootstrap_servers, {}, group, 10)
    try:
        _, latest = admin.topic_watermarks([TOPIC])
        assert sum(latest.values()) > 0
        return admin.committed(latest)
    finally:
        admin.close()


def latest_offsets(cluster: MockCluster) -> dict[tuple[str, int], int]:
    admin = KafkaAdmin(cluster.bootstrap_servers, {}, "x", 10)
    try:
        return admin.topic_watermarks([TOPIC])[1]
    finally:
        admin.close()


def test_a_simulated_day_lands_exactly_and_completeness_agrees(
    spark: SparkSession,
    mock_cluster: MockCluster,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create_topic(mock_cluster.bootstrap_servers)
    day = utc_day(2)
    manifest = backfill(
        mock_cluster.bootstrap_servers,
        tmp_path / "manifest.json",
        day=day,
        meters=100,
        malformed_ratio=0.01,
        duplicate_ratio=0.01,
    )
    assert manifest.valid_total == 100 * 96 * 4 and manifest.duplicates > 0
    config = job_config(mock_cluster, tmp_path)

    progress = run(spark, config)

    assert sum(p["numInputRows"] for p in progress) == manifest.produced
    measures = stored(config)
    # One batch: every correction meets its original and only the newest TS is kept.
    assert measures.num_rows == manifest.valid_total
    assert distinct_keys(measures) == manifest.valid_total
    per_magnitude = Counter(measures.column("magnitude").to_pylist())
    assert per_magnitude == Counter(manifest.valid[day.isoformat()])
    assert set(measures.column("measure_date").to_pylist()) == {day.isoformat()}
    bad = quarantined(config)
    assert Counter(bad.column("reason").to_pylist()) == Counter(
        {reason: count for reason, count in manifest.malformed.items() if count}
    )
    assert bad.num_rows == manifest.malformed_total
    assert pc.min(bad.column("kafka_offset")).as_py() >= 0
    assert committed(mock_cluster) == latest_offsets(mock_cluster)

    args = build_parser().parse_args(
        [
            "completeness",
            "--date",
            day.isoformat(),
            "--output",
            config.output,
            "--manifest",
            str(tmp_path / "manifest.json"),
        ]
    )
    capsys.readouterr()
    assert main_completeness(args, spark) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["expected"] == manifest.valid_total
    assert report["distinct_stored"] == manifest.valid_total
    assert report["missing"] == 0 and report["duplicates"] == 0


@dataclass
class BacklogRun:
    cluster: MockCluster
    config: IngestConfig
    manifest: Manifest
    progress: list[dict[str, Any]]
    exposition: str


MAX_OFFSETS = 4_000


@pytest.fixture(scope="module")
def backlog(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> BacklogRun:
    """A backlog of one simulated day, drained with --max-offsets-per-trigger, metrics served."""
    base = tmp_path_factory.mktemp("backlog")
    cluster = start_mock_cluster()
    create_topic(cluster.bootstrap_servers)
    manifest = backfill(
        cluster.bootstrap_servers,
        base / "manifest.json",
        day=utc_day(1),
        meters=50,
        malformed_ratio=0.01,
    )
    config = job_config(
        cluster, base, max_offsets_per_trigger=MAX_OFFSETS, metrics_port=free_port()
    )
    metrics = IngestMetrics(config.query_name)
    server = serve_metrics(config, metrics)
    assert server is not None
    try:
        progress = run(spark, config, metrics)
        url = f"http://{config.metrics_address}:{config.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            exposition = response.read().decode()
    finally:
        server.shutdown()
    return BacklogRun(cluster, config, manifest, progress, exposition)


def test_backlog_drains_in_batches_of_at_most_k(backlog: BacklogRun) -> None:
    sizes = [p["numInputRows"] for p in backlog.progress]
    produced = backlog.manifest.produced
    assert len(sizes) == math.ceil(produced / MAX_OFFSETS)
    assert max(sizes) == MAX_OFFSETS and all(size <= MAX_OFFSETS for size in sizes)
    assert sum(sizes) == produced
    measures = stored(backlog.config)
    assert measures.num_rows == backlog.manifest.valid_total
    assert distinct_keys(measures) == backlog.manifest.valid_total
    assert quarantined(backlog.config).num_rows == backlog.manifest.malformed_total
    assert committed(backlog.cluster) == latest_offsets(backlog.cluster)


def samples(exposition: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_endpoint_matches_the_run(backlog: BacklogRun) -> None:
    families = {f.name for f in text_string_to_metric_families(backlog.exposition)}
    assert set(INGEST_FAMILIES) <= families
    values = samples(backlog.exposition)
    q = (("query", "vigia-ingest"),)

    def value(name: str, **labels: str) -> float:
        return values[(name, tuple(sorted((*q, *labels.items()))))]

    manifest, progress = backlog.manifest, backlog.progress
    assert value("vigia_ingest_query_active") == 0  # the available-now run is over
    assert value("vigia_ingest_batches_total") == len(progress)
    assert value("vigia_ingest_input_rows_total") == manifest.produced
    assert value("vigia_ingest_valid_rows_total") == manifest.valid_total
    assert value("vigia_ingest_duplicate_rows_total") == 0
    for reason in REASONS:
        expected = manifest.malformed.get(reason.value, 0)
        assert value("vigia_ingest_invalid_rows_total", reason=reason.value) == expected
    assert value("vigia_ingest_batch_input_rows") == progress[-1]["numInputRows"]
    assert value("vigia_ingest_input_rows_per_second") == pytest.approx(
        progress[-1]["inputRowsPerSecond"]
    )
    assert value("vigia_ingest_processed_rows_per_second") == pytest.approx(
        progress[-1]["processedRowsPerSecond"]
    )
    assert value("vigia_ingest_batch_duration_seconds_count") == len(progress)
    assert value("vigia_ingest_batch_duration_seconds_sum") == pytest.approx(
        sum(p["batchDuration"] for p in progress) / 1000
    )
    assert value("vigia_ingest_phase_duration_seconds", phase="addBatch") == pytest.approx(
        progress[-1]["durationMs"]["addBatch"] / 1000
    )
    assert value("vigia_ingest_offsets_behind_latest", topic=TOPIC) == 0
    # The first batch was planned while the whole backlog waited: it saw its size.
    first_end = progress[0]["sources"][0]["endOffset"][TOPIC]
    first_latest = progress[0]["sources"][0]["latestOffset"][TOPIC]
    assert max(first_latest[p] - first_end[p] for p in first_end) > 0
    newest = pc.max(stored(backlog.config).column("ts")).as_py().timestamp()
    assert value("vigia_ingest_newest_measure_timestamp_seconds") == pytest.approx(newest)
    day = utc_day(1).isoformat()
    assert value("vigia_ingest_day_measures", measure_date=day) == manifest.valid_total
    last_progress = value("vigia_ingest_last_progress_timestamp_seconds")
    assert last_progress >= newest


def test_restart_from_the_checkpoint_continues_without_duplicates(
    spark: SparkSession, backlog: BacklogRun, tmp_path: Path
) -> None:
    more = backfill(
        backlog.cluster.bootstrap_servers,
        tmp_path / "manifest-2.json",
        day=utc_day(0),
        meters=20,
        seed=7,
    )
    metrics = IngestMetrics(backlog.config.query_name)
    progress = run(spark, backlog.config, metrics)

    assert sum(p["numInputRows"] for p in progress) == more.produced
    measures = stored(backlog.config)
    total = backlog.manifest.valid_total + more.valid_total
    assert measures.num_rows == total
    assert distinct_keys(measures) == total
    # Seeded from storage at start, then counted: rows stored per day, not since the restart.
    days = {
        s.labels["measure_date"]: s.value
        for family in metrics.collect()
        if family.name == "vigia_ingest_day_measures"
        for s in family.samples
    }
    assert days == {
        utc_day(1).isoformat(): backlog.manifest.valid_total,
        utc_day(0).isoformat(): more.valid_total,
    }


def when_a_batch_is_done(checkpoint: Path, action: Callable[[], None]) -> threading.Thread:
    """Run ``action`` on a thread once the query committed its first batch."""

    def watch() -> None:
        deadline = time.monotonic() + 300
        while not (checkpoint / "commits" / "0").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_sigterm_stops_a_streaming_run_cleanly(
    spark: SparkSession, mock_cluster: MockCluster, tmp_path: Path
) -> None:
    create_topic(mock_cluster.bootstrap_servers)
    backfill(mock_cluster.bootstrap_servers, tmp_path / "m.json", day=utc_day(1), meters=5)
    config = job_config(mock_cluster, tmp_path, available_now=False, trigger_interval=0.5)
    stopper = when_a_batch_is_done(
        tmp_path / "checkpoint", lambda: os.kill(os.getpid(), signal.SIGTERM)
    )
    assert run_job(config, spark) == 0
    stopper.join()
    assert stored(config).num_rows == 5 * 96 * 4
    assert committed(mock_cluster) == latest_offsets(mock_cluster)


def test_losing_the_cluster_mid_run_stops_with_one_sentence(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    holder = [start_mock_cluster()]
    servers = holder[0].bootstrap_servers
    create_topic(servers)
    backfill(servers, tmp_path / "m.json", day=utc_day(1), meters=5)
    config = replace(
        job_config(holder[0], tmp_path, available_now=False, trigger_interval=0.5),
        kafka_timeout=2.0,
    )

    def lose_the_cluster() -> None:
        holder.clear()  # the last reference: librdkafka shuts the mock brokers down
        gc.collect()

    started = time.monotonic()
    when_a_batch_is_done(tmp_path / "checkpoint", lose_the_cluster)
    caplog.set_level(logging.ERROR)
    assert run_job(config, spark) == 1
    assert time.monotonic() - started < 240
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert errors[0].startswith("cannot ")
    assert servers in errors[0] or "measure-" in errors[0]
    assert "\n" not in errors[0]


def test_the_job_rides_through_a_rolling_restart(spark: SparkSession, tmp_path: Path) -> None:
    """Every broker of the mock cluster stopped in turn while leadership moves, during an
    available-now run in small batches: nothing fails, everything is stored once and committed,
    and the retries are counted."""
    with controlled_cluster() as cluster:
        cluster.create_topic(TOPIC, 4)
        manifest = backfill(
            cluster.bootstrap_servers, tmp_path / "m.json", day=utc_day(1), meters=20
        )
        config = job_config(cluster, tmp_path, max_offsets_per_trigger=800)  # type: ignore[arg-type]

        def roll() -> None:
            for broker in range(1, cluster.brokers + 1):
                restart(cluster, broker, down_s=2.5, move_after_s=1.0)

        spool, tasks = RetrySpool(), TaskCounts()
        try:
            metrics = IngestMetrics(config.query_name, kafka_retries=spool.counts)
            job = IngestJob(spark, config, metrics, preflight_kafka(config), spool.directory, tasks)
            rolling = when_a_batch_is_done(tmp_path / "checkpoint", roll)
            try:
                job.run()
            finally:
                rolling.join()  # the cluster must outlive the restarts
            retries = summed(spool.counts(), tasks.retries())
        finally:
            spool.close()
        table = stored(config)
        assert table.num_rows == manifest.valid_total == distinct_keys(table)
        assert committed(cluster) == latest_offsets(cluster)  # type: ignore[arg-type]
        assert job.query is not None and job.query.lastProgress is not None
        assert job.query.lastProgress.batchId >= 4  # the restarts happened between batches
        assert sum(retries.values()) > 0, "the restarts caused no retry: the test proves nothing"


def test_a_batch_without_a_valid_message_is_quarantined_and_the_run_goes_on(
    spark: SparkSession,
    mock_cluster: MockCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first batch holds only rejected messages (two for each reason), the second only valid
    ones. A batch without a valid row once failed the query: with it, AQE dropped the observation
    of the valid rows (`ingest.job.observed_counts`)."""
    day = utc_day(1).isoformat()

    def measure(period: int, **fields: Any) -> bytes:
        record = {"meter": "UY000001", "measure_date": day, "period": period}
        record |= {"magnitude": "AEI", "value": 1.5, "ts": f"{day}T12:00:00Z"} | fields
        return json.dumps(record).encode()

    rejected = {
        "malformed_json": b"not json",
        "missing_field": b'{"n":1}',
        "period_out_of_range": measure(0),
        "invalid_value": measure(1, value=-1),
        "unknown_magnitude": measure(1, magnitude="XYZ"),
        "invalid_date": measure(1, measure_date="2026-02-30"),
        "invalid_ts": measure(1, ts=f"{day}T12:00:00"),
    }
    assert set(rejected) == {r.value for r in REASONS}
    bad = [*rejected.values()] * 2
    # 13 measures, the first one corrected: one duplicate.
    good = [measure(p) for p in range(1, 14)] + [measure(1, ts=f"{day}T13:00:00Z", value=2)]
    create_topic(mock_cluster.bootstrap_servers)
    producer = Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "log_level": 3})
    for value in [*bad, *good]:
        producer.produce(TOPIC, value, b"UY000001", partition=0)  # one partition: batches in order
    assert producer.flush(30) == 0
    config = job_config(mock_cluster, tmp_path, max_offsets_per_trigger=len(bad))
    made: list[IngestMetrics] = []
    make = vigia.ingest.job.job_metrics
    monkeypatch.setattr(
        vigia.ingest.job, "job_metrics", lambda *a: made.append(make(*a)) or made[-1]
    )

    assert run_job(config, spark) == 0

    measures = stored(config)
    assert measures.num_rows == distinct_keys(measures) == 13
    assert pc.max(measures.column("value")).as_py() == 2  # the correction won
    reasons = Counter(quarantined(config).column("reason").to_pylist())
    assert reasons == dict.fromkeys(rejected, 2)
    registry = CollectorRegistry()
    registry.register(made[0])
    values = samples(generate_latest(registry).decode())
    q = (("query", config.query_name),)
    assert values[("vigia_ingest_batches_total", q)] == 2
    assert values[("vigia_ingest_valid_rows_total", q)] == 13
    assert values[("vigia_ingest_duplicate_rows_total", q)] == 1
    for reason in rejected:
        assert values[("vigia_ingest_invalid_rows_total", (*q, ("reason", reason)))] == 2
