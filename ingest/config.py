"""`vigia-ingest run` configuration: flags win over VIGIA_* environment variables, which win over
the defaults below. Invalid values raise `ConfigError` (one line; the CLI exits with code 2).

Environment variables are ``VIGIA_INGEST_<FLAG_IN_UPPER_SNAKE>`` (e.g. VIGIA_INGEST_OUTPUT), plus
the shared VIGIA_KAFKA_BOOTSTRAP_SERVERS, VIGIA_KAFKA_OPTIONS and VIGIA_LOG_LEVEL.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vigia.common import kafka_config
from vigia.common.hes import DsnError, parse_dsn
from vigia.common.secret_file import SecretFileError, read_secret
from vigia.common.web_config import WebConfig, WebConfigError
from vigia.common.web_tls import load as load_web_config
from vigia.ingest.deadline import DeadlineRule
from vigia.ingest.kafka_source.offsets import OffsetSpecError, StartingOffsets

SOURCES: Final = ("python-kafka", "spark-kafka")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_TRUE: Final = ("1", "true", "yes", "on")
_FALSE: Final = ("0", "false", "no", "off")
_JVM_SIZE: Final = re.compile(r"[1-9][0-9]*[kmgt]?", re.IGNORECASE)


class ConfigError(ValueError):
    """Invalid configuration; the message is the one line printed before exiting with code 2."""


@dataclass(frozen=True)
class IngestConfig:
    bootstrap_servers: str
    kafka_options: dict[str, str] = field(default_factory=dict)
    topic: str = "measure"
    output: str = "data/measure"
    quarantine: str = "data/quarantine"
    checkpoint: str = "data/checkpoint/ingest"
    trigger_interval: float = 30.0
    # A backlog drains in batches of this size; None reads everything available in one batch.
    max_offsets_per_trigger: int | None = 1_000_000
    available_now: bool = False
    # A first run without a checkpoint reads everything Kafka still holds: no measure is skipped.
    starting_offsets: str = "earliest"
    fail_on_data_loss: bool = True
    group_id: str = "vigia-ingest"
    source: str = "python-kafka"
    metrics_address: str = "127.0.0.1"
    metrics_port: int = 9310
    kafka_timeout: float = 30.0
    spark_master: str | None = None
    driver_memory: str = "2g"
    query_name: str = "vigia-ingest"
    log_level: str = "INFO"
    # Meters the HES reports for: with it, each closed day's completeness ratio is served.
    expected_meters: int | None = None
    # The HES database (read-only user): closed days' completeness against its row counts.
    hes_dsn: str | None = None
    hes_interval: float = 300.0
    # --web.config.file: TLS and basic auth of /metrics (vigia.common.web_config).
    web: WebConfig = field(default_factory=WebConfig)
    # A day's measures are due by this time on the next day, in this zone (the utility's).
    deadline_time: str = "06:00"
    deadline_timezone: str = "UTC"


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; the project convention is one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError(message)


# flag dest -> (environment variable, help). Defaults come from IngestConfig.
_OPTIONS: Final[dict[str, tuple[str, str]]] = {
    "bootstrap_servers": (
        "VIGIA_INGEST_BOOTSTRAP_SERVERS",
        "Kafka bootstrap servers (also env VIGIA_KAFKA_BOOTSTRAP_SERVERS)",
    ),
    "topic": ("VIGIA_INGEST_TOPIC", "topic to ingest"),
    "output": ("VIGIA_INGEST_OUTPUT", "Parquet root for valid measures (path, hdfs:// or s3a://)"),
    "quarantine": ("VIGIA_INGEST_QUARANTINE", "Parquet root for rejected messages"),
    "checkpoint": ("VIGIA_INGEST_CHECKPOINT", "Spark checkpoint directory (offsets, commits)"),
    "trigger_interval": (
        "VIGIA_INGEST_TRIGGER_INTERVAL",
        "time between micro-batches, seconds or a duration like 30s / 1m",
    ),
    "max_offsets_per_trigger": (
        "VIGIA_INGEST_MAX_OFFSETS_PER_TRIGGER",
        "most Kafka offsets one micro-batch reads: a backlog drains in batches of this size",
    ),
    "starting_offsets": (
        "VIGIA_INGEST_STARTING_OFFSETS",
        "where a query without checkpoint starts: earliest, latest or offsets JSON",
    ),
    "group_id": ("VIGIA_INGEST_GROUP_ID", "consumer group the batch end offsets are committed to"),
    "source": ("VIGIA_INGEST_SOURCE", f"Kafka source: {' | '.join(SOURCES)}"),
    "metrics_address": ("VIGIA_INGEST_METRICS_ADDRESS", "address the /metrics server binds"),
    "metrics_port": ("VIGIA_INGEST_METRICS_PORT", "port of the /metrics server (0 disables it)"),
    "kafka_timeout": (
        "VIGIA_INGEST_KAFKA_TIMEOUT",
        "how long a Kafka call may keep failing with retriable errors before the job fails",
    ),
    "spark_master": (
        "VIGIA_INGEST_SPARK_MASTER",
        "Spark master URL (default: spark-submit's, else local[*])",
    ),
    "driver_memory": (
        "VIGIA_INGEST_DRIVER_MEMORY",
        "JVM heap of a local Spark master, where the tasks run (spark-submit's --driver-memory "
        "wins)",
    ),
    "log_level": ("VIGIA_LOG_LEVEL", "logging level"),
    "expected_meters": (
        "VIGIA_INGEST_EXPECTED_METERS",
        "meters the HES reports for; with it /metrics serves each closed day's completeness "
        "ratio (stored ÷ meters × 96 × magnitudes)",
    ),
    "hes_dsn": (
        "VIGIA_HES_DSN",
        "HES database, mysql://user:password@host:3306/hes (read-only user); with it each closed "
        "day's completeness ratio is stored ÷ the HES's rows for that day",
    ),
    "hes_dsn_file": (
        "VIGIA_HES_DSN_FILE",
        "file holding the --hes-dsn, so that its password shows in no process list "
        "(--hes-dsn and VIGIA_HES_DSN win)",
    ),
    "web_config_file": (
        "VIGIA_INGEST_WEB_CONFIG_FILE",
        "Prometheus exporter web configuration file for /metrics: TLS, client certificates, "
        "basic-auth users (docs/security.md; unset: plain HTTP, no authentication)",
    ),
    "hes_interval": (
        "VIGIA_INGEST_HES_INTERVAL",
        "time between two counts of the closed days' rows in the HES, seconds or a duration",
    ),
    "deadline_time": (
        "VIGIA_INGEST_DEADLINE_TIME",
        "a day's measures are due by this time (HH:MM) on the next day: the completeness-by-"
        "deadline counters count the day then",
    ),
    "deadline_timezone": (
        "VIGIA_INGEST_DEADLINE_TIMEZONE",
        "the utility's time zone (IANA name, e.g. America/Montevideo) the deadline is in",
    ),
}


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = IngestConfig(bootstrap_servers="")
    for dest, (env, help_text) in _OPTIONS.items():
        default = getattr(defaults, dest, None)
        shown = f", default {default}" if default not in (None, "") else ""
        parser.add_argument(
            "--" + dest.replace("_", "-"),
            *(("--web.config.file",) if dest == "web_config_file" else ()),
            dest=dest,
            default=None,
            help=f"{help_text} (env {env}{shown})",
        )
    parser.add_argument(
        "--kafka-option",
        dest="kafka_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"librdkafka setting, repeatable (SASL/SSL, ...; env {kafka_config.ENV_VAR})",
    )
    parser.add_argument(
        "--available-now",
        dest="available_now",
        action="store_const",
        const=True,
        default=None,
        help="read everything available, in bounded batches, then exit "
        "(env VIGIA_INGEST_AVAILABLE_NOW)",
    )
    parser.add_argument(
        "--fail-on-data-loss",
        dest="fail_on_data_loss",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="stop when offsets still needed were deleted (retention); otherwise log and skip "
        "them (env VIGIA_INGEST_FAIL_ON_DATA_LOSS, default true)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="vigia-ingest run", description="Kafka → Parquet ingest job.")
    add_run_arguments(parser)
    return parser


def parse_duration(text: str, name: str) -> float:
    match = _DURATION.match(text)
    if not match:
        raise ConfigError(f"{name} {text!r} is not a duration (e.g. 30, 30s, 1m)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _parse_bool(text: str, name: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(f"{name} {text!r} is not true or false")


def _check_starting_offsets(text: str) -> str:
    try:
        StartingOffsets.parse(text)
    except OffsetSpecError as exc:
        raise ConfigError(str(exc)) from None
    return text.lower() if text.lower() in ("earliest", "latest") else text


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> IngestConfig:
    raw: dict[str, str] = {}
    for dest, (env_name, _) in _OPTIONS.items():
        flag = getattr(args, dest)
        value = flag if flag is not None else environ.get(env_name)
        if value is None and dest == "bootstrap_servers":
            value = environ.get("VIGIA_KAFKA_BOOTSTRAP_SERVERS")
        if value is not None and str(value).strip():
            raw[dest] = str(value).strip()

    defaults = IngestConfig(bootstrap_servers="")
    if "bootstrap_servers" not in raw:
        raise ConfigError("--bootstrap-servers (or VIGIA_KAFKA_BOOTSTRAP_SERVERS) is required")
    try:
        kafka_options = kafka_config.merged(args.kafka_option, environ)
    except kafka_config.KafkaOptionError as exc:
        raise ConfigError(str(exc)) from None

    trigger = defaults.trigger_interval
    if "trigger_interval" in raw:
        trigger = parse_duration(raw["trigger_interval"], "trigger interval")
    if trigger <= 0:
        raise ConfigError(f"trigger interval must be positive, got {trigger:g} s")

    kafka_timeout = defaults.kafka_timeout
    if "kafka_timeout" in raw:
        kafka_timeout = parse_duration(raw["kafka_timeout"], "Kafka timeout")
    if kafka_timeout <= 0:
        raise ConfigError(f"Kafka timeout must be positive, got {kafka_timeout:g} s")

    max_offsets = defaults.max_offsets_per_trigger
    if "max_offsets_per_trigger" in raw:
        text = raw["max_offsets_per_trigger"]
        if not text.isdigit() or int(text) <= 0:
            raise ConfigError(f"max offsets per trigger {text!r} is not a positive integer")
        max_offsets = int(text)

    expected_meters: int | None = None
    if "expected_meters" in raw:
        text = raw["expected_meters"]
        if not text.isdigit() or int(text) <= 0:
            raise ConfigError(f"expected meters {text!r} is not a positive integer")
        expected_meters = int(text)

    hes_interval = defaults.hes_interval
    if "hes_interval" in raw:
        hes_interval = parse_duration(raw["hes_interval"], "HES interval")
    if hes_interval <= 0:
        raise ConfigError(f"HES interval must be positive, got {hes_interval:g} s")
    if "hes_dsn" not in raw and "hes_dsn_file" in raw:
        try:
            raw["hes_dsn"] = read_secret(raw["hes_dsn_file"])
        except SecretFileError as exc:
            raise ConfigError(f"--hes-dsn-file: {exc}") from None
    if "hes_dsn" in raw:
        try:
            parse_dsn(raw["hes_dsn"])
        except DsnError as exc:
            raise ConfigError(f"--hes-dsn: {exc}") from None

    deadline_time = raw.get("deadline_time", defaults.deadline_time)
    deadline_timezone = raw.get("deadline_timezone", defaults.deadline_timezone)
    deadline_rule(deadline_time, deadline_timezone)

    driver_memory = raw.get("driver_memory", defaults.driver_memory)
    if not _JVM_SIZE.fullmatch(driver_memory):
        raise ConfigError(f"driver memory {driver_memory!r} is not a JVM size such as 2g or 1536m")

    port_text = raw.get("metrics_port", str(defaults.metrics_port))
    if not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise ConfigError(f"metrics port {port_text!r} is not a TCP port (0-65535)")

    source = raw.get("source", defaults.source)
    if source not in SOURCES:
        raise ConfigError(f"source {source!r} is not one of {', '.join(SOURCES)}")

    level = raw.get("log_level", defaults.log_level).upper()
    if level not in _LOG_LEVELS:
        raise ConfigError(f"log level {level!r} is not one of {', '.join(_LOG_LEVELS)}")

    available_now = args.available_now
    if available_now is None:
        env_value = environ.get("VIGIA_INGEST_AVAILABLE_NOW")
        available_now = _parse_bool(env_value, "VIGIA_INGEST_AVAILABLE_NOW") if env_value else False
    fail_on_data_loss = args.fail_on_data_loss
    if fail_on_data_loss is None:
        env_value = environ.get("VIGIA_INGEST_FAIL_ON_DATA_LOSS")
        fail_on_data_loss = (
            _parse_bool(env_value, "VIGIA_INGEST_FAIL_ON_DATA_LOSS") if env_value else True
        )

    try:
        web = load_web_config(raw.get("web_config_file"))
    except WebConfigError as exc:
        raise ConfigError(f"--web.config.file: {exc}") from None

    return IngestConfig(
        bootstrap_servers=raw["bootstrap_servers"],
        kafka_options=kafka_options,
        topic=raw.get("topic", defaults.topic),
        output=raw.get("output", defaults.output),
        quarantine=raw.get("quarantine", defaults.quarantine),
        checkpoint=raw.get("checkpoint", defaults.checkpoint),
        trigger_interval=trigger,
        max_offsets_per_trigger=max_offsets,
        available_now=bool(available_now),
        starting_offsets=_check_starting_offsets(
            raw.get("starting_offsets", defaults.starting_offsets)
        ),
        fail_on_data_loss=bool(fail_on_data_loss),
        group_id=raw.get("group_id", defaults.group_id),
        source=source,
        metrics_address=raw.get("metrics_address", defaults.metrics_address),
        metrics_port=int(port_text),
        kafka_timeout=kafka_timeout,
        spark_master=raw.get("spark_master"),
        driver_memory=driver_memory,
        log_level=level,
        expected_meters=expected_meters,
        hes_dsn=raw.get("hes_dsn"),
        hes_interval=hes_interval,
        web=web,
        deadline_time=deadline_time,
        deadline_timezone=deadline_timezone,
    )


def deadline_rule(time_text: str, zone: str) -> DeadlineRule:
    """The deadline flags as a rule, or ConfigError."""
    try:
        at = dt.time.fromisoformat(time_text)
    except ValueError:
        raise ConfigError(f"deadline time {time_text!r} is not a time such as 06:00") from None
    try:
        return DeadlineRule(at, ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"deadline time zone {zone!r} is not an IANA time zone name") from None


def load_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> IngestConfig:
    """Parse `vigia-ingest run` flags and the environment, or raise ConfigError."""
    env = os.environ if environ is None else environ
    return config_from_args(build_parser().parse_args(argv), env)
