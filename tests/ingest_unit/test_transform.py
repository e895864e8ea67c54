"""parse → classify → split → dedupe on static DataFrames shaped like Spark's Kafka source."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from tests.ingest_unit.conftest import kafka_frame
from vigia.ingest.schema import (
    KAFKA_SOURCE_COLUMNS,
    QUARANTINE_SCHEMA,
    REASONS,
    VALID_COLUMNS,
    VALID_SCHEMA,
    Reason,
)
from vigia.ingest.simulator.generator import generate_day
from vigia.ingest.simulator.malformed import malformed_value
from vigia.ingest.transform import (
    OBSERVED_NEWEST_TS,
    OBSERVED_ROWS,
    OBSERVED_VALID,
    classify,
    dedupe_latest,
    ingested_at,
    observe_exprs,
    parse,
    process,
    slim,
    split_classified,
    split_valid_invalid,
)

pytestmark = pytest.mark.spark

GOOD: dict[str, Any] = {
    "meter": "UY000123",
    "measure_date": "2026-11-20",
    "period": 37,
    "magnitude": "AEI",
    "value": 1.234,
    "ts": "2026-11-20T09:15:00Z",
}
GOOD_TS = dt.datetime(2026, 11, 20, 9, 15, tzinfo=dt.UTC)


def record(**changes: Any) -> str:
    return json.dumps({**GOOD, **changes})


def without(field: str) -> str:
    return json.dumps({k: v for k, v in GOOD.items() if k != field})


# (raw Kafka value, expected reason or None for valid)
CASES: list[tuple[str, str | None, Reason | None]] = [
    ("good", record(), None),
    ("number sent as text", record(period="37", value="1.5"), None),
    ("zero value", record(value=0), None),
    ("ts with offset", record(ts="2026-11-20T06:15:00.5-03:00"), None),
    ("ts offset without colon", record(ts="2026-11-20T06:15:00-0300"), None),
    ("truncated", record()[:40], Reason.MALFORMED_JSON),
    ("not json", "HES-ERROR 0x2F", Reason.MALFORMED_JSON),
    ("json null", "null", Reason.MALFORMED_JSON),
    ("json array", f"[{record()}]", Reason.MALFORMED_JSON),
    ("json number", "42", Reason.MALFORMED_JSON),
    ("empty value", "", Reason.MALFORMED_JSON),
    ("empty object", "{}", Reason.MISSING_FIELD),
    ("no meter", without("meter"), Reason.MISSING_FIELD),
    ("no ts", without("ts"), Reason.MISSING_FIELD),
    ("null value", record(value=None), Reason.MISSING_FIELD),
    ("blank meter", record(meter="  "), Reason.MISSING_FIELD),
    ("period 0", record(period=0), Reason.PERIOD_OUT_OF_RANGE),
    ("period 97", record(period=97), Reason.PERIOD_OUT_OF_RANGE),
    ("fractional period", record(period=12.5), Reason.PERIOD_OUT_OF_RANGE),
    ("period text", record(period="late"), Reason.PERIOD_OUT_OF_RANGE),
    ("negative value", record(value=-0.001), Reason.INVALID_VALUE),
    ("NaN value", record(value=float("nan")), Reason.INVALID_VALUE),
    ("infinite value", record(value=float("inf")), Reason.INVALID_VALUE),
    ("-infinite value", record(value=float("-inf")), Reason.INVALID_VALUE),
    ("value text", record(value="n/a"), Reason.INVALID_VALUE),
    ("unknown magnitude", record(magnitude="XYZ"), Reason.UNKNOWN_MAGNITUDE),
    ("lower-case magnitude", record(magnitude="aei"), Reason.UNKNOWN_MAGNITUDE),
    ("empty magnitude", record(magnitude=""), Reason.UNKNOWN_MAGNITUDE),
    ("empty period", record(period=""), Reason.PERIOD_OUT_OF_RANGE),
    ("month 13", record(measure_date="2026-13-01"), Reason.INVALID_DATE),
    ("30 February", record(measure_date="2026-02-30"), Reason.INVALID_DATE),
    ("day first", record(measure_date="20/11/2026"), Reason.INVALID_DATE),
    ("date and time", record(measure_date="2026-11-20T00:00:00Z"), Reason.INVALID_DATE),
    ("ts words", record(ts="yesterday"), Reason.INVALID_TS),
    ("hour 25", record(ts="2026-11-20T25:00:00Z"), Reason.INVALID_TS),
    ("ts without offset", record(ts="2026-11-20T09:15:00"), Reason.INVALID_TS),
    # Several problems: the first in REASONS order wins.
    ("missing and bad period", json.dumps({"meter": "UY1", "period": 0}), Reason.MISSING_FIELD),
    ("bad period and value", record(period=0, value=-1), Reason.PERIOD_OUT_OF_RANGE),
    ("bad value and magnitude", record(value=-1, magnitude="X"), Reason.INVALID_VALUE),
    ("bad magnitude and date", record(magnitude="X", measure_date="x"), Reason.UNKNOWN_MAGNITUDE),
    ("bad date and ts", record(measure_date="x", ts="x"), Reason.INVALID_DATE),
    # Where the typed read of the JSON gives way to the read as text: each must still decide alike.
    ("meter sent as a number", record(meter=123), None),
    ("integer value beyond 64 bits", record(value=10**30), None),
    ("period beyond 32 bits", record(period=2**40), Reason.PERIOD_OUT_OF_RANGE),
    ("NaN sent as text", record(value="NaN"), Reason.INVALID_VALUE),
    ("value an object", record(value={"kWh": 1.5}), Reason.INVALID_VALUE),
]


@pytest.fixture(scope="module")
def classified(spark: SparkSession) -> dict[int, dict[str, Any]]:
    """Every case classified in one Spark job, by row id (the Kafka offset)."""
    frame = kafka_frame(spark, [raw for _, raw, _ in CASES])
    rows = classify(parse(frame)).withColumn("ts_micros", F.unix_micros("ts")).collect()
    return {row["kafka_offset"]: row.asDict() for row in rows}


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=[c[0] for c in CASES])
def test_each_case_gets_its_reason(
    classified: dict[int, dict[str, Any]], index: int, case: tuple[str, str, Reason | None]
) -> None:
    _name, raw, reason = case
    row = classified[index]
    assert row["reason"] == (reason.value if reason else None)
    assert row["raw_value"] == raw


def test_a_good_row_is_typed(classified: dict[int, dict[str, Any]]) -> None:
    row = classified[0]
    assert row["meter"] == "UY000123"
    assert row["measure_date"] == dt.date(2026, 11, 20)
    assert row["period"] == 37
    assert row["magnitude"] == "AEI"
    assert row["value"] == pytest.approx(1.234)
    assert row["ts_micros"] == int(GOOD_TS.timestamp()) * 1_000_000
    assert row["raw_key"] == "UY000001"
    assert (row["kafka_topic"], row["kafka_partition"], row["kafka_offset"]) == ("measure", 0, 0)
    offset_row = classified[3]  # 06:15:00.5 at -03:00 is 09:15:00.5 UTC
    assert offset_row["ts_micros"] == int(GOOD_TS.timestamp()) * 1_000_000 + 500_000


def test_every_simulator_malformed_record_is_rejected_for_its_reason(spark: SparkSession) -> None:
    cases = [(r, v, malformed_value(r, GOOD, v)) for r in REASONS for v in range(4)]
    frame = kafka_frame(spark, [raw for *_, raw in cases])
    rows = {r["kafka_offset"]: r["reason"] for r in classify(parse(frame)).collect()}
    got = [(reason, variant, rows[i]) for i, (reason, variant, _) in enumerate(cases)]
    assert got == [(reason, variant, reason.value) for reason, variant, _ in cases]


def test_every_generated_measure_is_valid(spark: SparkSession) -> None:
    messages = list(generate_day(3, dt.date(2026, 11, 20), seed=7))
    valid, invalid = split_valid_invalid(parse(kafka_frame(spark, [v for _, v in messages])))
    assert invalid.count() == 0
    assert valid.select("meter", "period", "magnitude").distinct().count() == 3 * 96 * 4


def test_split_columns_and_types(spark: SparkSession) -> None:
    valid, invalid = split_valid_invalid(parse(kafka_frame(spark, [record(), "nope"])))
    assert [(f.name, f.dataType) for f in valid.schema] == [
        (f.name, f.dataType) for f in VALID_SCHEMA
    ]
    assert [(f.name, f.dataType) for f in invalid.schema] == [
        (f.name, f.dataType) for f in QUARANTINE_SCHEMA
    ]
    (bad,) = invalid.collect()
    assert bad["raw_value"] == "nope"
    assert bad["reason"] == "malformed_json"
    assert (bad["kafka_topic"], bad["kafka_partition"], bad["kafka_offset"]) == ("measure", 0, 1)
    assert bad["kafka_timestamp"] is not None and bad["ingested_at"] is not None


def _latest(df: DataFrame) -> dict[tuple[str, int, str], tuple[float, int, int]]:
    return {
        (r["meter"], r["period"], r["magnitude"]): (
            r["value"],
            r["kafka_partition"],
            r["kafka_offset"],
        )
        for r in dedupe_latest(df).collect()
    }


def test_duplicates_collapse_to_the_newest_ts(spark: SparkSession) -> None:
    values = [
        record(value=1.0, ts="2026-11-20T09:15:00Z"),
        record(value=3.0, ts="2026-11-20T11:00:00Z"),  # newest, although not the last offset
        record(value=2.0, ts="2026-11-20T10:00:00Z"),
        record(value=9.0, period=38, ts="2026-11-20T09:30:00Z"),
    ]
    valid, _ = split_valid_invalid(parse(kafka_frame(spark, values)))
    assert _latest(valid) == {
        ("UY000123", 37, "AEI"): (3.0, 0, 1),
        ("UY000123", 38, "AEI"): (9.0, 0, 3),
    }


def test_equal_ts_keeps_the_highest_offset_then_partition(spark: SparkSession) -> None:
    same_ts = [record(value=float(i)) for i in range(4)]
    frame = kafka_frame(spark, same_ts, partitions=[0, 0, 1, 0], offsets=[50, 70, 10, 60])
    valid, _ = split_valid_invalid(parse(frame))
    assert _latest(valid) == {("UY000123", 37, "AEI"): (2.0, 1, 10)}
    frame = kafka_frame(spark, same_ts, partitions=[0, 0, 0, 0], offsets=[50, 70, 10, 60])
    valid, _ = split_valid_invalid(parse(frame))
    assert _latest(valid) == {("UY000123", 37, "AEI"): (1.0, 0, 70)}


def test_process_a_mixed_batch(spark: SparkSession) -> None:
    values = [
        record(),
        record(value=5.0, ts="2026-11-20T09:20:00Z"),  # correction of the first
        record(magnitude="REI"),
        record(period=0),
        "{broken",
        None,  # a tombstone
        record(ts="soon"),
    ]
    valid, invalid = process(kafka_frame(spark, values))
    assert sorted((r["magnitude"], r["value"]) for r in valid.collect()) == [
        ("AEI", 5.0),
        ("REI", 1.234),
    ]
    assert sorted((r["kafka_offset"], r["reason"]) for r in invalid.collect()) == [
        (3, "period_out_of_range"),
        (4, "malformed_json"),
        (5, "malformed_json"),
        (6, "invalid_ts"),
    ]
    assert tuple(valid.columns) == VALID_COLUMNS


def test_ingested_at_is_the_batch_time_and_leaves_the_generated_code_alone(
    spark: SparkSession,
) -> None:
    # Cached, so that Spark compiles the query instead of evaluating it on the local rows.
    classified = classify(parse(kafka_frame(spark, [record(), "nope"]).persist()))
    first, second = (dt.datetime(2026, 11, 20, 9, m, tzinfo=dt.UTC) for m in (15, 30))

    def stamped(at: Column) -> tuple[list[int], str]:
        valid, invalid = split_classified(classified, at)
        stamps = [df.select(F.unix_micros("ingested_at")).collect() for df in (valid, invalid)]
        micros = [row[0] for rows in stamps for row in rows]
        debug = spark.sparkContext._jvm.org.apache.spark.sql.execution.debug.package
        code = debug.codegenString(valid._jdf.queryExecution().executedPlan())
        generated = code.partition("Generated code:")[2]  # after the plan, which names values
        return micros, re.sub(r"/\*.*?\*/|//[^\n]*", "", generated)

    spark.conf.set("spark.sql.codegen.wholeStage", "true")  # off for the rest of this folder
    try:
        (micros, code), (_, later) = stamped(ingested_at(first)), stamped(ingested_at(second))
        # A plain literal is what made each batch's code new:
        literal, later_literal = stamped(F.lit(first))[1], stamped(F.lit(second))[1]
    finally:
        spark.conf.set("spark.sql.codegen.wholeStage", "false")
    assert micros == [int(first.timestamp() * 1_000_000)] * 2
    assert "processNext" in code and code == later
    assert literal != later_literal


def test_slim_keeps_the_message_on_rejected_rows_only(spark: SparkSession) -> None:
    classified = classify(parse(kafka_frame(spark, [record(), "{broken"])))
    slimmed = slim(classified)
    assert slimmed.schema == classified.schema
    valid, invalid = split_classified(slimmed)
    assert [r["value"] for r in valid.collect()] == [1.234]
    [rejected] = invalid.collect()
    assert (rejected["raw_value"], rejected["raw_key"], rejected["kafka_topic"]) == (
        "{broken",
        "UY000001",
        "measure",
    )
    assert rejected["kafka_timestamp"] is not None
    kept = slimmed.where(F.col("reason").isNull()).collect()
    assert [
        (r["raw_value"], r["raw_key"], r["kafka_topic"], r["kafka_timestamp"]) for r in kept
    ] == [(None, None, None, None)]


def test_observed_counts_per_reason(spark: SparkSession) -> None:
    values = [record(), record(period=0), record(period=99), "x", record(ts="2026-11-20T10:00:00Z")]
    observation = Observation("batch")
    classify(parse(kafka_frame(spark, values))).observe(observation, *observe_exprs()).count()
    got = observation.get
    assert got[OBSERVED_ROWS] == 5
    assert got[OBSERVED_VALID] == 2
    assert {r.value: got[r.value] for r in REASONS} == {
        **{r.value: 0 for r in REASONS},
        "period_out_of_range": 2,
        "malformed_json": 1,
    }
    assert got[OBSERVED_NEWEST_TS] == dt.datetime(2026, 11, 20, 10, tzinfo=dt.UTC).timestamp()


def test_input_columns_match_the_kafka_source(spark: SparkSession) -> None:
    assert tuple(kafka_frame(spark, [record()]).columns) == KAFKA_SOURCE_COLUMNS
