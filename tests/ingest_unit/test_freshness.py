"""The freshness histogram: each stored measure's age counted in its batch's aggregation, by
cohort; checked through the job's batch writer against the ingested_at it stores."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from tests.ingest_unit.conftest import kafka_frame
from vigia.ingest import transform
from vigia.ingest.config import IngestConfig
from vigia.ingest.freshness import (
    COHORTS,
    FRESHNESS_BUCKETS,
    AgeCounts,
    cells,
    cohort_ages,
    cohorts_held,
)
from vigia.ingest.job import BatchWriter
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.schema import SNAPSHOT_FIELD, SNAPSHOT_READ
from vigia.ingest.sinks import ExactlyOnceSink
from vigia.ingest.stored_observation import StoredCounts, StoredObservation

pytestmark = pytest.mark.spark


def message(period: int, ts: dt.datetime, snapshot: str | None = None) -> str:
    record: dict[str, Any] = {
        "meter": "UY000001",
        "measure_date": ts.date().isoformat(),
        "period": period,
        "magnitude": "AEI",
        "value": 1.0,
        "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if snapshot is not None:
        record[SNAPSHOT_FIELD] = snapshot
    return json.dumps(record)


def test_any_snapshot_read_is_in_the_redelivered_cohort(spark: SparkSession) -> None:
    reads = [None, "false", "true", "first", "last", "incremental"]
    at = dt.datetime(2026, 11, 20, 9, 15, tzinfo=dt.UTC)
    raw = kafka_frame(spark, [message(p + 1, at, s) for p, s in enumerate(reads)])
    rows = transform.classify(transform.parse(raw)).collect()
    assert {r["period"]: r[SNAPSHOT_READ] for r in rows} == {
        1: False,
        2: False,
        3: True,
        4: True,
        5: True,
        6: True,
    }


def test_a_batch_counts_each_stored_measure_by_age_and_cohort(
    spark: SparkSession, tmp_path: Path
) -> None:
    config = IngestConfig(
        bootstrap_servers="unused",
        output=str(tmp_path / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
    )
    sink = ExactlyOnceSink(spark, config.checkpoint)
    metrics = IngestMetrics(config.query_name)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    # Ages well inside their buckets, so the seconds the batch itself takes cannot move them.
    live_ages = [10, 200, 1000, 1000, 5000, 100_000]
    snapshot_ages = [20, 40_000]
    messages = [
        message(i + 1, now - dt.timedelta(seconds=age)) for i, age in enumerate(live_ages)
    ] + [
        message(50 + i, now - dt.timedelta(seconds=age), "true")
        for i, age in enumerate(snapshot_ages)
    ]
    # One message twice: the dedupe keeps one, and only stored measures count.
    messages.append(messages[0])
    classified = transform.slim(transform.classify(transform.parse(kafka_frame(spark, messages))))
    BatchWriter(sink, config, metrics)(classified, 0)

    stored = ds.dataset(config.output, partitioning="hive").to_table().to_pylist()
    stamp = {r["ingested_at"] for r in stored}
    assert len(stamp) == 1 and len(stored) == len(live_ages) + len(snapshot_ages)
    (ingested_at,) = stamp
    ingested_at = ingested_at.replace(tzinfo=dt.UTC)
    ages = {
        r["period"]: (ingested_at - r["ts"].replace(tzinfo=dt.UTC)).total_seconds() for r in stored
    }
    live = sorted(a for p, a in ages.items() if p < 50)
    redelivered = sorted(a for p, a in ages.items() if p >= 50)

    def expected(sample: list[float]) -> list[tuple[str, float]]:
        return [(str(le), float(sum(a <= le for a in sample))) for le in FRESHNESS_BUCKETS] + [
            ("+Inf", float(len(sample)))
        ]

    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    for cohort, sample in (("live", live), ("redelivered", redelivered)):
        buckets = [
            (
                le,
                registry.get_sample_value(
                    "vigia_ingest_measure_freshness_seconds_bucket",
                    {"query": config.query_name, "cohort": cohort, "le": le},
                ),
            )
            for le, _ in expected(sample)
        ]
        assert buckets == expected(sample), text
        total = registry.get_sample_value(
            "vigia_ingest_measure_freshness_seconds_sum",
            {"query": config.query_name, "cohort": cohort},
        )
        assert total == pytest.approx(sum(sample))
    # The ages the batch counted are the stored ones: within the batch's own seconds of those
    # the test asked for (the stamp is taken while the batch runs).
    assert all(0 <= a - b < 120 for a, b in zip(live, sorted(live_ages), strict=True))


SLOTS = len(FRESHNESS_BUCKETS) + 1


def test_counts_add_up_across_batches_and_a_missing_observation_is_zero() -> None:
    counts = [1, 0, 0, 0, 0, 0, 0, 0, 0, 1] + [0] * SLOTS
    one = cohort_ages(counts, {"freshness_live_age_seconds": 3.5})
    assert one["live"] == AgeCounts((1,) * len(FRESHNESS_BUCKETS), 2, 3.5)
    assert one["redelivered"] == AgeCounts()
    assert cohort_ages([0] * cells(COHORTS), {}) == {cohort: AgeCounts() for cohort in COHORTS}
    assert (one["live"] + one["live"]).count == 4


def observe(observation: StoredObservation, frame: DataFrame) -> StoredCounts:
    """The counts of ``frame``'s rows (columns d, stored_at, ts, snap), checking that the
    observed frame keeps its columns."""
    collected = Observation()
    observed = observation.observe(
        frame,
        collected,
        measure_date=F.col("d"),
        stored_at=F.col("stored_at"),
        ts=F.col("ts"),
        snapshot_read=F.col("snap"),
    )
    assert observed.columns == frame.columns
    observed.collect()
    return observation.read(collected.get)


def test_a_full_sum_counts_every_row_of_the_batch_in_one_cell(spark: SparkSession) -> None:
    """Seven rows: three bits a count, every cell of a family in one sum; all seven rows in the
    last cell of each: a date outside the window, redelivered, older than the last bound."""
    now = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
    old = now - dt.timedelta(seconds=86_401)
    frame = spark.createDataFrame(
        [(old.date(), now, old, True)] * 7,
        "d date, stored_at timestamp, ts timestamp, snap boolean",
    )
    window = [now.date() + dt.timedelta(days=ahead) for ahead in (0, 1)]
    observation = StoredObservation.for_batch(window, 7, 7)
    assert (observation.dated.sums, observation.fresh.sums) == (1, 1)
    counts = observe(observation, frame)
    assert (counts.rows, counts.rows_by_date) == (7, {})
    assert counts.freshness["live"] == AgeCounts()
    assert counts.freshness["redelivered"] == AgeCounts(
        (0,) * len(FRESHNESS_BUCKETS), 7, 7 * 86_401.0
    )


def test_a_batch_counts_the_cells_of_the_cohorts_it_holds_only() -> None:
    assert cohorts_held(1000, 0) == ("live",)
    assert cohorts_held(1000, 1000) == ("redelivered",)
    assert cohorts_held(1000, 1) == ("live", "redelivered")
    assert cohorts_held(0, 0) == ()
    live = StoredObservation.for_batch([dt.date(2026, 11, 20)], 1_000_000, 0)
    both = StoredObservation.for_batch([dt.date(2026, 11, 20)], 1_000_000, 1)
    assert (live.fresh.sums, both.fresh.sums) == (4, 7)


def test_a_batch_of_one_cohort_counts_it_and_leaves_the_other_empty(spark: SparkSession) -> None:
    now = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
    ages = [10, 10, 700, 4000]
    frame = spark.createDataFrame(
        [(now.date(), now, now - dt.timedelta(seconds=age), False) for age in ages],
        "d date, stored_at timestamp, ts timestamp, snap boolean",
    )
    observation = StoredObservation.for_batch([now.date()], len(ages), 0)
    counts = observe(observation, frame)
    assert (counts.rows, counts.rows_by_date) == (4, {now.date(): 4})
    assert counts.freshness["redelivered"] == AgeCounts()
    expected = tuple(sum(age <= le for age in ages) for le in FRESHNESS_BUCKETS)
    assert counts.freshness["live"] == AgeCounts(expected, 4, float(sum(ages)))
