"""``vigia-ingest repair --date D``: the adapters of `ingest.repair` (Spark, the HES, Kafka
Connect) and its arguments.

    add_repair_arguments(parser)      --date, --output, --hes-dsn, --signal-dsn-file,
                                      --connect-url, --connector, --timeout, --poll-interval,
                                      --force, --sample-size, --log-level
    main_repair(args, spark=None)     exit 0 repaired (or complete already), 1 still short,
                                      2 invalid input; the last report as JSON on stdout

The signalling user's DSN comes from the environment (VIGIA_HES_SIGNAL_DSN) or a file
(--signal-dsn-file), never from the command line, where ``ps`` would show its password.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Final

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from tqdm import tqdm

from vigia.common.hes import DsnError, parse_dsn
from vigia.ingest.completeness import (
    DEFAULT_SAMPLE_SIZE,
    CompletenessReport,
    InputError,
    against_source,
    hes_day_keys,
)
from vigia.ingest.repair import (
    EXIT_INVALID,
    EXIT_REPAIRED,
    EXIT_STILL_SHORT,
    Action,
    decide,
    explain,
    outcome,
    snapshot_signal,
    wait_until_repaired,
)
from vigia.ingest.repair_io import RepairIoError, send_signal, signal_table
from vigia.ingest.spark_session import start_session

log = logging.getLogger(__name__)

DEFAULT_CONNECT_URL: Final = "http://127.0.0.1:8083"
DEFAULT_CONNECTOR: Final = "hes-measure"
DEFAULT_TIMEOUT: Final = 10800.0
DEFAULT_POLL_INTERVAL: Final = 15.0
SIGNAL_DSN_ENV: Final = "VIGIA_HES_SIGNAL_DSN"


def add_repair_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument("--date", required=True, help="measure date to repair, YYYY-MM-DD")
    parser.add_argument(
        "--output",
        default=env("VIGIA_INGEST_OUTPUT"),
        help="Parquet root the job writes to (env VIGIA_INGEST_OUTPUT)",
    )
    parser.add_argument(
        "--hes-dsn",
        default=env("VIGIA_HES_DSN"),
        help="the HES, read-only, to compare the day with, as for `vigia-ingest completeness`: "
        "mysql://user:password@host:3306/hes (env VIGIA_HES_DSN)",
    )
    parser.add_argument(
        "--signal-dsn-file",
        type=Path,
        default=env("VIGIA_HES_SIGNAL_DSN_FILE"),
        help="file holding the DSN of the HES user allowed to INSERT into the signalling table "
        f"(env VIGIA_HES_SIGNAL_DSN_FILE; or the DSN itself in env {SIGNAL_DSN_ENV})",
    )
    parser.add_argument(
        "--connect-url",
        default=env("VIGIA_CONNECT_URL", DEFAULT_CONNECT_URL),
        help=f"Kafka Connect's REST API (env VIGIA_CONNECT_URL, default {DEFAULT_CONNECT_URL})",
    )
    parser.add_argument(
        "--connector",
        default=env("VIGIA_CONNECTOR", DEFAULT_CONNECTOR),
        help=f"the HES connector (env VIGIA_CONNECTOR, default {DEFAULT_CONNECTOR})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=float(env("VIGIA_REPAIR_TIMEOUT", DEFAULT_TIMEOUT)),
        help="seconds to wait for the day to be complete (env VIGIA_REPAIR_TIMEOUT, default "
        f"{DEFAULT_TIMEOUT:g}: a day of 20,000 meters takes about 21 min on 2 cores; a run that "
        "gives up must be run again, and that re-reads the whole day)",
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=float(env("VIGIA_REPAIR_POLL_INTERVAL", DEFAULT_POLL_INTERVAL)),
        help="seconds between two completeness checks while waiting "
        f"(env VIGIA_REPAIR_POLL_INTERVAL, default {DEFAULT_POLL_INTERVAL:g})",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="send the signal even when the day looks complete",
    )
    parser.add_argument(
        "--sample-size",
        type=int,
        default=DEFAULT_SAMPLE_SIZE,
        help=f"missing measures listed in the report (default {DEFAULT_SAMPLE_SIZE})",
    )
    parser.add_argument(
        "--log-level",
        default=env("VIGIA_LOG_LEVEL", "INFO"),
        help="DEBUG, INFO, WARNING or ERROR (env VIGIA_LOG_LEVEL, default INFO)",
    )


def signal_dsn_text(args: argparse.Namespace, environ: dict[str, str]) -> str:
    """The signalling user's DSN: from --signal-dsn-file, else the environment."""
    if args.signal_dsn_file is not None:
        try:
            return Path(args.signal_dsn_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InputError(f"cannot read --signal-dsn-file: {exc.strerror}") from exc
    if text := environ.get(SIGNAL_DSN_ENV, "").strip():
        return text
    raise InputError(
        f"no DSN to send the signal with: set {SIGNAL_DSN_ENV} or give --signal-dsn-file"
    )


class _Progress:
    """A progress bar over the measures the day missed when the repair began (on a terminal)."""

    def __init__(self, missing: int) -> None:
        self._start = missing
        self._bar = tqdm(total=missing, desc="restored", unit="measure", disable=None)
        self._seen_progress = False

    def __call__(self, report: CompletenessReport) -> None:
        restored = max(0, self._start - report.missing)
        self._bar.update(restored - self._bar.n)
        if restored and not self._seen_progress:
            self._seen_progress = True
            log.info("measures arriving: %d of %d restored", restored, self._start)

    def close(self) -> None:
        self._bar.close()


def main_repair(args: argparse.Namespace, spark: SparkSession | None = None) -> int:
    try:
        measure_date = dt.date.fromisoformat(args.date)
    except ValueError:
        log.error("--date %r is not a date written YYYY-MM-DD", args.date)
        return EXIT_INVALID
    if not args.output:
        log.error("--output (or VIGIA_INGEST_OUTPUT) is required")
        return EXIT_INVALID
    if not args.hes_dsn:
        log.error("--hes-dsn (or VIGIA_HES_DSN) is required: the HES says what the day holds")
        return EXIT_INVALID
    try:
        keys = hes_day_keys(args.hes_dsn, measure_date)
        signal_dsn = parse_dsn(signal_dsn_text(args, dict(os.environ)))
    except DsnError as exc:
        log.error("signal DSN: %s", exc)
        return EXIT_INVALID
    except InputError as exc:
        log.error("%s", exc)
        return EXIT_INVALID

    session = spark or start_session("vigia-repair", {})
    try:

        def check(sample_size: int = 0) -> CompletenessReport:
            return against_source(session, args.output, measure_date, keys, sample_size)

        try:
            before = check(args.sample_size)
        except AnalysisException as exc:
            log.error("cannot read %s: %s", args.output, str(exc).splitlines()[0])
            return EXIT_INVALID
        action = decide(before, args.force)
        log.info("before the repair: %s", before.summary())
        if action is not Action.REPAIR:
            sys.stdout.write(json.dumps(before.to_json()) + "\n")
            if action is Action.NOTHING_TO_DO:
                log.info("%s", explain(action, before))
                return EXIT_REPAIRED
            log.error("%s", explain(action, before))
            return EXIT_INVALID if action is Action.NOTHING_IN_HES else EXIT_STILL_SHORT
        try:
            table = signal_table(args.connect_url, args.connector)
            signal = snapshot_signal(measure_date)
            send_signal(signal_dsn, table, signal)
        except RepairIoError as exc:
            log.error("%s", exc)
            return EXIT_STILL_SHORT
        log.info(
            "signal %s sent to %s through %s: the connector re-reads %s from the HES",
            signal.id,
            args.connector,
            table,
            measure_date,
        )
        progress = _Progress(before.missing)
        last = [before]

        def poll() -> CompletenessReport:
            # The job publishes files while this reads: a failed read is tried at the next poll.
            try:
                last[0] = check()
            except (AnalysisException, Py4JJavaError) as exc:
                log.warning("completeness check failed, trying again: %s", str(exc).splitlines()[0])
            return last[0]

        try:
            waited = wait_until_repaired(poll, args.timeout, args.poll_interval, progress)
        finally:
            progress.close()
        after = check(args.sample_size)
    finally:
        if spark is None:
            session.stop()
    sys.stdout.write(json.dumps(after.to_json()) + "\n")
    code, sentence = outcome(replace(waited, report=after), args.timeout)
    if code == EXIT_REPAIRED:
        log.info("%s", sentence)
    else:
        log.warning("%s", sentence)
    return code
