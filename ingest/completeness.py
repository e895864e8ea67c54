"""Is a day complete? Expected measures (meters × 96 periods × magnitudes) against what is stored.

The stored layout is the job's Parquet output, partitioned by measure date
(``<output>/measure_date=YYYY-MM-DD/…``); the meter list comes from the simulator's manifest or from
a meters file (one id per line, blank lines and ``#`` comments ignored).

With ``--hes-dsn`` the expected keys are the source's instead: every (meter, period, magnitude) the
HES database holds for the day (`against_source`), so a row the HES has and the store lacks is
found whatever lost it (a connector that skipped binlog events, a dropped message).

A day with missing measures is checked against the ranges the job recorded skipping because Kafka
had deleted them (``<output>/_vigia_losses/``, written with ``--no-fail-on-data-loss``): the report
names the losses that may hold the day's measures and how many of the missing they can
account for (`ingest.retention_loss`), and the log says the day lost measures to retention.

Entry point for ``vigia-ingest completeness`` (ingest/cli.py)::

    add_completeness_arguments(parser: argparse.ArgumentParser) -> None
        # --date (required), --output, --manifest | --meters-file | --hes-dsn, --sample-size (20)
        # defaults from VIGIA_INGEST_OUTPUT, VIGIA_INGEST_MANIFEST, VIGIA_INGEST_METERS_FILE,
        # VIGIA_HES_DSN
    main_completeness(args: argparse.Namespace, spark: SparkSession | None = None) -> int
        # writes the report as one JSON object on stdout, logs a summary line;
        # exit 0 complete (nothing missing, no duplicates), 1 incomplete, 2 invalid input

The comparison is pure (`summarise_keys`, `build_report`); only `read_stored_day` touches Spark, and
it aggregates in Spark so a 300 M-row day never comes to the driver: only totals and a bounded
sample of incomplete (meter, magnitude) pairs are collected.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from vigia.ingest.loss_log import loss_dir, read_losses
from vigia.ingest.retention_loss import RetentionLoss, day_loss
from vigia.ingest.schema import MAGNITUDES, PERIODS, PERIODS_PER_DAY
from vigia.ingest.simulator.manifest import load_manifest
from vigia.ingest.spark_session import start_session

log = logging.getLogger(__name__)

DEFAULT_SAMPLE_SIZE: Final = 20
EXIT_COMPLETE: Final = 0
EXIT_INCOMPLETE: Final = 1
EXIT_INVALID: Final = 2


class MeasureKey(NamedTuple):
    meter: str
    measure_date: dt.date
    period: int
    magnitude: str


@dataclass(frozen=True)
class StoredDay:
    """What is stored for one day, reduced to what the comparison needs."""

    rows: int
    """Rows stored for the day."""
    distinct: int
    """Distinct (meter, period, magnitude) stored for the day."""
    distinct_expected: int
    """Of those, how many are expected (known meter and magnitude, period in 1..96)."""
    incomplete: tuple[tuple[str, str, frozenset[int]], ...] = ()
    """Some expected (meter, magnitude) pairs with fewer than 96 periods stored, with the periods
    that are stored (empty when the pair has none); bounded by the caller's sample size."""


