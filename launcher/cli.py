"""`vigia-stack`: Vigía without Docker (its processes, plus Prometheus and Alertmanager)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from vigia.common.logs import setup_logging
from vigia.launcher import console_url, demo, packages, plan, spark_cluster
from vigia.launcher.drop_in_files import PlainDumper, write_drop_in
from vigia.launcher.prometheus_config import localize
from vigia.launcher.supervisor import run

log = logging.getLogger("vigia-stack")

# The repository's prometheus/ (rules, prometheus.yml, targets, alertmanager.yml and its renderer)
# as installed with the package: vigia/prometheus, a link in a checkout, copies in a wheel.
PACKAGED_CONFIG_DIR = Path(str(resources.files("vigia") / "prometheus"))
# Writes alertmanager.yml's webhook URLs from files (prometheus/ owns it; compose runs it too).
RENDER_SCRIPT = "render-alertmanager-config.sh"
# Alertmanager's webhook receivers, whose URLs that script reads from files.
RECEIVERS = ("pager", "ticket", "heartbeat")

DESCRIPTION = """\
Start the Vigía processes against an existing Kafka cluster, without Docker: the exporter, the
ingest job, the Dash app, optionally the HES simulator, and Prometheus and Alertmanager with the
repository's config when their binaries are installed. Output is shown with a name prefix and also
written to RUN_DIR/logs/<component>.log. Only Ctrl-C or SIGTERM stops the stack (SIGKILL after
--stop-timeout): a component that dies never stops the others, so Prometheus and Alertmanager stay
up to page about it. A crashed component (killed by a signal, an exit code other than 0 and 2) is
started again after 1 s, doubling to 30 s while it keeps crashing, with a line when it exits and
one when it runs again; one that exits with code 2 (invalid configuration), or exits cleanly on its
own, stays down with a line saying so while the rest runs on."""

EPILOG = """\
components:
  exporter      vigia-exporter, /metrics /healthz                       (default port 9308)
  ingest        vigia-ingest run, Parquet + checkpoints in RUN_DIR      (metrics port 9310)
  simulator     vigia-simulate live: writes test traffic to `measure`   (metrics port 9311)
                (not started unless asked for: --with simulator)
  dashboard     vigia-dashboard, the Dash app                           (port 8050)
  prometheus    `prometheus` on PATH, RUN_DIR/prometheus/prometheus.yml (port 9090)
  alertmanager  `alertmanager` or `prometheus-alertmanager` on PATH     (port 9093)
  heartbeat     dead man's switch: logs "heartbeat missed" when Alertmanager's
                Watchdog heartbeat stops (docs/runbooks/Watchdog.md)     (port 9098)
                (left out without Alertmanager, or with --alertmanager-heartbeat-url-file)
  Prometheus and Alertmanager are skipped, with a warning, when not installed
  (unless named in --only/--with, which then fails); their config missing from
  --config-dir is an error unless they are left out (--without prometheus,alertmanager).

spark cluster (--spark-workers N, with the ingest job):
  spark-master    PySpark's own standalone master     (port 7077, web UI and /json/ 8080)
  spark-worker-n  N workers, one core and 1g each    (web UI 8081, 8082, ...)
  The ingest job is submitted to spark://LISTEN_ADDRESS:7077 in client mode; executors run in
  the workers' JVMs with this installation's Python. Their logs: logs/spark-*.log and, per
  executor, data/spark/worker-n/work/. They stop after the ingest job.

run directory (--run-dir):
  logs/<component>.log        each process's output
  data/parquet/{measures,quarantine}, checkpoints/ingest    ingest output and Spark state
  data/prometheus, data/alertmanager                         TSDB and silences
  data/spark/{master,worker-n}   Spark scratch and executors' work directories
  prometheus/prometheus.yml   --config-dir's prometheus.yml and targets/*.json with compose
                              service names replaced by local addresses (targets of components
                              not running here are dropped; broker JMX targets become
                              --jmx-target); rule files are used in place; the external label
                              vigia_console_url, which alerts' links start with, is --console-url
  alertmanager/alertmanager.yml   alertmanager.yml with the webhook URLs from
                              --alertmanager-{pager,ticket,heartbeat}-url-file (mode 0600);
                              without the heartbeat file, the heartbeat component's URL
  Procfile                    the exact commands, runnable with `honcho -f RUN_DIR/Procfile start`

