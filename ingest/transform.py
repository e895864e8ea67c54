"""Kafka messages → valid measures and quarantined messages. Pure DataFrame → DataFrame, no I/O.

Works the same on a static DataFrame and on each micro-batch of the stream; the input has the
columns of Spark's Kafka source (`ingest.schema.KAFKA_SOURCE_COLUMNS`).

    parse(raw)                 the JSON read vectorised (from_json, PERMISSIVE): typed, then as text
                               where the typed read fails
    classify(parsed)           typed measure columns, `reason` (null when the row is valid),
                               `redelivered` (an incremental snapshot read it again, see
                               ingest.redelivery) and `snapshot_read` (any snapshot read it)
    slim(classified)           the message as received kept on rejected rows only
    split_classified(df, at)   (valid rows in VALID_COLUMNS, rejected rows in QUARANTINE_COLUMNS),
                               stamped ingested_at (`ingested_at(at)` in a stream's batches)
    split_valid_invalid(p)     classify + split_classified
    dedupe_latest(valid)       one row per measure key: the newest ts wins
    process(raw)               all of the above: (valid deduplicated, invalid)
    observe_exprs()            aggregate expressions for `classified.observe(OBSERVATION, ...)`

Validation order (first failing reason wins, see `ingest.schema.REASONS`): malformed_json,
missing_field, period_out_of_range, invalid_value, unknown_magnitude, invalid_date, invalid_ts.
The message's structure first (is it a JSON object with every field), then each field on its own.

Details, on purpose: a number sent as a JSON string ("period":"37") is accepted; trailing text
after the JSON object is ignored (Spark's JSON reader stops at the object's end); a field is missing
when absent or null (and the meter also when blank); measure_date must be a real date written
yyyy-MM-dd; ts must be ISO-8601 *with* an offset (`Z`, `+hh:mm`), so that its meaning never depends
on the Spark session time zone; value must be a finite number ≥ 0.

Cost: the JSON parse is most of it (json_tuple alone reads faster, but within classify it saved
nothing measurable; docs/ingest-performance.md). In foreachBatch, persist the classified batch,
slimmed, before splitting it: otherwise each branch parses again, and Spark pushes the split's
filter below the parse, which parses each message once more. In a stream, observe the classified
DataFrame (before the sink) so the per-reason counts appear in each progress event.
"""

from __future__ import annotations

import datetime as dt
import operator
from functools import reduce
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from vigia.ingest.schema import (
    CORRUPT_RECORD_COLUMN,
    FIELDS,
    MAGNITUDES,
    MEASURE_KEY_COLUMNS,
    MEASURE_SCHEMA,
    PERIODS,
    QUARANTINE_COLUMNS,
    RAW_JSON_SCHEMA,
    REASONS,
    REDELIVERED,
    SNAPSHOT_FIELD,
    SNAPSHOT_READ,
    TYPED_JSON_SCHEMA,
    VALID_COLUMNS,
    Reason,
)

OBSERVATION: Final = "vigia_ingest"
"""Suggested observation name for `observe_exprs()`."""
OBSERVED_ROWS: Final = "rows"
OBSERVED_VALID: Final = "valid"
OBSERVED_NEWEST_TS: Final = "newest_ts_seconds"
"""Keys of the observed row besides one per reason (named as `Reason` values)."""

_JSON_OPTIONS: Final = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD_COLUMN}
_KAFKA_COLUMNS: Final = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp")
# Columns only quarantined rows need (see `slim`).
_RECEIVED: Final = frozenset({"raw_value", "raw_key", "kafka_topic", "kafka_timestamp"})
# The parsed JSON's fields, prefixed so they never clash with the classified columns; period and
# value are already typed (null when not a number), the others are text.
_FIELD: Final = {name: f"_json_{name}" for name in FIELDS}
_TYPED: Final = {
    f.name: f.dataType
    for f in TYPED_JSON_SCHEMA.fields
    if f.name in FIELDS and not isinstance(f.dataType, StringType)
}