@dataclass(frozen=True)
class CompletenessReport:
    measure_date: dt.date
    meters: int
    magnitudes: tuple[str, ...]
    expected: int
    stored_rows: int
    distinct_stored: int
    missing: int
    duplicates: int
    """Stored rows beyond the first for the same key (a key written twice)."""
    unexpected: int
    """Distinct stored keys outside the expected set (unknown meter or magnitude)."""
    missing_sample: tuple[MeasureKey, ...] = field(default=())
    expected_from: str = "meters"
    """What says which keys a day should hold: "meters" (every meter × 96 × magnitudes, from a
    manifest or a meters file) or "hes" (the keys the HES database holds for the day)."""
    lost_to_retention: int = 0
    """Missing measures Kafka may have deleted before the job read them: at most the offsets of
    `retention_losses` (`vigia.ingest.retention_loss`)."""
    retention_losses: tuple[RetentionLoss, ...] = ()
    """The ranges the job recorded skipping (``--no-fail-on-data-loss``) that may hold the day."""

    @property
    def complete(self) -> bool:
        return self.missing == 0 and self.duplicates == 0

    def summary(self) -> str:
        return (
            f"{self.measure_date}: {self.expected:,} expected, {self.distinct_stored:,} distinct "
            f"stored, {self.missing:,} missing, {self.duplicates:,} duplicates, "
            f"{self.unexpected:,} unexpected"
            + (
                f"; up to {self.lost_to_retention:,} of the missing deleted unread by Kafka "
                "retention"
                if self.lost_to_retention
                else ""
            )
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["measure_date"] = self.measure_date.isoformat()
        data["magnitudes"] = list(self.magnitudes)
        data["missing_sample"] = [
            {"meter": k.meter, "period": k.period, "magnitude": k.magnitude}
            for k in self.missing_sample
        ]
        data["retention_losses"] = [loss.to_json() for loss in self.retention_losses]
        data["complete"] = self.complete
        return data


def expected_keys(
    meters: Iterable[str], measure_date: dt.date, magnitudes: Sequence[str] = MAGNITUDES
) -> Iterator[MeasureKey]:
    """Every measure a day should have, meter by meter, period by period."""
    for meter in meters:
        for period in PERIODS:
            for magnitude in magnitudes:
                yield MeasureKey(meter, measure_date, period, magnitude)


def summarise_keys(
    stored: Iterable[MeasureKey],
    measure_date: dt.date,
    meters: Sequence[str],
    magnitudes: Sequence[str] = MAGNITUDES,
    sample_groups: int = DEFAULT_SAMPLE_SIZE,
) -> StoredDay:
    """`read_stored_day` for keys already in memory (tests, small checks)."""
    counts = Counter(
        (k.meter, k.period, k.magnitude) for k in stored if k.measure_date == measure_date
    )
    known_meters, known_magnitudes = set(meters), set(magnitudes)
    periods: dict[tuple[str, str], set[int]] = defaultdict(set)
    for meter, period, magnitude in counts:
        if meter in known_meters and magnitude in known_magnitudes and period in PERIODS:
            periods[(meter, magnitude)].add(period)
    incomplete: list[tuple[str, str, frozenset[int]]] = []
    for meter in meters:
        for magnitude in magnitudes:
            stored_periods = periods.get((meter, magnitude), set())
            if len(stored_periods) < PERIODS_PER_DAY and len(incomplete) < sample_groups:
                incomplete.append((meter, magnitude, frozenset(stored_periods)))
    return StoredDay(
        rows=sum(counts.values()),
        distinct=len(counts),
        distinct_expected=sum(len(p) for p in periods.values()),
        incomplete=tuple(incomplete),
    )


def build_report(
    measure_date: dt.date,
    meters: int,
    magnitudes: Sequence[str],
    stored: StoredDay,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
) -> CompletenessReport:
    expected = meters * PERIODS_PER_DAY * len(magnitudes)
    sample: list[MeasureKey] = []
    for meter, magnitude, stored_periods in sorted(stored.incomplete, key=lambda g: g[:2]):
        for period in PERIODS:
            if len(sample) >= sample_size:
                break
            if period not in stored_periods:
                sample.append(MeasureKey(meter, measure_date, period, magnitude))
    return CompletenessReport(
        measure_date=measure_date,
        meters=meters,
        magnitudes=tuple(magnitudes),
        expected=expected,
        stored_rows=stored.rows,
        distinct_stored=stored.distinct,
        missing=expected - stored.distinct_expected,
        duplicates=stored.rows - stored.distinct,
        unexpected=stored.distinct - stored.distinct_expected,
        missing_sample=tuple(sample),
    )


def read_stored_day(
    spark: SparkSession,
    output: str,
    measure_date: dt.date,
    meters: Sequence[str],
    magnitudes: Sequence[str] = MAGNITUDES,
    sample_groups: int = DEFAULT_SAMPLE_SIZE,
) -> StoredDay:
    """Aggregate one day of the Parquet output in Spark.

    Reads the output root, not the day's folder, and lets partition pruning keep one day: Spark's
    reader then skips `_`-prefixed entries (the sink's staging) and honours a file sink's
    `_spark_metadata` log when there is one.
    """
    day = (
        spark.read.schema("meter string, period int, magnitude string, measure_date date")
        .parquet(output)
        .where(F.col("measure_date") == F.lit(measure_date))
    )
    known = spark.createDataFrame(pa.table({"meter": pa.array(list(meters), pa.string())}))
    known = known.withColumn("_known", F.lit(True))
    keys = (
        day.groupBy("meter", "period", "magnitude")
        .agg(F.count(F.lit(1)).alias("rows"))
        .join(F.broadcast(known), "meter", "left")
        .withColumn(
            "expected",
            F.col("_known").isNotNull()
            & F.col("magnitude").isin(*magnitudes)
            & F.col("period").between(PERIODS[0], PERIODS[-1]),
        )
        .cache()
    )
    try:
        totals = keys.agg(
            F.coalesce(F.sum("rows"), F.lit(0)).alias("rows"),
            F.count(F.lit(1)).alias("distinct"),
            F.count_if("expected").alias("distinct_expected"),
        ).first()
        assert totals is not None  # a global aggregate always has one row
        expected_total = len(meters) * PERIODS_PER_DAY * len(magnitudes)
        incomplete: tuple[tuple[str, str, frozenset[int]], ...] = ()
        if totals["distinct_expected"] < expected_total and sample_groups > 0:
            groups = (
                keys.where("expected")
                .groupBy("meter", "magnitude")
                .agg(F.collect_set("period").alias("periods"))
            )
            pairs = known.select("meter").crossJoin(
                spark.createDataFrame([(m,) for m in magnitudes], "magnitude string")
            )
            rows = (
                pairs.join(groups, ["meter", "magnitude"], "left")
                .where(F.col("periods").isNull() | (F.size("periods") < PERIODS_PER_DAY))
                .orderBy("meter", "magnitude")
                .limit(sample_groups)
                .collect()
            )
            incomplete = tuple(
                (r["meter"], r["magnitude"], frozenset(r["periods"] or ())) for r in rows
            )
        return StoredDay(
            rows=int(totals["rows"]),
            distinct=int(totals["distinct"]),
            distinct_expected=int(totals["distinct_expected"]),
            incomplete=incomplete,
        )
    finally:
        keys.unpersist()


_KEY_COLUMNS: Final = ["meter", "period", "magnitude"]


def against_source(
    spark: SparkSession,
    output: str,
    measure_date: dt.date,
    source_keys: pa.Table,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
) -> CompletenessReport:
    """The stored day against the keys the HES holds for it (`ingest.hes_source.day_keys`):
    missing = in the HES, not stored; unexpected = stored, not in the HES. Aggregated in Spark;
    only totals and the sample come back to the driver."""
    source = spark.createDataFrame(source_keys)
    stored = (
        spark.read.schema("meter string, period int, magnitude string, measure_date date")
        .parquet(output)
        .where(F.col("measure_date") == F.lit(measure_date))
        .groupBy(*_KEY_COLUMNS)
        .agg(F.count(F.lit(1)).alias("rows"))
        .cache()
    )
    try:
        totals = stored.agg(
            F.coalesce(F.sum("rows"), F.lit(0)).alias("rows"), F.count(F.lit(1)).alias("distinct")
        ).first()
        assert totals is not None  # a global aggregate always has one row
        missing = source.join(stored, _KEY_COLUMNS, "left_anti")
        sample = missing.orderBy(*_KEY_COLUMNS).limit(sample_size).collect() if sample_size else []
        report = CompletenessReport(
            measure_date=measure_date,
            meters=len(pc.unique(source_keys["meter"])),
            magnitudes=tuple(sorted(pc.unique(source_keys["magnitude"]).to_pylist())),
            expected=source_keys.num_rows,
            stored_rows=int(totals["rows"]),
            distinct_stored=int(totals["distinct"]),
            missing=missing.count(),
            duplicates=int(totals["rows"]) - int(totals["distinct"]),
            unexpected=stored.join(source, _KEY_COLUMNS, "left_anti").count(),
            missing_sample=tuple(
                MeasureKey(r["meter"], measure_date, r["period"], r["magnitude"]) for r in sample
            ),
            expected_from="hes",
        )
    finally:
        stored.unpersist()
    return report


def completeness_report(
    spark: SparkSession,
    output: str,
    measure_date: dt.date,
    meters: Sequence[str],
    magnitudes: Sequence[str] = MAGNITUDES,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
) -> CompletenessReport:
    stored = read_stored_day(spark, output, measure_date, meters, magnitudes, sample_size)
    return build_report(measure_date, len(meters), magnitudes, stored, sample_size)


def with_retention_losses(
    report: CompletenessReport, losses: Sequence[RetentionLoss]
) -> CompletenessReport:
    """The report with what the job's recorded losses may explain of its missing measures."""
    if not report.missing:
        return report
    found = day_loss(report.measure_date, report.missing, losses)
    return replace(report, lost_to_retention=found.at_most, retention_losses=found.losses)


class InputError(ValueError):
    """Bad arguments or unreadable meter list: exit code 2."""


def load_meters(manifest: str | None = None, meters_file: str | None = None) -> list[str]:
    """The meter ids from a simulator manifest or a meters file (exactly one of them)."""
    if (manifest is None) == (meters_file is None):
        raise InputError("give exactly one of --manifest and --meters-file")
    if manifest is not None:
        try:
            return load_manifest(manifest).meters.ids()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"cannot read manifest {manifest}: {exc}") from exc
    assert meters_file is not None
    try:
        lines = Path(meters_file).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read meters file {meters_file}: {exc.strerror}") from exc
    meters = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    if not meters:
        raise InputError(f"meters file {meters_file} lists no meter")
    if len(set(meters)) != len(meters):
        raise InputError(f"meters file {meters_file} lists a meter twice")
    return meters