environment:
  Every flag above has the environment variable shown in its help; flags win. Everything else
  reaches the components through their own VIGIA_* variables, which are passed on unchanged
  (e.g. VIGIA_KAFKA_OPTIONS for SASL/SSL, VIGIA_PROBE_TOPIC, VIGIA_SIMULATE_RATE).

restarts (launcher/keep_running.py runs every component; one line per change):
  ingest exited with code 1; starting again in 4 s (restart 3)
      a crash: waits 1 s, 2, 4, ... up to 30 s, and 1 s again after a run of a minute; what
      the run left in its process group (the ingest job's Spark JVM) is stopped first
  ingest running again (http://127.0.0.1:9310/metrics answers)
  ingest exited with code 2 (invalid configuration): not starting it again; ...
      stays down, and the rest runs on (IngestQueryDown pages after 5 minutes)

exit status:
  0 after Ctrl-C or SIGTERM once every component stopped cleanly (130 / 143 if one did not, or
  one stayed down on invalid configuration); 2 for invalid configuration of vigia-stack itself
  (one line says why).

demo (`make demo`):
  --demo runs everything on this machine without Kafka: librdkafka's mock cluster (3 brokers, in
  a small process of its own), the simulator with a periodic HES outage, the ingest job into
  var/demo, the exporter, Prometheus with a demo alert on the outage, Alertmanager and a webhook
  receiver that logs every notification (logs/receiver.log), and the Dash app marked "demo".
  Where MariaDB is installed, an HES database too (logs/hes-db.log, users' DSNs in
  var/demo/data/hes): a second simulator writes the same readings into it, in place of Kafka
  Connect, which the mock cluster cannot run, and the exporter and the ingest job watch it.
  Missing Java 17, Prometheus, Alertmanager or MariaDB is reported with the apt command that
  installs it; the demo runs without what is missing.

examples:
  vigia-stack --demo
  vigia-stack --bootstrap-servers broker1:9092,broker2:9092
  vigia-stack --bootstrap-servers localhost:19092 --with simulator
  vigia-stack --bootstrap-servers broker1:9092 --spark-workers 2
  vigia-stack --bootstrap-servers broker1:9092 --only exporter,prometheus \\
      --jmx-target 1=broker1:9404 --jmx-target 2=broker2:9404
  VIGIA_KAFKA_OPTIONS=security.protocol=SASL_SSL,sasl.mechanism=PLAIN vigia-stack --without ingest
"""


class _Parser(argparse.ArgumentParser):
    """Errors in one line and exit code 2, like every Vigía console script."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1-65535)")
    return port


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"{seconds} is negative")
    return seconds


def _count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"{count} is negative")
    return count


def _console_url(text: str) -> str:
    try:
        return console_url.parse_console_url(text)
    except console_url.ConsoleUrlError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _list(text: str) -> list[str]:
    return [item for item in text.replace(",", " ").split() if item]


