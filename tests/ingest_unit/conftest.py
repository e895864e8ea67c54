"""Rows as Spark's Kafka source gives them, for the job's pure transformations (the Spark session
is tests/spark_session.py's)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

from vigia.ingest.schema import KAFKA_SOURCE_SCHEMA

KAFKA_TIME = dt.datetime(2026, 11, 20, 9, 20, tzinfo=dt.UTC)


def kafka_frame(
    spark: SparkSession,
    values: Sequence[bytes | str | None],
    *,
    partitions: Sequence[int] | None = None,
    offsets: Sequence[int] | None = None,
    topic: str = "measure",
) -> DataFrame:
    """Rows as Spark's Kafka source gives them; offsets default to 0, 1, 2, … (row ids)."""
    rows = [
        (
            b"UY000001",
            value.encode() if isinstance(value, str) else value,
            topic,
            partitions[i] if partitions else 0,
            offsets[i] if offsets else i,
            KAFKA_TIME,
            0,
        )
        for i, value in enumerate(values)
    ]
    return spark.createDataFrame(rows, KAFKA_SOURCE_SCHEMA)