def add_completeness_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument("--date", required=True, help="measure date to check, YYYY-MM-DD")
    parser.add_argument(
        "--output",
        default=env("VIGIA_INGEST_OUTPUT"),
        help="Parquet root the job writes to (env VIGIA_INGEST_OUTPUT)",
    )
    meters = parser.add_mutually_exclusive_group()
    meters.add_argument(
        "--manifest",
        default=env("VIGIA_INGEST_MANIFEST"),
        help="simulator manifest giving the meters (env VIGIA_INGEST_MANIFEST)",
    )
    meters.add_argument(
        "--meters-file",
        default=env("VIGIA_INGEST_METERS_FILE"),
        help="file with one meter id per line (env VIGIA_INGEST_METERS_FILE)",
    )
    meters.add_argument(
        "--hes-dsn",
        default=env("VIGIA_HES_DSN"),
        help="compare with the keys the HES database holds for the day instead of a meter list: "
        "mysql://user:password@host:3306/hes, a read-only user (env VIGIA_HES_DSN)",
    )
    parser.add_argument(
        "--sample-size",
        type=int,
        default=DEFAULT_SAMPLE_SIZE,
        help=f"missing measures listed in the report (default {DEFAULT_SAMPLE_SIZE})",
    )


def hes_day_keys(hes_dsn: str, measure_date: dt.date) -> pa.Table:
    from vigia.common.hes import DsnError, parse_dsn
    from vigia.ingest.hes_source import HesReadError, day_keys

    try:
        dsn = parse_dsn(hes_dsn)
        keys = day_keys(dsn, measure_date)
    except DsnError as exc:
        raise InputError(f"--hes-dsn: {exc}") from exc
    except HesReadError as exc:
        raise InputError(str(exc)) from exc
    log.info("the HES holds %d keys for %s (%s)", keys.num_rows, measure_date, dsn.redacted())
    return keys


