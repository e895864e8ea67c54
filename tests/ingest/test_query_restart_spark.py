"""The job starts its query again after a transient Spark failure (ingest/query_restart.py), on a
real local Spark query: the failure is raised by the batch writer with the text Spark gives a
Python worker that did not connect back in time."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import vigia.ingest.job
from tests.conftest import MockCluster
from tests.ingest.conftest import backfill, create_topic, utc_day
from tests.ingest.test_job import distinct_keys, job_config, stored
from vigia.ingest.job import IngestJob, JobError, preflight_kafka
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.query_restart import RESTARTS_IN_A_ROW

pytestmark = pytest.mark.spark

TRANSIENT = "Python worker failed to connect back."


def failing_writer(failures: list[int]) -> type:
    """A BatchWriter whose calls fail while `failures[0]` is above 0, counting it down."""

    class Failing(vigia.ingest.job.BatchWriter):
        def __call__(self, classified: DataFrame, batch_id: int) -> None:
            if failures[0] > 0:
                failures[0] -= 1
                raise RuntimeError(TRANSIENT)
            super().__call__(classified, batch_id)

    return Failing


@pytest.fixture
def run_failing(
    spark: SparkSession, mock_cluster: MockCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[int], tuple[IngestJob, Any]]:
    """Runs the job over a backfilled day with its first `failures` batch calls failing."""

    def run(failures: int) -> tuple[IngestJob, Any]:
        create_topic(mock_cluster.bootstrap_servers)
        manifest = backfill(
            mock_cluster.bootstrap_servers, tmp_path / "m.json", day=utc_day(1), meters=2
        )
        config = job_config(mock_cluster, tmp_path)
        monkeypatch.setattr(vigia.ingest.job, "BatchWriter", failing_writer([failures]))
        job = IngestJob(spark, config, IngestMetrics(config.query_name), preflight_kafka(config))
        job.run()
        return job, manifest

    return run


def test_a_query_that_failed_transiently_is_started_again_and_stores_every_measure_once(
    run_failing: Callable[[int], tuple[IngestJob, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="vigia.ingest.job"):
        job, manifest = run_failing(2)
    table = stored(job.config)
    assert table.num_rows == manifest.valid_total == distinct_keys(table)
    restarts = [r.getMessage() for r in caplog.records if "starting it again" in r.getMessage()]
    assert len(restarts) == 2, restarts
    assert "(1 of 3 in a row)" in restarts[0] and "(2 of 3 in a row)" in restarts[1]


def test_a_failure_that_keeps_coming_back_ends_the_job(
    run_failing: Callable[[int], tuple[IngestJob, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="vigia.ingest.job"),
        pytest.raises(JobError, match="STREAM_FAILED"),
    ):
        run_failing(RESTARTS_IN_A_ROW + 1)
    restarts = [r for r in caplog.records if "starting it again" in r.getMessage()]
    assert len(restarts) == RESTARTS_IN_A_ROW
