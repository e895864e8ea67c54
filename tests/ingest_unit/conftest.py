"""One local Spark session for every test of this folder (starting Spark takes seconds)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark (the ingest extra) is not installed")

from pyspark.sql import DataFrame, SparkSession  # noqa: E402

from ingest.schema import KAFKA_SOURCE_SCHEMA  # noqa: E402
from ingest.spark_session import start_session  # noqa: E402

KAFKA_TIME = dt.datetime(2026, 11, 20, 9, 20, tzinfo=dt.UTC)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = start_session(
        "vigia-ingest-unit",
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            # Compiling each plan to bytecode is most of the time on rows this few (same results).
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


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
