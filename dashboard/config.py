"""`vigia-dashboard` configuration: flags win over VIGIA_* environment variables over defaults."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from vigia.common.secret_file import SecretFileError, read_secret
from vigia.common.slo.cli import SPEC, load
from vigia.dashboard.clusters import DEFAULT_CLUSTER, ClustersError, ClusterTarget, parse_clusters
from vigia.dashboard.leg_budget import DEFAULT_TARGET_SECONDS

_SLO_TARGETS = {slo.name: float(slo.target) for slo in load(SPEC)}


class ConfigError(ValueError):
    """Invalid configuration; the message is the one line printed before exiting with code 2."""


# The marker vigia-stack --demo gives: panels then say what the demo lacks for them.
DEMO_MARKER = "demo"


@dataclass(frozen=True)
class DashboardConfig:
    prometheus_url: str = "http://127.0.0.1:9090"
    exporter_url: str = "http://127.0.0.1:9308"
    alertmanager_url: str = "http://127.0.0.1:9093"
    refresh_interval: float = 15.0
    listen_address: str = "127.0.0.1"
    port: int = 8050
    backend_timeout: float = 2.0
    log_level: str = "INFO"
    marker: str = ""  # shown beside the brand on every page, e.g. "demo"
    runbooks_dir: str = ""  # empty: the runbooks installed with the package
    web_config_file: str = ""  # empty: plain HTTP without authentication
    # How the app reaches backends secured with a web configuration file (docs/security.md).
    backend_ca_file: str = ""  # empty: the system's CAs
    backend_cert_file: str = ""
    backend_key_file: str = ""
    exporter_user: str = ""
    exporter_password: str = dataclasses.field(default="", repr=False)
    outage_target: float = DEFAULT_TARGET_SECONDS  # seconds; the Capacity page's outage budget
    # The Promises page's objectives: the installed SLO file's unless set (an operator who edits
    # their own SLO file sets these to match).
    freshness_objective: float = _SLO_TARGETS["ingest-freshness"]
    deadline_objective: float = _SLO_TARGETS["ingest-completeness"]
    # Named clusters, each with its exporter (--cluster); empty: the one cluster of exporter_url.
    clusters: tuple[ClusterTarget, ...] = ()

    @property
    def targets(self) -> tuple[ClusterTarget, ...]:
        """The clusters the app shows, in the selector's order."""
        return self.clusters or (ClusterTarget(DEFAULT_CLUSTER, self.exporter_url, False),)


