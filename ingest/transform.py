"""Kafka messages → valid measures and quarantined messages. Pure DataFrame → DataFrame, no I/O.

Works the same on a static DataFrame and on each micro-batch of the stream; the input has the
columns of Spark's Kafka source (`ingest.schema.KAFKA_SOURCE_COLUMNS`).

    parse(raw)                 the JSON read vectorised (from_json, PERMISSIVE), every field as text
    classify(parsed)           typed measure columns + `reason` (null when the row is valid)
    slim(classified)           the message as received kept on rejected rows only
    split_classified(df)       (valid rows in VALID_COLUMNS, rejected rows in QUARANTINE_COLUMNS)
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

import operator
from functools import reduce
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ingest.schema import (
    CORRUPT_RECORD_COLUMN,
    FIELDS,
    MAGNITUDES,
    MEASURE_KEY_COLUMNS,
    MEASURE_SCHEMA,
    PERIODS,
    QUARANTINE_COLUMNS,
    RAW_JSON_SCHEMA,
    REASONS,
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
# Text fields of the parsed JSON, prefixed so they never clash with the typed columns.
_TEXT: Final = {name: f"_json_{name}" for name in FIELDS}


def parse(raw: DataFrame) -> DataFrame:
    """Read each message's JSON; keep the message as received and where it came from."""
    raw_value = F.col("value").cast("string")
    json_fields = [F.col(f"_json.{name}").alias(_TEXT[name]) for name in FIELDS]
    return raw.select(
        raw_value.alias("raw_value"),
        F.col("key").cast("string").alias("raw_key"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.from_json(raw_value, RAW_JSON_SCHEMA, _JSON_OPTIONS).alias("_json"),
    ).select(
        "raw_value",
        "raw_key",
        *_KAFKA_COLUMNS,
        # A value that is not a JSON object gives a null struct (empty input) or one with only
        # the corrupt-record text set (anything else, including the literal `null`).
        (F.col("_json").isNull() | F.col(f"_json.{CORRUPT_RECORD_COLUMN}").isNotNull()).alias(
            "_malformed"
        ),
        *json_fields,
    )


def _text(name: str) -> Column:
    return F.col(_TEXT[name])


def classify(parsed: DataFrame) -> DataFrame:
    """Typed measure columns and `reason`: the first failing check, null for a valid row."""
    date_text, ts_text = _text("measure_date"), _text("ts")
    # Typed columns first, reasons from them: each text is parsed once (a single select that
    # repeats the casts in every check costs twice as much). Shape checks are plain string tests,
    # cheaper than regular expressions; the parsers do the rest.
    ts_has_offset = (
        ts_text.endswith("Z")
        | F.substring(ts_text, -6, 1).isin("+", "-")
        | F.substring(ts_text, -5, 1).isin("+", "-")
    )
    typed = parsed.select(
        _text("meter").alias("meter"),
        F.when(F.length(date_text) == 10, F.try_to_date(date_text, "yyyy-MM-dd")).alias(
            "measure_date"
        ),
        _text("period").try_cast("int").alias("period"),
        _text("magnitude").alias("magnitude"),
        _text("value").try_cast("double").alias("value"),
        F.when(
            (F.substring(ts_text, 11, 1) == "T") & ts_has_offset, ts_text.try_cast("timestamp")
        ).alias("ts"),
        "raw_value",
        "raw_key",
        *_KAFKA_COLUMNS,
        "_malformed",
        reduce(operator.or_, (_text(name).isNull() for name in FIELDS)).alias("_missing"),
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
        F.current_timestamp().alias("ingested_at"),
        reason.alias("reason"),
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


def split_classified(classified: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(valid rows as VALID_COLUMNS, rejected rows as QUARANTINE_COLUMNS)."""
    valid = classified.where(F.col("reason").isNull()).select(*VALID_COLUMNS)
    invalid = classified.where(F.col("reason").isNotNull()).select(*QUARANTINE_COLUMNS)
    return valid, invalid


def split_valid_invalid(parsed: DataFrame) -> tuple[DataFrame, DataFrame]:
    return split_classified(classify(parsed))


def dedupe_latest(valid: DataFrame) -> DataFrame:
    """One row per (meter, measure_date, period, magnitude): the newest ts; on equal ts the highest
    Kafka partition, then the highest offset (the message the broker accepted last)."""
    # max over a struct compares field by field, so the first three fields decide.
    ordered = ["ts", "kafka_partition", "kafka_offset"]
    rest = [c for c in VALID_COLUMNS if c not in ordered and c not in MEASURE_KEY_COLUMNS]
    latest = F.max(F.struct(*ordered, *rest)).alias("_latest")
    return (
        valid.groupBy(*MEASURE_KEY_COLUMNS)
        .agg(latest)
        .select(*MEASURE_KEY_COLUMNS, "_latest.*")
        .select(*VALID_COLUMNS)
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