# Repeatable flags whose environment variable applies only when the flag is not given at all
# (argparse's `append` would add flag values to a non-empty default instead of replacing it).
LIST_ENV = {
    "jmx_target": "VIGIA_STACK_JMX_TARGETS",
    "only": "VIGIA_STACK_ONLY",
    "without": "VIGIA_STACK_WITHOUT",
    "with_": "VIGIA_STACK_WITH",
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    for dest, env in LIST_ENV.items():
        if not getattr(args, dest):
            setattr(args, dest, _list(_env(env)))
    if args.run_dir is None:
        args.run_dir = Path("var/demo" if args.demo else "var/vigia-stack")
    return args


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="vigia-stack",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--demo",
        action="store_true",
        default=_env("VIGIA_STACK_DEMO").lower() in ("1", "true", "yes"),
        help="run the whole product on this machine against an embedded mock Kafka cluster "
        "(env VIGIA_STACK_DEMO=true; run directory var/demo unless --run-dir is given)",
    )
    kafka = p.add_argument_group("Kafka")
    kafka.add_argument(
        "--bootstrap-servers",
        default=_env("VIGIA_KAFKA_BOOTSTRAP_SERVERS"),
        help="host:port list of the cluster (env VIGIA_KAFKA_BOOTSTRAP_SERVERS); "
        "needed by exporter, ingest and simulator",
    )
    kafka.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka setting passed to exporter, ingest and simulator, repeatable "
        "(env VIGIA_KAFKA_OPTIONS is read by the components themselves)",
    )
    kafka.add_argument(
        "--jmx-target",
        action="append",
        default=[],
        metavar="ID=HOST:PORT",
        help="the JMX exporter agent of the broker with node id ID, for Prometheus to scrape; "
        "repeatable (env VIGIA_STACK_JMX_TARGETS, comma-separated); without any, the broker "
        "JMX job is left out",
    )

    pick = p.add_argument_group("components")
    pick.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAMES",
        help="run exactly these components (comma-separated, repeatable; env VIGIA_STACK_ONLY)",
    )
    pick.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="NAMES",
        help="leave these components out (env VIGIA_STACK_WITHOUT)",
    )
    pick.add_argument(
        "--with",
        dest="with_",
        action="append",
        default=[],
        metavar="NAMES",
        help="add components to the default set, e.g. simulator (env VIGIA_STACK_WITH)",
    )

    p.add_argument(
        "--spark-workers",
        type=_count,
        default=_env("VIGIA_STACK_SPARK_WORKERS", "0"),
        metavar="N",
        help="run the ingest job on a Spark standalone master and N one-core workers started "
        "here (env VIGIA_STACK_SPARK_WORKERS; default %(default)s: Spark's local mode in the "
        "job's own process)",
    )

    net = p.add_argument_group("addresses and ports")
    net.add_argument(
        "--listen-address",
        default=_env("VIGIA_STACK_LISTEN_ADDRESS", "127.0.0.1"),
        help="address every server binds (env VIGIA_STACK_LISTEN_ADDRESS; default %(default)s)",
    )
    net.add_argument(
        "--console-url",
        type=_console_url,
        default=_env("VIGIA_CONSOLE_URL") or None,
        metavar="URL",
        help="the Dash app's address as on-call opens it: every alert's runbook and dashboard "
        "link starts with it (env VIGIA_CONSOLE_URL; default http://LISTEN_ADDRESS:DASHBOARD_PORT, "
        "with this machine's name (socket.getfqdn(), else its host name) for 0.0.0.0)",
    )
    for component, env, default in (
        ("exporter", "VIGIA_EXPORTER_PORT", 9308),
        ("ingest-metrics", "VIGIA_INGEST_METRICS_PORT", 9310),
        ("simulator-metrics", "VIGIA_SIMULATE_METRICS_PORT", 9311),
        ("dashboard", "VIGIA_DASHBOARD_PORT", 8050),
        ("prometheus", "VIGIA_STACK_PROMETHEUS_PORT", 9090),
        ("alertmanager", "VIGIA_STACK_ALERTMANAGER_PORT", 9093),
        ("receiver", "VIGIA_STACK_RECEIVER_PORT", 9097),
        ("heartbeat", "VIGIA_STACK_HEARTBEAT_PORT", 9098),
        ("spark-master", "VIGIA_STACK_SPARK_MASTER_PORT", 7077),
        ("spark-master-ui", "VIGIA_STACK_SPARK_MASTER_UI_PORT", 8080),
        ("spark-worker-ui", "VIGIA_STACK_SPARK_WORKER_UI_PORT", 8081),
    ):
        net.add_argument(
            f"--{component}-port",
            type=_port,
            default=_env(env, str(default)),
            metavar="PORT",
            help=f"(env {env}; default {default})",
        )

    files = p.add_argument_group("files and binaries")
    files.add_argument(
        "--run-dir",
        type=Path,
        default=Path(_env("VIGIA_STACK_RUN_DIR")) if _env("VIGIA_STACK_RUN_DIR") else None,
        help="logs, data, checkpoints and generated config (env VIGIA_STACK_RUN_DIR; "
        "default var/vigia-stack, var/demo with --demo)",
    )
    files.add_argument(
        "--config-dir",
        type=Path,
        default=Path(_env("VIGIA_STACK_CONFIG_DIR", str(PACKAGED_CONFIG_DIR))),
        help="directory with prometheus.yml, rules/ and alertmanager.yml, for operators who keep "
        "their own copy (env VIGIA_STACK_CONFIG_DIR; default: the one installed with Vigía, the "
        "repository's prometheus/)",
    )
    for receiver in RECEIVERS:
        env = f"VIGIA_ALERTMANAGER_{receiver.upper()}_URL_FILE"
        files.add_argument(
            f"--alertmanager-{receiver}-url-file",
            default=_env(env),
            metavar="FILE",
            help=f"file holding the `{receiver}` receiver's webhook URL (env {env}); without it "
            + (
                "the heartbeat goes to the heartbeat component"
                if receiver == "heartbeat"
                else "the receiver keeps its placeholder URL and cannot deliver"
            ),
        )
    files.add_argument(
        "--prometheus-binary",
        default=_env("VIGIA_STACK_PROMETHEUS_BINARY") or shutil.which("prometheus"),
        help="(env VIGIA_STACK_PROMETHEUS_BINARY; default: `prometheus` on PATH)",
    )
    files.add_argument(
        "--alertmanager-binary",
        default=_env("VIGIA_STACK_ALERTMANAGER_BINARY")
        or shutil.which("alertmanager")
        or shutil.which("prometheus-alertmanager"),
        help="(env VIGIA_STACK_ALERTMANAGER_BINARY; default: `alertmanager` or Debian's "
        "`prometheus-alertmanager` on PATH)",
    )

    run = p.add_argument_group("running")
    run.add_argument(
        "--stop-timeout",
        type=_seconds,
        # A clean stop finishes the ingest job's batch and stops Spark: seconds, more on a
        # loaded machine; SIGKILL is for what hangs.
        default=_env("VIGIA_STACK_STOP_TIMEOUT", "30"),
        metavar="SECONDS",
        help="after SIGTERM, wait this long before SIGKILL (env VIGIA_STACK_STOP_TIMEOUT; "
        "default %(default)s)",
    )
    run.add_argument(
        "--drop-in",
        type=Path,
        metavar="DIR",
        help="start nothing: write into DIR Vigía's rules, scrape jobs, external label and "
        "Alertmanager route for a Prometheus and Alertmanager you already run "
        "(docs/prometheus-drop-in.md); needs --console-url",
    )
    run.add_argument(
        "--cluster",
        default=_env("VIGIA_CLUSTER", "smartmeter"),
        help="with --drop-in: the `cluster` label of every Vigía series, the Kafka cluster's name "
        "on boards and in alerts (env VIGIA_CLUSTER; default %(default)s)",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="write the run directory's config and Procfile, print the Procfile, start nothing",
    )
    run.add_argument(
        "--log-level",
        default=_env("VIGIA_LOG_LEVEL", "INFO"),
        help="launcher log level (env VIGIA_LOG_LEVEL; default %(default)s)",
    )
    return p


