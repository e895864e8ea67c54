"""A Kafka source for Spark Structured Streaming on PySpark's Python Data Source API.

    register(spark)
    spark.readStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", ...)
        .option("subscribe", "measure").load()

gives the columns of Spark's built-in Kafka source (`ingest.schema.KAFKA_SOURCE_SCHEMA`).
Modules: `offsets` (pure offset arithmetic), `adapter` (metadata, watermarks, group commits),
`reader` (one partition's range → Arrow), `options`, `source` (the Spark glue). Importing the
package does not import Spark, so the pure parts stay cheap to use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pyspark.accumulators import Accumulator
    from pyspark.sql import SparkSession

    from vigia.ingest.kafka_source.counts import Counts

SOURCE_NAME: Final = "vigia-kafka"

__all__ = ["SOURCE_NAME", "register"]


def register(spark: SparkSession, counters: Accumulator[Counts] | None = None) -> None:
    """``counters``: the read tasks count their Kafka retries and skipped offsets into it
    (`task_counts.TaskCounts.attach`); without, into the spool like the planner."""
    from vigia.ingest.kafka_source.source import KafkaDataSource, counted_source

    spark.dataSource.register(KafkaDataSource if counters is None else counted_source(counters))
