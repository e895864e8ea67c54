"""vigia-exporter configuration: flags, each with a VIGIA_ environment variable; flags win.

Any mistake (bad regex, unknown flag, malformed value) raises `ConfigError` with one line; the CLI
turns it into exit code 2.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

from vigia.common.hes import Dsn, DsnError, parse_dsn
from vigia.common.kafka_config import KafkaOptionError, merged
from vigia.common.secret_file import SecretFileError, read_secret
from vigia.common.web_config import WebConfig, WebConfigError
from vigia.common.web_tls import load as load_web_config
from vigia.exporter.model.binlog import DEFAULT_FLOOR_SECONDS as BINLOG_FLOOR_SECONDS
from vigia.exporter.model.filters import Filters, NameFilter
from vigia.exporter.model.granularity import DEFAULT, Granularity, Level, Replicas
from vigia.exporter.model.lag_status import DEFAULT_WINDOW_SIZE
from vigia.exporter.model.pipeline_flow import DEFAULT_STALL_AFTER
from vigia.exporter.model.record_time import DEFAULT_PARTITIONS, DEFAULT_SECONDS, RecordBudget
from vigia.exporter.model.retention import DEFAULT_FLOOR_SECONDS, DEFAULT_WINDOW_SECONDS
from vigia.exporter.probe.runner import DEFAULT_TOPIC, ProbeSettings

PROG = "vigia-exporter"
DEFAULT_PORT = 9308  # kafka_exporter's allocation: Vigía's exporter is a drop-in replacement
PROBE_ENABLED_ENV = "VIGIA_PROBE_ENABLED"
WEB_CONFIG_ENV = "VIGIA_EXPORTER_WEB_CONFIG_FILE"
CONNECT_URLS_ENV = "VIGIA_CONNECT_URLS"
DEFAULT_CONNECT_NAME = "connect"
# The name Vigía's shipped Prometheus configuration gives the one cluster it watches.
DEFAULT_CLUSTER_NAME = "smartmeter"
# offset.storage.topic of docker/connect/worker-distributed.properties.
DEFAULT_OFFSETS_TOPIC = "cdc-connect-offsets"
_CONNECT_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# Kafka's own rule for topic names (org.apache.kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# Every fourth collection at the default interval (exporter/kafka/slow_phases.py).
DEFAULT_SLOW_PHASE_INTERVAL = 60.0
_Choice = TypeVar("_Choice", Level, Replicas)


class ConfigError(ValueError):
    """Invalid configuration, described in one line."""


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """The HES leg: the source database (--hes-dsn) and the pipeline the hops are measured on."""

    hes: Dsn | None = None
    interval: float = 15.0
    count_interval: float = 300.0
    group: str = "vigia-ingest"
    topic: str = "measure"
    connector: str = "hes-measure"
    stall_after: float = DEFAULT_STALL_AFTER
    # The binlog margin (exporter.model.binlog): Connect's offsets topic ("" = off), how often.
    offsets_topic: str = DEFAULT_OFFSETS_TOPIC
    binlog_interval: float = 60.0
    binlog_floor: float = BINLOG_FLOOR_SECONDS


@dataclass(frozen=True, slots=True)
class ExporterConfig:
    bootstrap_servers: str
    kafka_options: Mapping[str, str]
    listen_address: str
    port: int
    collection_interval: float
    collection_timeout: float
    filters: Filters
    log_level: str
    lag_status_window: int
    probe: ProbeSettings
    catch_up_window: float = DEFAULT_WINDOW_SECONDS
    retention_floor: float = DEFAULT_FLOOR_SECONDS
    record_budget: RecordBudget = field(default_factory=RecordBudget)
    connect_urls: tuple[ConnectTarget, ...] = ()
    source: SourceSettings = SourceSettings()
    granularity: Granularity = DEFAULT
    slow_phase_interval: float = DEFAULT_SLOW_PHASE_INTERVAL
    # --assumed-topic-config: topic -> {key: value}, for topics whose configs the cluster withholds.
    assumed_topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # --web.config.file: TLS and basic auth of the HTTP endpoints (vigia.common.web_config).
    web: WebConfig = field(default_factory=WebConfig)
    cluster_name: str = DEFAULT_CLUSTER_NAME


@dataclass(frozen=True, slots=True)
class ConnectTarget:
    """A Kafka Connect cluster to watch: `name` is the `connect` label of its series."""

    name: str
    url: str


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ConfigError(message)


# flag -> (environment variable, default, help)
_SETTINGS: dict[str, tuple[str, str | None, str]] = {
    "--bootstrap-servers": (
        "VIGIA_KAFKA_BOOTSTRAP_SERVERS",
        "127.0.0.1:9092",
        "Kafka bootstrap servers, host:port[,host:port...]",
    ),
    "--listen-address": ("VIGIA_EXPORTER_LISTEN_ADDRESS", "127.0.0.1", "HTTP listen address"),
    "--cluster": (
        "VIGIA_CLUSTER",
        DEFAULT_CLUSTER_NAME,
        "the name of the Kafka cluster watched, the `cluster` label Prometheus gives its series; "
        "/api/v1/cluster reports it and the Dash app checks it (docs/multi-cluster.md)",
    ),
    "--port": ("VIGIA_EXPORTER_PORT", str(DEFAULT_PORT), "HTTP port"),
    "--collection-interval": (
        "VIGIA_EXPORTER_COLLECTION_INTERVAL",
        "15",
        "seconds between the starts of two collections",
    ),
    "--collection-timeout": (
        "VIGIA_EXPORTER_COLLECTION_TIMEOUT",
        "10",
        "seconds one collection may take; Kafka calls still pending then count as failed",
    ),
    "--slow-phase-interval": (
        "VIGIA_EXPORTER_SLOW_PHASE_INTERVAL",
        f"{DEFAULT_SLOW_PHASE_INTERVAL:g}",
        "seconds a complete answer of the slow-changing phases (log-dir sizes, topic configs, "
        "KRaft quorum and racks) is reused before they are asked again; they are asked at once "
        "when a broker or topic comes or goes, or after a failure; 0 asks every collection",
    ),
    "--topic-include": ("VIGIA_EXPORTER_TOPIC_INCLUDE", None, "report only topics matching"),
    "--topic-exclude": ("VIGIA_EXPORTER_TOPIC_EXCLUDE", None, "do not report topics matching"),
    "--group-include": ("VIGIA_EXPORTER_GROUP_INCLUDE", None, "report only groups matching"),
    "--group-exclude": ("VIGIA_EXPORTER_GROUP_EXCLUDE", None, "do not report groups matching"),
    "--log-level": ("VIGIA_LOG_LEVEL", "INFO", "DEBUG, INFO, WARNING or ERROR"),
    "--lag-status-window": (
        "VIGIA_EXPORTER_LAG_STATUS_WINDOW",
        str(DEFAULT_WINDOW_SIZE),
        "collections in the window that lag status (OK/WARN/STOP/STALL/REWIND) is evaluated over, "
        "at least 2",
    ),
    "--catchup-window": (
        "VIGIA_EXPORTER_CATCHUP_WINDOW",
        f"{DEFAULT_WINDOW_SECONDS:g}",
        "seconds over which a group's backlog is judged draining, holding or growing, and its "
        "time to catch up estimated (longer than one slow batch of the consumer)",
    ),
    "--retention-risk-floor": (
        "VIGIA_EXPORTER_RETENTION_RISK_FLOOR",
        f"{DEFAULT_FLOOR_SECONDS:g}",
        "seconds of retention margin under which a group whose backlog does not drain is at risk",
    ),
    "--lag-record-partitions": (
        "VIGIA_EXPORTER_LAG_RECORD_PARTITIONS",
        str(DEFAULT_PARTITIONS),
        "committed offsets whose record timestamp one collection may read for lag seconds "
        "(docs/lag.md); 0 uses the offset history only",
    ),
    "--lag-record-timeout": (
        "VIGIA_EXPORTER_LAG_RECORD_TIMEOUT",
        f"{DEFAULT_SECONDS:g}",
        "seconds one collection may spend reading record timestamps, within --collection-timeout",
    ),
    "--topic-offsets-granularity": (
        "VIGIA_EXPORTER_TOPIC_OFFSETS_GRANULARITY",
        DEFAULT.topic_offsets,
        "partition: kafka_topic_partition_current_offset and _oldest_offset per partition; "
        "topic: none (per-topic families only)",
    ),
    "--partition-state-granularity": (
        "VIGIA_EXPORTER_PARTITION_STATE_GRANULARITY",
        DEFAULT.partition_state,
        "partition: leader, replicas, ISR and health flags per partition "
        "(kafka_topic_partition_*); topic: only their per-topic counts",
    ),
    "--group-offsets-granularity": (
        "VIGIA_EXPORTER_GROUP_OFFSETS_GRANULARITY",
        DEFAULT.group_offsets,
        "partition: kafka_consumergroup_current_offset and _lag per partition, as kafka_exporter "
        "serves them (community boards such as Grafana 7589 read them); topic: only their "
        "per-topic sums",
    ),
    "--group-lag-granularity": (
        "VIGIA_EXPORTER_GROUP_LAG_GRANULARITY",
        DEFAULT.group_lag,
        "partition: kafka_consumergroup_lag_seconds and _partition_status per partition, and "
        "_lag_seconds_partitions per method; topic: only the per-topic maximum and status",
    ),
    "--replica-series": (
        "VIGIA_EXPORTER_REPLICA_SERIES",
        DEFAULT.replicas,
        "kafka_partition_replica_* series: all replicas, out-of-sync (only replicas outside the "
        "ISR) or off",
    ),
    "--probe-topic": (
        "VIGIA_PROBE_TOPIC",
        DEFAULT_TOPIC,
        "topic of the end-to-end probe; created with one partition led by each broker",
    ),
    "--probe-interval": ("VIGIA_PROBE_INTERVAL", "5", "seconds between two probe rounds"),
    "--hes-dsn": (
        "VIGIA_HES_DSN",
        None,
        "watch the HES database, mysql://user:password@host:3306/hes with a read-only user "
        "(SELECT on hes.*); unset: no source watch",
    ),
    "--hes-dsn-file": (
        "VIGIA_HES_DSN_FILE",
        None,
        "file holding the --hes-dsn, so that its password shows in no process list (--hes-dsn "
        "and VIGIA_HES_DSN win)",
    ),
    "--hes-interval": (
        "VIGIA_EXPORTER_HES_INTERVAL",
        "15",
        "seconds between two looks at the HES's newest row and the pipeline topic's tail (a "
        "stall is seen one look after the HES wrote rows the topic lacks, plus --stall-after)",
    ),
    "--hes-count-interval": (
        "VIGIA_EXPORTER_HES_COUNT_INTERVAL",
        "300",
        "seconds between two counts of the open and last closed day's rows in the HES (an index "
        "range scan as long as those days)",
    ),
    "--pipeline-group": (
        "VIGIA_EXPORTER_PIPELINE_GROUP",
        "vigia-ingest",
        "the ingest job's consumer group, for the kafka_to_store hop",
    ),
    "--pipeline-topic": (
        "VIGIA_EXPORTER_PIPELINE_TOPIC",
        "measure",
        "the topic the HES rows arrive on, for the hes_to_kafka hop",
    ),
    "--pipeline-connector": (
        "VIGIA_EXPORTER_PIPELINE_CONNECTOR",
        "hes-measure",
        "the Kafka Connect connector that writes the HES rows to --pipeline-topic: a stall of the "
        "flow (rows in the HES the topic lacks, and nothing reaching it) is laid to it",
    ),
    "--stall-after": (
        "VIGIA_EXPORTER_STALL_AFTER",
        f"{DEFAULT_STALL_AFTER:g}",
        "seconds rows the HES wrote may wait without any record reaching --pipeline-topic "
        "before the flow counts as stalled",
    ),
    "--connect-offsets-topic": (
        "VIGIA_EXPORTER_CONNECT_OFFSETS_TOPIC",
        DEFAULT_OFFSETS_TOPIC,
        "Kafka Connect's offsets topic (the workers' offset.storage.topic), where the binlog "
        "position of --pipeline-connector is read for the HES binlog margin (with --hes-dsn); "
        "empty: no binlog margin",
    ),
    "--binlog-interval": (
        "VIGIA_EXPORTER_BINLOG_INTERVAL",
        "60",
        "seconds between two looks at the HES's binlog files and expiry and the connector's "
        "committed offset",
    ),
    "--binlog-risk-floor": (
        "VIGIA_EXPORTER_BINLOG_RISK_FLOOR",
        f"{BINLOG_FLOOR_SECONDS:g}",
        "seconds of binlog margin under which a connector that does not catch up is at risk",
    ),
    "--assumed-topic-config": (
        "VIGIA_EXPORTER_ASSUMED_TOPIC_CONFIG",
        "",
        "TOPIC:KEY=VALUE[,TOPIC:KEY=VALUE...], a topic's config (retention.ms, retention.bytes, "
        "min.insync.replicas, cleanup.policy) taken as given where the cluster answers no "
        "DescribeConfigs for it (an ACL without DescribeConfigs, a mock cluster); what the "
        "cluster answers wins",
    ),
    "--probe-deadline": (
        "VIGIA_PROBE_DEADLINE",
        "10",
        "seconds after which a probe message not consumed back counts as lost",
    ),
}


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Kafka cluster state, consumer lag and exporter health as Prometheus metrics.",
        epilog="Regexes are Python regular expressions matched anywhere in the name (re.search).",
        allow_abbrev=False,
    )
    for flag, (env, default, text) in _SETTINGS.items():
        shown = "unset" if default is None else default
        parser.add_argument(
            flag, default=environ.get(env, default), help=f"{text} (env {env}, default {shown})"
        )
    parser.add_argument(
        "--web.config.file",
        "--web-config-file",
        dest="web_config_file",
        default=environ.get(WEB_CONFIG_ENV),
        metavar="FILE",
        help="Prometheus exporter web configuration file: TLS, client certificates, basic-auth "
        f"users (docs/security.md) (env {WEB_CONFIG_ENV}, default unset: plain HTTP, no "
        "authentication)",
    )
    parser.add_argument(
        "--probe",
        action=argparse.BooleanOptionalAction,
        default=_enabled(environ.get(PROBE_ENABLED_ENV, "true")),
        help=f"run the end-to-end probe (env {PROBE_ENABLED_ENV}=true|false, default true)",
    )
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra librdkafka setting, repeatable (env VIGIA_KAFKA_OPTIONS, comma-separated)",
    )
    parser.add_argument(
        "--connect-url",
        action="append",
        default=[],
        metavar="[NAME=]URL",
        help=f"a Kafka Connect REST URL to watch, repeatable, one per Connect cluster; NAME is "
        f"its `connect` label (default {DEFAULT_CONNECT_NAME!r}) (env {CONNECT_URLS_ENV}, "
        "comma-separated; default none)",
    )
    return parser


def parse_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> ExporterConfig:
    env = os.environ if environ is None else environ
    args = build_parser(env).parse_args(argv)
    try:
        options = merged(args.kafka_option, env)
    except KafkaOptionError as exc:
        raise ConfigError(str(exc)) from exc
    interval = _positive(args.collection_interval, "--collection-interval")
    timeout = _positive(args.collection_timeout, "--collection-timeout")
    if not args.bootstrap_servers.strip():
        raise ConfigError("--bootstrap-servers is empty")
    window = _int_at_least(args.lag_status_window, 2, "--lag-status-window")
    if not _TOPIC_NAME.fullmatch(args.probe_topic) or args.probe_topic in (".", ".."):
        raise ConfigError(
            f"--probe-topic: {args.probe_topic!r} is not a valid Kafka topic name "
            "(1-249 of a-z A-Z 0-9 . _ -)"
        )
    probe = ProbeSettings(
        enabled=args.probe,
        topic=args.probe_topic,
        interval_seconds=_positive(args.probe_interval, "--probe-interval"),
        deadline_seconds=_positive(args.probe_deadline, "--probe-deadline"),
        # Probe admin requests are bounded like the collection's.
        request_timeout_seconds=timeout,
    )
    dsn_text = args.hes_dsn
    if not dsn_text and args.hes_dsn_file:
        try:
            dsn_text = read_secret(args.hes_dsn_file)
        except SecretFileError as exc:
            raise ConfigError(f"--hes-dsn-file: {exc}") from None
    try:
        hes = parse_dsn(dsn_text) if dsn_text else None
    except DsnError as exc:
        raise ConfigError(f"--hes-dsn: {exc}") from exc
    try:
        web = load_web_config(args.web_config_file)
    except WebConfigError as exc:
        raise ConfigError(f"--web.config.file: {exc}") from None
    source = SourceSettings(
        hes=hes,
        interval=_positive(args.hes_interval, "--hes-interval"),
        count_interval=_positive(args.hes_count_interval, "--hes-count-interval"),
        group=args.pipeline_group,
        topic=args.pipeline_topic,
        connector=args.pipeline_connector,
        stall_after=_positive(args.stall_after, "--stall-after"),
        offsets_topic=args.connect_offsets_topic.strip(),
        binlog_interval=_positive(args.binlog_interval, "--binlog-interval"),
        binlog_floor=_positive(args.binlog_risk_floor, "--binlog-risk-floor"),
    )
    granularity = Granularity(
        topic_offsets=_choice(Level, args.topic_offsets_granularity, "--topic-offsets-granularity"),
        partition_state=_choice(
            Level, args.partition_state_granularity, "--partition-state-granularity"
        ),
        group_offsets=_choice(Level, args.group_offsets_granularity, "--group-offsets-granularity"),
        group_lag=_choice(Level, args.group_lag_granularity, "--group-lag-granularity"),
        replicas=_choice(Replicas, args.replica_series, "--replica-series"),
    )
    level = str(args.log_level).upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ConfigError(f"--log-level: unknown level {args.log_level!r}")
    return ExporterConfig(
        bootstrap_servers=args.bootstrap_servers.strip(),
        kafka_options=options,
        listen_address=args.listen_address,
        port=_port(args.port),
        collection_interval=interval,
        collection_timeout=timeout,
        filters=Filters(
            topics=NameFilter(
                _regex(args.topic_include, "--topic-include"),
                _regex(args.topic_exclude, "--topic-exclude"),
            ),
            groups=NameFilter(
                _regex(args.group_include, "--group-include"),
                _regex(args.group_exclude, "--group-exclude"),
            ),
        ),
        log_level=level,
        lag_status_window=window,
        probe=probe,
        catch_up_window=_positive(args.catchup_window, "--catchup-window"),
        retention_floor=_positive(args.retention_risk_floor, "--retention-risk-floor"),
        record_budget=RecordBudget(
            _int_at_least(args.lag_record_partitions, 0, "--lag-record-partitions"),
            _positive(args.lag_record_timeout, "--lag-record-timeout"),
        ),
        connect_urls=_connect_targets(args.connect_url or _split(env.get(CONNECT_URLS_ENV, ""))),
        source=source,
        granularity=granularity,
        slow_phase_interval=_non_negative(args.slow_phase_interval, "--slow-phase-interval"),
        assumed_topic_configs=assumed_topic_configs(args.assumed_topic_config),
        web=web,
        cluster_name=_cluster_name(args.cluster),
    )


def _cluster_name(value: str) -> str:
    name = value.strip()
    if not _CONNECT_NAME.fullmatch(name):
        raise ConfigError(f"--cluster: {value!r} is not a name (A-Z a-z 0-9 _ . -)")
    return name


ASSUMABLE_KEYS = frozenset(
    {"retention.ms", "retention.bytes", "min.insync.replicas", "cleanup.policy"}
)


def assumed_topic_configs(raw: str) -> dict[str, dict[str, str]]:
    """`measure:retention.ms=604800000,measure:min.insync.replicas=2` -> {topic: {key: value}}."""
    configs: dict[str, dict[str, str]] = {}
    for item in _split(raw):
        topic, _, setting = item.partition(":")
        key, sep, value = setting.partition("=")
        topic, key, value = topic.strip(), key.strip(), value.strip()
        if not sep or not _TOPIC_NAME.fullmatch(topic) or not value:
            raise ConfigError(f"--assumed-topic-config: {item!r} is not TOPIC:KEY=VALUE")
        if key not in ASSUMABLE_KEYS:
            raise ConfigError(
                f"--assumed-topic-config: {key!r} is not one of {', '.join(sorted(ASSUMABLE_KEYS))}"
            )
        configs.setdefault(topic, {})[key] = value
    return configs


def _split(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",") if part.strip()]


def _connect_targets(values: Sequence[str]) -> tuple[ConnectTarget, ...]:
    targets: dict[str, ConnectTarget] = {}
    for value in values:
        name, sep, url = value.partition("=")
        if not sep or "://" in name:
            name, url = DEFAULT_CONNECT_NAME, value
        name, url = name.strip(), url.strip()
        if not _CONNECT_NAME.fullmatch(name):
            raise ConfigError(f"--connect-url: {name!r} is not a name (A-Z a-z 0-9 _ . -)")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--connect-url: {url!r} is not an http:// or https:// URL")
        if name in targets:
            raise ConfigError(
                f"--connect-url: two URLs named {name!r}; name them NAME=URL to watch several"
            )
        targets[name] = ConnectTarget(name, url)
    return tuple(targets.values())


def _regex(pattern: str | None, flag: str) -> re.Pattern[str] | None:
    if pattern is None or pattern == "":
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{flag}: invalid regular expression {pattern!r}: {exc}") from exc


def _choice(kind: type[_Choice], raw: str, flag: str) -> _Choice:
    try:
        return kind(raw.strip().lower())
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise ConfigError(f"{flag}: {raw!r} is not one of {allowed}") from None


def _positive(raw: str, flag: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{flag}: {raw!r} is not a number of seconds") from None
    if not value > 0:
        raise ConfigError(f"{flag}: must be more than 0 seconds, got {raw!r}")
    return value


def _non_negative(raw: str, flag: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{flag}: {raw!r} is not a number of seconds") from None
    if not value >= 0:
        raise ConfigError(f"{flag}: must be 0 seconds or more, got {raw!r}")
    return value


def _enabled(raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{PROBE_ENABLED_ENV}: {raw!r} is not true or false")


def _int_at_least(raw: str, minimum: int, flag: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{flag}: {raw!r} is not a whole number") from None
    if value < minimum:
        raise ConfigError(f"{flag}: must be at least {minimum}, got {value}")
    return value


def _port(raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        raise ConfigError(f"--port: {raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise ConfigError(f"--port: {port} is outside 1-65535")
    return port