def _settings(args: argparse.Namespace, traffic: plan.DemoTraffic | None = None) -> plan.Settings:
    run_dir: Path = args.run_dir.resolve()
    return plan.Settings(
        bootstrap_servers=args.bootstrap_servers.strip(),
        kafka_options=tuple(args.kafka_option),
        listen_address=args.listen_address,
        ports=plan.Ports(
            exporter=args.exporter_port,
            ingest=args.ingest_metrics_port,
            simulator=args.simulator_metrics_port,
            dashboard=args.dashboard_port,
            prometheus=args.prometheus_port,
            alertmanager=args.alertmanager_port,
            receiver=args.receiver_port,
            heartbeat=args.heartbeat_port,
            spark_master=args.spark_master_port,
            spark_master_ui=args.spark_master_ui_port,
            spark_worker_ui=args.spark_worker_ui_port,
        ),
        run_dir=run_dir,
        prometheus_config=run_dir / "prometheus" / "prometheus.yml",
        alertmanager_config=run_dir / "alertmanager" / "alertmanager.yml",
        prometheus_binary=args.prometheus_binary,
        alertmanager_binary=args.alertmanager_binary,
        demo=traffic,
        spark_workers=args.spark_workers,
        spark_home=spark_cluster.pyspark_home() if args.spark_workers else None,
    )