def main_completeness(args: argparse.Namespace, spark: SparkSession | None = None) -> int:
    """Run the check; `args` as defined by `add_completeness_arguments`. Without `spark`, starts
    a session (local unless spark.master is configured) and stops it at the end."""
    try:
        measure_date = dt.date.fromisoformat(args.date)
    except ValueError:
        log.error("--date %r is not a date written YYYY-MM-DD", args.date)
        return EXIT_INVALID
    if not args.output:
        log.error("--output (or VIGIA_INGEST_OUTPUT) is required")
        return EXIT_INVALID
    sample_size = int(getattr(args, "sample_size", DEFAULT_SAMPLE_SIZE))
    hes_dsn = getattr(args, "hes_dsn", None)
    source_keys: pa.Table | None = None
    meters: list[str] = []
    try:
        if hes_dsn:
            source_keys = hes_day_keys(hes_dsn, measure_date)
        else:
            meters = load_meters(args.manifest, args.meters_file)
    except InputError as exc:
        log.error("%s", exc)
        return EXIT_INVALID

    own_session = spark is None
    session = spark or start_session("vigia-completeness", {})
    try:
        if source_keys is not None:
            report = against_source(session, args.output, measure_date, source_keys, sample_size)
        else:
            report = completeness_report(
                session, args.output, measure_date, meters, sample_size=sample_size
            )
    except AnalysisException as exc:
        log.error("cannot read %s: %s", args.output, str(exc).splitlines()[0])
        return EXIT_INVALID
    finally:
        if own_session:
            session.stop()
    try:
        report = with_retention_losses(report, read_losses(loss_dir(args.output)))
    except (OSError, ValueError, KeyError) as exc:
        log.error("cannot read the job's loss records in %s: %s", loss_dir(args.output), exc)
        return EXIT_INVALID
    sys.stdout.write(json.dumps(report.to_json()) + "\n")
    if report.lost_to_retention:
        log.warning(
            "%s lost measures to Kafka retention: up to %d of the %d missing were deleted before "
            "the job read them (%s)",
            report.measure_date,
            report.lost_to_retention,
            report.missing,
            "; ".join(loss.describe() for loss in report.retention_losses),
        )
    if report.complete:
        log.info("complete: %s", report.summary())
        return EXIT_COMPLETE
    log.warning("incomplete: %s", report.summary())
    return EXIT_INCOMPLETE
