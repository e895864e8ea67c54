"""The measure record: its JSON wire form, its stored form, and why a message can be rejected.

A message on topic ``measure`` is keyed by meter id and its value is one JSON object::

    {"meter":"UY000123","measure_date":"2026-11-20","period":37,"magnitude":"AEI",
     "value":1.234,"ts":"2026-11-20T09:15:00Z"}

Periods are the 96 quarter hours of ``measure_date`` (period 1 is 00:00–00:15); ``ts`` is when the
HES wrote the row. Validation (``ingest.transform``) rejects a message for the first failing reason
in `REASONS` order.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pyspark.sql.types import (
    BinaryType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

MAGNITUDES: Final = ("AEI", "AEE", "REI", "REE")
"""Active energy in / out, reactive energy in / out (kWh or kvarh per period)."""

PERIODS: Final = range(1, 97)
PERIODS_PER_DAY: Final = len(PERIODS)
PERIOD_SECONDS: Final = 15 * 60

FIELDS: Final = ("meter", "measure_date", "period", "magnitude", "value", "ts")
"""The JSON object's keys, all required."""
SNAPSHOT_FIELD: Final = "__source_snapshot"
"""Optional key the connector adds (ExtractNewRecordState's ``add.fields=source.snapshot``):
``incremental`` on a row an incremental snapshot read again from the HES (``vigia-ingest
repair``); absent on messages from elsewhere."""


class Reason(StrEnum):
    """Why a message went to quarantine. The values are the `reason` label of the ingest metrics."""

    MALFORMED_JSON = "malformed_json"  # not a JSON object (or an empty / null Kafka value)
    MISSING_FIELD = "missing_field"  # a key of FIELDS absent or null, or a blank meter
    PERIOD_OUT_OF_RANGE = "period_out_of_range"  # not an integer in 1..96
    INVALID_VALUE = "invalid_value"  # not a number, negative, NaN or ±infinity
    UNKNOWN_MAGNITUDE = "unknown_magnitude"  # not one of MAGNITUDES (case-sensitive)
    INVALID_DATE = "invalid_date"  # not an existing calendar date written yyyy-MM-dd
    INVALID_TS = "invalid_ts"  # not an ISO-8601 timestamp with an offset (Z, +hh:mm)


REASONS: Final = tuple(Reason)
"""Every reason, in the order validation checks them: a row gets the first one that applies."""

# from_json reads every field as text so that a wrongly typed field is told apart from broken JSON
# (Spark's StringType keeps a JSON number's literal text); typing happens during validation.
CORRUPT_RECORD_COLUMN: Final = "_corrupt_record"
RAW_JSON_SCHEMA: Final = StructType(
    [
        *(StructField(name, StringType(), True) for name in FIELDS),
        StructField(SNAPSHOT_FIELD, StringType(), True),
        StructField(CORRUPT_RECORD_COLUMN, StringType(), True),
    ]
)
"""Every field as text: reads any JSON object (what a field holds is judged afterwards)."""
TYPED_JSON_SCHEMA: Final = StructType(
    [
        StructField(
            name,
            {"period": IntegerType(), "value": DoubleType()}.get(name, StringType()),
            True,
        )
        for name in FIELDS
    ]
    + [
        StructField(SNAPSHOT_FIELD, StringType(), True),
        StructField(CORRUPT_RECORD_COLUMN, StringType(), True),
    ]
)
"""The fields as the wire form writes them (period and value as JSON numbers): cheaper to read
than text, and a message it cannot read is read again with RAW_JSON_SCHEMA."""

MEASURE_SCHEMA: Final = StructType(
    [
        StructField("meter", StringType(), False),
        StructField("measure_date", DateType(), False),
        StructField("period", IntegerType(), False),
        StructField("magnitude", StringType(), False),
        StructField("value", DoubleType(), False),
        StructField("ts", TimestampType(), False),
    ]
)
"""A valid measure, typed: the JSON's measure_date string becomes a date, ts a timestamp."""

KAFKA_SOURCE_SCHEMA: Final = StructType(
    [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
)
"""The columns of Spark's built-in Kafka source (without the optional headers column)."""
KAFKA_SOURCE_COLUMNS: Final = tuple(KAFKA_SOURCE_SCHEMA.fieldNames())

VALID_SCHEMA: Final = StructType(
    [
        *MEASURE_SCHEMA.fields,
        StructField("kafka_partition", IntegerType(), True),
        StructField("kafka_offset", LongType(), True),
        StructField("ingested_at", TimestampType(), True),
    ]
)
"""What the job stores for a valid measure (Parquet, partitioned by measure_date); ingested_at
last, as in QUARANTINE_SCHEMA (it is stamped last)."""
VALID_COLUMNS: Final = tuple(VALID_SCHEMA.fieldNames())

QUARANTINE_SCHEMA: Final = StructType(
    [
        StructField("raw_value", StringType(), True),
        StructField("raw_key", StringType(), True),
        StructField("reason", StringType(), False),
        StructField("kafka_topic", StringType(), True),
        StructField("kafka_partition", IntegerType(), True),
        StructField("kafka_offset", LongType(), True),
        StructField("kafka_timestamp", TimestampType(), True),
        StructField("ingested_at", TimestampType(), True),
    ]
)
"""What the job stores for a rejected message: the message as received and why it was rejected."""
QUARANTINE_COLUMNS: Final = tuple(QUARANTINE_SCHEMA.fieldNames())

MEASURE_KEY_COLUMNS: Final = ("meter", "measure_date", "period", "magnitude")
REDELIVERED: Final = "redelivered"
"""Column of a classified message: true when SNAPSHOT_FIELD says an incremental snapshot read it
again from the HES (the job stores it only when its key is not stored yet,
`vigia.ingest.redelivery`)."""
"""One measure; a later message with the same key is a correction."""
SNAPSHOT_READ: Final = "snapshot_read"
"""Column of a classified message: true when SNAPSHOT_FIELD says a snapshot read the row from the
HES's table (the connector's initial snapshot, or an incremental one: `vigia-ingest repair`) rather
than from its binlog. Such a row was written long before it was read: its freshness counts in the
``redelivered`` cohort (`vigia.ingest.freshness`), not against the live promise."""