def _components(args: argparse.Namespace, settings: plan.Settings) -> list[str]:
    only, without, with_ = (plan.parse_names(v) for v in (args.only, args.without, args.with_))
    defaults = plan.DEMO_COMPONENTS if args.demo else plan.DEFAULT_COMPONENTS
    chosen = plan.choose(only, without, with_, defaults)
    if args.demo:
        missing = demo.missing_packages(settings)
        if missing:
            log.warning(
                "not installed: %s; `%s` adds it; the demo goes on without %s",
                ", ".join(missing),
                packages.install_line(missing),
                ", ".join(c for c in chosen if c not in demo.runnable(chosen, missing)),
            )
        chosen = demo.runnable(chosen, missing)
    explicit = set(only) | set(with_)
    needs = {
        "prometheus": (settings.prometheus_binary, ["prometheus.yml"]),
        "alertmanager": (settings.alertmanager_binary, ["alertmanager.yml", RENDER_SCRIPT]),
    }
    absent = {
        name: [str(args.config_dir / f) for f in files if not (args.config_dir / f).is_file()]
        for name, (_, files) in needs.items()
        if name in chosen
    }
    if any(absent.values()):
        # Vigía's own config: a stack started without it would have no alerting at all.
        raise plan.PlanError(
            f"{', '.join(f for files in absent.values() for f in files)} missing (--config-dir); "
            f"`--without {','.join(n for n, files in absent.items() if files)}` runs without it"
        )
    for name, (binary, _) in needs.items():
        if name not in chosen:
            continue
        if not binary and name in explicit:
            raise plan.PlanError(f"{name} is not installed (not on PATH)")
        if not binary:
            log.warning("%s is not installed (not on PATH): skipping %s", name, name)
            chosen.remove(name)
    if "heartbeat" in chosen and "heartbeat" not in explicit:
        reason = (
            "no Alertmanager to send it a heartbeat"
            if "alertmanager" not in chosen
            else "the heartbeat goes to --alertmanager-heartbeat-url-file"
            if args.alertmanager_heartbeat_url_file
            else ""
        )
        if reason:
            log.info("%s: skipping heartbeat", reason)
            chosen.remove("heartbeat")
    if not chosen:
        raise plan.PlanError("no component left to run")
    return chosen


def _jmx_targets(values: Sequence[str]) -> dict[str, str]:
    targets: dict[str, str] = {}
    for value in values:
        node_id, sep, address = value.partition("=")
        host, _, port = address.rpartition(":")
        if not sep or not node_id.strip().isdigit() or not host or not port.isdigit():
            raise plan.PlanError(f"--jmx-target {value!r} is not ID=HOST:PORT, e.g. 1=kafka1:9404")
        targets[node_id.strip()] = address.strip()
    return targets


def _check_ports_free(processes: Sequence[plan.Process], address: str) -> None:
    for process in processes:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            # As the servers themselves bind: a previous run's connections in TIME-WAIT do not
            # keep the port from them, so they must not fail this check either.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((address, process.port))
            except OSError as e:
                raise plan.PlanError(
                    f"{process.name} cannot listen on {address}:{process.port}: {e.strerror}"
                ) from None


