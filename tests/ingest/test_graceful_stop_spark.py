"""A stop asked for while batches run back to back (a catch-up, a busy machine) comes after the
batch it found running, on a real local streaming query whose trigger is never seen idle."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from tests.exporter.live import wait_for
from vigia.ingest.job import await_query

pytestmark = pytest.mark.spark

BATCH_S = 3.0  # each batch's work: three times the trigger interval, so batches follow at once


def test_a_stop_during_back_to_back_batches_comes_after_the_running_batch(
    spark: SparkSession, tmp_path: Path
) -> None:
    ended: list[int] = []

    def slow_batch(_: DataFrame, batch_id: int) -> None:
        time.sleep(BATCH_S)
        ended.append(batch_id)

    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 10)
        .load()
        .writeStream.foreachBatch(slow_batch)
        .trigger(processingTime="1 second")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    stop, stop_now = threading.Event(), threading.Event()
    waiter = threading.Thread(target=await_query, args=(query, stop, stop_now), daemon=True)
    try:
        waiter.start()
        wait_for(lambda: len(ended) >= 2, 120, "two batches")
        stop.set()
        asked_after = len(ended)
        waiter.join(120)
        assert not waiter.is_alive(), f"not stopped after {len(ended) - asked_after} more batches"
        assert not query.isActive
        # The batch running when the stop was asked for, and perhaps the next one begun meanwhile.
        assert len(ended) - asked_after <= 2, ended
    finally:
        stop_now.set()
        if query.isActive:
            query.stop()