def parse(raw: DataFrame) -> DataFrame:
    """Read each message's JSON; keep the message as received and where it came from.

    Two reads, the second one rare: first with the fields typed as the wire form writes them
    (TYPED_JSON_SCHEMA), then, for a message that read fails on (not a JSON object, or a field not
    of its type: a number sent as a JSON string, a fractional period), with every field as text
    (RAW_JSON_SCHEMA), which decides. Reading the numbers as text alone cost ≈0.5 CPU-s per
    million messages more (docs/ingest-performance.md)."""
    raw_value = F.col("value").cast("string")
    typed = raw.select(
        raw_value.alias("raw_value"),
        F.col("key").cast("string").alias("raw_key"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.from_json(raw_value, TYPED_JSON_SCHEMA, _JSON_OPTIONS).alias("_typed"),
    )
    # A value that is not a JSON object gives a null struct (empty input) or one with only the
    # corrupt-record text set (anything else, including the literal `null`).
    failed = F.col("_typed").isNull() | F.col(f"_typed.{CORRUPT_RECORD_COLUMN}").isNotNull()
    both = typed.select(
        "*",
        failed.alias("_retried"),
        F.when(failed, F.from_json(F.col("raw_value"), RAW_JSON_SCHEMA, _JSON_OPTIONS)).alias(
            "_json"
        ),
    )
    retried = F.col("_retried")

    def field(name: str) -> Column:
        text = F.col(f"_json.{name}")
        if name in _TYPED:
            text = text.try_cast(_TYPED[name])
        return F.when(retried, text).otherwise(F.col(f"_typed.{name}")).alias(_FIELD[name])

    def missing(struct: str) -> Column:
        return reduce(operator.or_, (F.col(f"{struct}.{name}").isNull() for name in FIELDS))

    return both.select(
        "raw_value",
        "raw_key",
        *_KAFKA_COLUMNS,
        (
            retried
            & (F.col("_json").isNull() | F.col(f"_json.{CORRUPT_RECORD_COLUMN}").isNotNull())
        ).alias("_malformed"),
        F.when(retried, missing("_json")).otherwise(missing("_typed")).alias("_missing"),
        *(field(name) for name in FIELDS),
        F.when(retried, F.col(f"_json.{SNAPSHOT_FIELD}"))
        .otherwise(F.col(f"_typed.{SNAPSHOT_FIELD}"))
        .alias("_snapshot"),
    )


def _field(name: str) -> Column:
    return F.col(_FIELD[name])


def classify(parsed: DataFrame) -> DataFrame:
    """Typed measure columns and `reason`: the first failing check, null for a valid row."""
    date_text, ts_text = _field("measure_date"), _field("ts")
    # Typed columns first, reasons from them: each text is parsed once (a single select that
    # repeats the casts in every check costs twice as much). Shape checks are plain string tests,
    # cheaper than regular expressions; the parsers do the rest.
    ts_has_offset = (
        ts_text.endswith("Z")
        | F.substring(ts_text, -6, 1).isin("+", "-")
        | F.substring(ts_text, -5, 1).isin("+", "-")
    )
    typed = parsed.select(
        _field("meter").alias("meter"),
        F.when(F.length(date_text) == 10, F.try_to_date(date_text, "yyyy-MM-dd")).alias(
            "measure_date"
        ),
        _field("period").alias("period"),
        _field("magnitude").alias("magnitude"),
        _field("value").alias("value"),
        F.when(
            (F.substring(ts_text, 11, 1) == "T") & ts_has_offset, ts_text.try_cast("timestamp")
        ).alias("ts"),
        "raw_value",
        "raw_key",
        *_KAFKA_COLUMNS,
        "_malformed",
        "_missing",
        F.coalesce(F.col("_snapshot") == "incremental", F.lit(False)).alias(REDELIVERED),
        # Debezium writes "false" on binlog rows and true, first, last, … on snapshot reads.
        F.coalesce(F.col("_snapshot") != "false", F.lit(False)).alias(SNAPSHOT_READ),
    )
    period, value = F.col("period"), F.col("value")
    failed: dict[Reason, Column] = {
        Reason.MALFORMED_JSON: F.col("_malformed"),
        Reason.MISSING_FIELD: F.col("_missing") | (F.trim("meter") == ""),
        Reason.PERIOD_OUT_OF_RANGE: ~F.coalesce(
            period.between(PERIODS[0], PERIODS[-1]), F.lit(False)
        ),
        # Spark orders NaN above +inf, so this single range test also rejects NaN.
        Reason.INVALID_VALUE: ~F.coalesce((value >= 0) & (value < float("inf")), F.lit(False)),
        Reason.UNKNOWN_MAGNITUDE: ~F.col("magnitude").isin(*MAGNITUDES),
        Reason.INVALID_DATE: F.col("measure_date").isNull(),
        Reason.INVALID_TS: F.col("ts").isNull(),
    }
    first, *others = REASONS
    reason = F.when(failed[first], F.lit(first.value))
    for name in others:
        reason = reason.when(failed[name], F.lit(name.value))
    return typed.select(
        *MEASURE_SCHEMA.fieldNames(),
        "raw_value",
        "raw_key",
        *_KAFKA_COLUMNS,
        reason.alias("reason"),
        REDELIVERED,
        SNAPSHOT_READ,
    )


def slim(classified: DataFrame) -> DataFrame:
    """The same rows and columns, with the message as received blanked on valid rows: only
    quarantined rows keep it, and it is most of a batch's bytes (what a persist must copy)."""
    rejected = F.col("reason").isNotNull()
    return classified.select(
        *(
            F.when(rejected, F.col(name)).alias(name) if name in _RECEIVED else F.col(name)
            for name in classified.columns
        )
    )


def ingested_at(at: dt.datetime) -> Column:
    """``at`` as a column, for `split_classified` in each micro-batch.

    Not a timestamp literal: generated code writes those into its text, so each batch's code was
    new and was compiled again, and the JVM spent ≈2 CPU-s of every million-row batch compiling
    it to machine code (docs/ingest-performance.md). An array literal is referred to, not copied,
    and the index computed from a non-deterministic function keeps the optimizer from folding
    the element back into a timestamp literal."""
    once = F.array(F.lit(at))
    return F.element_at(once, F.spark_partition_id() * 0 + 1)


def split_classified(
    classified: DataFrame, at: Column | None = None, keep: tuple[str, ...] = ()
) -> tuple[DataFrame, DataFrame]:
    """(valid rows as VALID_COLUMNS, rejected rows as QUARANTINE_COLUMNS); ``ingested_at`` is
    ``at`` (`ingested_at`), or the query's current time. ``keep``: more columns of the valid rows
    (after VALID_COLUMNS), such as REDELIVERED."""
    stamp = (at if at is not None else F.current_timestamp()).alias("ingested_at")
    valid = classified.where(F.col("reason").isNull()).select(*VALID_COLUMNS[:-1], stamp, *keep)
    invalid = classified.where(F.col("reason").isNotNull()).select(*QUARANTINE_COLUMNS[:-1], stamp)
    return valid, invalid


def split_valid_invalid(parsed: DataFrame) -> tuple[DataFrame, DataFrame]:
    return split_classified(classify(parsed))


def dedupe_latest(valid: DataFrame) -> DataFrame:
    """One row per (meter, measure_date, period, magnitude): the newest ts; on equal ts the highest
    Kafka partition, then the highest offset (the message the broker accepted last). Columns
    beyond VALID_COLUMNS (`split_classified`'s ``keep``) come along, after them."""
    # max over a struct compares field by field, so the first three fields decide.
    ordered = ["ts", "kafka_partition", "kafka_offset"]
    rest = [c for c in valid.columns if c not in ordered and c not in MEASURE_KEY_COLUMNS]
    extra = [c for c in valid.columns if c not in VALID_COLUMNS]
    latest = F.max(F.struct(*ordered, *rest)).alias("_latest")
    return (
        valid.groupBy(*MEASURE_KEY_COLUMNS)
        .agg(latest)
        .select(*MEASURE_KEY_COLUMNS, "_latest.*")
        .select(*VALID_COLUMNS, *extra)
    )


def process(raw: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Kafka rows → (valid measures, one per key, newest ts; quarantined messages)."""
    valid, invalid = split_valid_invalid(parse(raw))
    return dedupe_latest(valid), invalid


def observe_exprs() -> list[Column]:
    """Aggregates for `classified.observe(OBSERVATION, *observe_exprs())`: total rows, valid rows,
    rejected rows per reason (one key per `Reason` value, 0 when none) and the newest valid ts
    in epoch seconds (null when the batch has no valid row)."""
    reason = F.col("reason")
    return [
        F.count(F.lit(1)).alias(OBSERVED_ROWS),
        F.count_if(reason.isNull()).alias(OBSERVED_VALID),
        *(F.count_if(reason == r.value).alias(r.value) for r in REASONS),
        (F.max(F.when(reason.isNull(), F.unix_micros("ts"))) / 1e6).alias(OBSERVED_NEWEST_TS),
    ]