def _read_target_file(path: Path) -> list[dict[str, Any]]:
    groups = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    return list(groups)


def _write_prometheus_config(
    args: argparse.Namespace,
    settings: plan.Settings,
    components: Sequence[str],
    jmx_targets: dict[str, str],
) -> None:
    source_dir = args.config_dir.resolve()
    source = yaml.safe_load((source_dir / "prometheus.yml").read_text(encoding="utf-8")) or {}
    out_dir = settings.prometheus_config.parent
    local = localize(
        source,
        source_dir=source_dir,
        addresses=plan.compose_addresses(settings, components),
        jmx_targets=jmx_targets,
        alertmanager=(
            plan.compose_addresses(settings, ["alertmanager"])["alertmanager"]
            if "alertmanager" in components
            else None
        ),
        target_dir=out_dir / "targets",
        read_target_file=_read_target_file,
        external_labels={console_url.LABEL: _alert_link_base(args, settings)},
    )
    if settings.demo is not None:
        local.config["rule_files"].append(str(demo.RULES))
    (out_dir / "targets").mkdir(parents=True, exist_ok=True)
    for name, groups in local.target_files.items():
        (out_dir / "targets" / name).write_text(json.dumps(groups, indent=2) + "\n")
    settings.prometheus_config.write_text(
        "# Generated by vigia-stack from "
        f"{source_dir / 'prometheus.yml'}; edits are overwritten.\n"
        + yaml.dump(local.config, Dumper=PlainDumper, sort_keys=False),
        encoding="utf-8",
    )


def _alert_link_base(args: argparse.Namespace, settings: plan.Settings) -> str:
    if args.console_url:
        return str(args.console_url)
    try:
        return console_url.derive_console_url(
            settings.listen_address,
            settings.ports.dashboard,
            socket.getfqdn(),
            socket.gethostname(),
        )
    except console_url.ConsoleUrlError as e:
        raise plan.PlanError(str(e)) from None