# flag -> (environment variable, help). Defaults come from DashboardConfig.
_OPTIONS: dict[str, tuple[str, str]] = {
    "prometheus_url": ("VIGIA_PROMETHEUS_URL", "Prometheus base URL (time series)"),
    "exporter_url": ("VIGIA_EXPORTER_URL", "vigia-exporter base URL (topology, /api/v1/cluster)"),
    "alertmanager_url": ("VIGIA_ALERTMANAGER_URL", "Alertmanager base URL (active alerts)"),
    "refresh_interval": (
        "VIGIA_DASHBOARD_REFRESH_INTERVAL",
        "auto-refresh period, seconds or a duration like 30s / 1m",
    ),
    "listen_address": ("VIGIA_DASHBOARD_LISTEN_ADDRESS", "address the web server binds"),
    "port": ("VIGIA_DASHBOARD_PORT", "port the web server binds"),
    "backend_timeout": (
        "VIGIA_DASHBOARD_BACKEND_TIMEOUT",
        "timeout of each request to Prometheus, the exporter and Alertmanager",
    ),
    "log_level": ("VIGIA_LOG_LEVEL", "logging level"),
    "marker": ("VIGIA_DASHBOARD_MARKER", "a word shown beside the brand on every page, e.g. demo"),
    "runbooks_dir": (
        "VIGIA_DASHBOARD_RUNBOOKS_DIR",
        "directory of <AlertName>.md runbooks served at /runbooks/<AlertName> "
        "(empty: those installed with Vigía)",
    ),
    "web_config_file": (
        "VIGIA_DASHBOARD_WEB_CONFIG_FILE",
        "Prometheus exporter web configuration file: TLS, client certificates, basic-auth users "
        "(docs/security.md; empty: plain HTTP, no authentication)",
    ),
    "backend_ca_file": (
        "VIGIA_DASHBOARD_BACKEND_CA_FILE",
        "CA certificate(s) that sign the HTTPS certificates of Prometheus, the exporter and "
        "Alertmanager (empty: the system's)",
    ),
    "backend_cert_file": (
        "VIGIA_DASHBOARD_BACKEND_CERT_FILE",
        "client certificate shown to backends that require one (with --backend-key-file)",
    ),
    "backend_key_file": ("VIGIA_DASHBOARD_BACKEND_KEY_FILE", "the client certificate's key"),
    "exporter_user": (
        "VIGIA_DASHBOARD_EXPORTER_USER",
        "basic-auth user for the exporter's /api/v1/cluster (with --exporter-password-file)",
    ),
    "exporter_password_file": (
        "VIGIA_DASHBOARD_EXPORTER_PASSWORD_FILE",
        "file holding that user's password",
    ),
    "outage_target": (
        "VIGIA_DASHBOARD_OUTAGE_TARGET",
        "the outage Connect and the ingest job should each survive without losing a measure "
        "(Capacity page: the settings it needs), seconds or a duration like 24h",
    ),
    "freshness_objective": (
        "VIGIA_DASHBOARD_FRESHNESS_OBJECTIVE",
        "share of live measures to store within 30 minutes over 28 days (Promises page; "
        "default: the installed SLO file's, prometheus/slo/slos.yml)",
    ),
    "deadline_objective": (
        "VIGIA_DASHBOARD_DEADLINE_OBJECTIVE",
        "share of each day's measures to store by its deadline over 28 days (Promises page; "
        "default: the installed SLO file's)",
    ),
}
# The Prometheus ecosystem's spelling of the flag, beside --web-config-file.
_ALIASES: dict[str, tuple[str, ...]] = {"web_config_file": ("--web.config.file",)}
CLUSTERS_ENV = "VIGIA_DASHBOARD_CLUSTERS"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; the project convention is one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    defaults = DashboardConfig()
    parser = _OneLineParser(
        prog="vigia-dashboard",
        description="Vigía's Dash app: cluster, consumers, ingest and capacity in one place.",
    )
    for field, (env, help_text) in _OPTIONS.items():
        parser.add_argument(
            "--" + field.replace("_", "-"),
            *_ALIASES.get(field, ()),
            dest=field,
            default=None,
            help=f"{help_text} (env {env}, default {getattr(defaults, field, '')})",
        )
    parser.add_argument(
        "--cluster",
        dest="clusters",
        action="append",
        metavar="NAME=URL",
        help="a Kafka cluster to show and its vigia-exporter's base URL, repeatable; NAME is the "
        "`cluster` label Prometheus gives its series and alerts, and the app's queries keep to "
        "it (docs/multi-cluster.md). Replaces --exporter-url, whose one cluster is named "
        f"{DEFAULT_CLUSTER} and whose queries are not filtered (env {CLUSTERS_ENV}: "
        "NAME=URL,NAME=URL; default none)",
    )
    return parser


def parse_duration(text: str, name: str) -> float:
    match = _DURATION.match(text)
    if not match:
        raise ConfigError(f"{name} {text!r} is not a duration (e.g. 15, 15s, 1m)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _check_url(value: str, name: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{name} {value!r} is not an http(s) URL")
    return value.rstrip("/")


