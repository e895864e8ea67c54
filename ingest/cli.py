"""`vigia-ingest`: the Kafka → Parquet job (`run`), the per-day check (`completeness`) and the
repair of a day found short (`repair`).

    vigia-ingest run --bootstrap-servers HOST:9092 --output PATH --quarantine PATH --checkpoint PATH
    vigia-ingest completeness --date 2026-11-20 --output PATH --manifest manifest.json
    vigia-ingest repair --date 2026-11-20 --output PATH --hes-dsn DSN   (+ VIGIA_HES_SIGNAL_DSN)

Exit codes: 0 done; 1 the job failed (one sentence logged: unreachable cluster, missing topic,
unwritable path, data loss), the day is incomplete, or still short after a repair; 2 invalid
configuration or input.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from vigia.common.logs import setup_logging
from vigia.ingest.config import ConfigError, add_run_arguments, config_from_args

log = logging.getLogger("vigia-ingest")

EXIT_INVALID = 2
DESCRIPTION = "Kafka → Parquet ingest of smart-meter measures, per-day completeness and repair."


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    from vigia.ingest.completeness import add_completeness_arguments
    from vigia.ingest.repair_cli import add_repair_arguments

    parser = _OneLineParser(prog="vigia-ingest", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    add_run_arguments(
        commands.add_parser(
            "run", help="ingest the topic into Parquet (streaming or available-now)"
        )
    )
    completeness = commands.add_parser(
        "completeness", help="report expected, stored and missing measures for one day"
    )
    add_completeness_arguments(completeness)
    completeness.add_argument("--log-level", default=os.environ.get("VIGIA_LOG_LEVEL", "INFO"))
    add_repair_arguments(
        commands.add_parser(
            "repair", help="bring a day found short back from the HES through the connector"
        )
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            config = config_from_args(args, os.environ)
            setup_logging(config.log_level)
        else:
            setup_logging(args.log_level)
    except ConfigError as exc:
        sys.stderr.write(f"vigia-ingest: {exc}\n")
        return EXIT_INVALID

    if args.command == "run":
        from vigia.ingest.job import run_job

        return run_job(config)

    if args.command == "repair":
        from vigia.ingest.repair_cli import main_repair

        return main_repair(args)

    from vigia.ingest.completeness import main_completeness

    return main_completeness(args)


if __name__ == "__main__":
    sys.exit(main())