def _write_alertmanager_config(
    args: argparse.Namespace, settings: plan.Settings, components: Sequence[str]
) -> None:
    """alertmanager.yml with the real webhook URLs, by the prometheus/ render script."""
    source_dir = args.config_dir.resolve()
    out = settings.alertmanager_config
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = dict(os.environ)
    for receiver in RECEIVERS:
        path = getattr(args, f"alertmanager_{receiver}_url_file")
        if not path and receiver == "heartbeat" and "heartbeat" in components:
            path = _write_heartbeat_url(settings)
        elif not path and receiver != "heartbeat" and settings.demo is not None:
            path = demo.write_receiver_url(settings, receiver)
        env_name = f"VIGIA_ALERTMANAGER_{receiver.upper()}_URL_FILE"
        if path:
            env[env_name] = str(Path(path).resolve())
        else:
            env.pop(env_name, None)
    result = subprocess.run(
        ["sh", str(source_dir / RENDER_SCRIPT), str(source_dir / "alertmanager.yml"), str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = result.stderr.strip().splitlines()
    if result.returncode != 0:
        raise plan.PlanError(lines[-1] if lines else f"{RENDER_SCRIPT} failed")
    for line in lines:
        log.warning("%s", line)
    out.chmod(0o600)  # it holds the webhook URLs


def _write_heartbeat_url(settings: plan.Settings) -> str:
    """A file holding the heartbeat component's URL, for Alertmanager's `heartbeat` webhook."""
    path = settings.alertmanager_config.parent / "heartbeat-url"
    path.write_text(f"{plan.url(settings, 'heartbeat')}/heartbeat\n", encoding="utf-8")
    return str(path)


def _prepare_run_dir(
    args: argparse.Namespace,
    settings: plan.Settings,
    components: Sequence[str],
    processes: Sequence[plan.Process],
    jmx_targets: dict[str, str],
) -> None:
    for sub in ("logs", "data", "checkpoints", "prometheus"):
        (settings.run_dir / sub).mkdir(parents=True, exist_ok=True)
    if "prometheus" in components:
        _write_prometheus_config(args, settings, components, jmx_targets)
    if "alertmanager" in components:
        _write_alertmanager_config(args, settings, components)
    (settings.run_dir / "Procfile").write_text(plan.procfile(processes), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_level)
    if args.drop_in is not None:
        return _drop_in(args)
    if not args.demo:
        return _start(args)
    if args.bootstrap_servers.strip():
        log.warning("--demo runs its own Kafka cluster: ignoring %s", args.bootstrap_servers)
    run_dir = args.run_dir.resolve()
    # The HES starts first and is waited for last: it and the cluster start side by side.
    with _demo_hes(run_dir, args.dry_run) as hes, _mock_cluster(run_dir, args.dry_run) as bootstrap:
        if bootstrap is None:
            return 1
        args.bootstrap_servers = bootstrap
        return _start(args, demo.traffic(), hes())


def _drop_in(args: argparse.Namespace) -> int:
    if not args.console_url:
        sys.stderr.write(
            "vigia-stack: error: --drop-in needs --console-url: the Dash app's address as "
            "on-call opens it, which every alert links to\n"
        )
        return 2
    written = write_drop_in(args.config_dir.resolve(), args.drop_in, args.cluster, args.console_url)
    log.info(
        "wrote %d files for an existing Prometheus and Alertmanager into %s",
        len(written),
        args.drop_in,
    )
    return 0


@contextlib.contextmanager
def _demo_hes(run_dir: Path, dry_run: bool) -> Iterator[Callable[[], plan.DemoHes | None]]:
    """The demo's HES database, hosted by a child process for as long as the stack runs; yields
    what waits for it. Without MariaDB the demo runs on without an HES, saying what installs it."""
    missing = demo.hes_missing()
    if missing:
        log.warning("not installed: MariaDB; `%s` adds the demo's HES database", missing)
        yield lambda: None
        return
    if dry_run:
        directory = demo.hes_dir(run_dir)
        port = demo.free_port()
        yield lambda: plan.DemoHes(directory / "writer.dsn", directory / "reader.dsn", port)
        return
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    host = demo.start_hes(run_dir)
    try:
        yield lambda: demo.wait_for_hes(host, run_dir)
    finally:
        demo.stop_host(host, timeout=demo.HES_STOP_SECONDS)


@contextlib.contextmanager
def _mock_cluster(run_dir: Path, dry_run: bool) -> Iterator[str | None]:
    """The demo's Kafka cluster, hosted by a child process for as long as the stack runs."""
    if dry_run:
        yield "mock-cluster:9092"
        return
    demo.forget_previous_cluster(run_dir)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    host = demo.start_mock_cluster(run_dir)
    try:
        yield demo.wait_for_bootstrap(host, run_dir)
    finally:
        demo.stop_host(host)


def _start(
    args: argparse.Namespace,
    traffic: plan.DemoTraffic | None = None,
    hes: plan.DemoHes | None = None,
) -> int:
    try:
        settings = replace(_settings(args, traffic), hes=hes)
        jmx_targets = _jmx_targets(args.jmx_target)
        components = _components(args, settings)
        processes = plan.build(settings, components)
        if not args.dry_run:
            _check_ports_free(processes, settings.listen_address)
        _prepare_run_dir(args, settings, components, processes, jmx_targets)
    except plan.PlanError as e:
        sys.stderr.write(f"vigia-stack: error: {e}\n")
        return 2
    if args.dry_run:
        sys.stdout.write(plan.procfile(processes))
        return 0
    log.info("starting %s; run directory %s", ", ".join(components), settings.run_dir)
    if settings.demo is not None:
        sys.stdout.write(demo.banner(settings, components))
        sys.stdout.flush()
    return run(
        processes,
        listen_address=settings.listen_address,
        log_dir=settings.run_dir / "logs",
        stop_timeout=args.stop_timeout,
        output=sys.stdout,
    )


if __name__ == "__main__":
    sys.exit(main())