def load_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> DashboardConfig:
    """Parse flags and environment into a validated config, or raise ConfigError."""
    env = os.environ if environ is None else environ
    args = vars(build_parser().parse_args(argv))
    raw: dict[str, str] = {}
    for field, (env_name, _) in _OPTIONS.items():
        value = args[field] if args[field] is not None else env.get(env_name)
        if value is not None and value.strip():
            raw[field] = value.strip()

    defaults = DashboardConfig()
    refresh = (
        parse_duration(raw["refresh_interval"], "refresh interval")
        if "refresh_interval" in raw
        else defaults.refresh_interval
    )
    if refresh < 1:
        raise ConfigError(f"refresh interval must be at least 1 s, got {refresh:g} s")
    timeout = (
        parse_duration(raw["backend_timeout"], "backend timeout")
        if "backend_timeout" in raw
        else defaults.backend_timeout
    )
    if not 0 < timeout <= 60:
        raise ConfigError(f"backend timeout must be in (0, 60] s, got {timeout:g} s")
    port_text = raw.get("port", str(defaults.port))
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"port {port_text!r} is not a TCP port (1-65535)")
    target = (
        parse_duration(raw["outage_target"], "outage target")
        if "outage_target" in raw
        else defaults.outage_target
    )
    if not target > 0:
        raise ConfigError(f"outage target must be positive, got {target:g} s")
    level = raw.get("log_level", defaults.log_level).upper()
    if level not in _LOG_LEVELS:
        raise ConfigError(f"log level {level!r} is not one of {', '.join(_LOG_LEVELS)}")
    cert, key = raw.get("backend_cert_file", ""), raw.get("backend_key_file", "")
    if bool(cert) != bool(key):
        raise ConfigError("--backend-cert-file and --backend-key-file go together")
    for name in ("backend_ca_file", "backend_cert_file", "backend_key_file"):
        if name in raw and not os.access(raw[name], os.R_OK):
            raise ConfigError(f"--{name.replace('_', '-')}: cannot read {raw[name]}")
    user, password = raw.get("exporter_user", ""), ""
    if bool(user) != ("exporter_password_file" in raw):
        raise ConfigError("--exporter-user and --exporter-password-file go together")
    if user:
        try:
            password = read_secret(raw["exporter_password_file"])
        except SecretFileError as exc:
            raise ConfigError(f"--exporter-password-file: {exc}") from None
    clusters = _clusters(args["clusters"], env.get(CLUSTERS_ENV, ""))
    if clusters and "exporter_url" in raw:
        raise ConfigError("--cluster and --exporter-url go one or the other")
    objectives = {
        name: _objective(raw[name], name) if name in raw else getattr(defaults, name)
        for name in ("freshness_objective", "deadline_objective")
    }
    return DashboardConfig(
        prometheus_url=_check_url(
            raw.get("prometheus_url", defaults.prometheus_url), "Prometheus URL"
        ),
        exporter_url=_check_url(raw.get("exporter_url", defaults.exporter_url), "exporter URL"),
        alertmanager_url=_check_url(
            raw.get("alertmanager_url", defaults.alertmanager_url), "Alertmanager URL"
        ),
        refresh_interval=refresh,
        listen_address=raw.get("listen_address", defaults.listen_address),
        port=int(port_text),
        backend_timeout=timeout,
        log_level=level,
        marker=raw.get("marker", ""),
        runbooks_dir=raw.get("runbooks_dir", ""),
        web_config_file=raw.get("web_config_file", ""),
        backend_ca_file=raw.get("backend_ca_file", ""),
        backend_cert_file=cert,
        backend_key_file=key,
        exporter_user=user,
        exporter_password=password,
        outage_target=target,
        clusters=clusters,
        **objectives,
    )


def _clusters(flags: list[str] | None, env_value: str) -> tuple[ClusterTarget, ...]:
    try:
        return parse_clusters(flags if flags else [env_value])
    except ClustersError as exc:
        raise ConfigError(str(exc)) from None


def _objective(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise ConfigError(f"{name.replace('_', ' ')} {text!r} is not a share in (0, 1) like 0.99")
    return value
