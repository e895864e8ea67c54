"""What `vigia-stack` runs: the chosen components and the exact command line of each (pure)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from vigia.launcher import spark_cluster

# Names match the docker-compose.yml services, so the Prometheus config can be rewritten by name.
COMPONENTS = (
    "exporter",
    "ingest",
    "simulator",
    "dashboard",
    "prometheus",
    "alertmanager",
    "heartbeat",
    "receiver",
)
# The simulator writes test traffic into `measure`: never into a real cluster unless asked for.
# `heartbeat` is the dead man's switch of the paging path (launcher/heartbeat.py).
DEFAULT_COMPONENTS = ("exporter", "ingest", "dashboard", "prometheus", "alertmanager", "heartbeat")
KAFKA_COMPONENTS = frozenset({"exporter", "ingest", "simulator"})
# Not compose services: the demo's stand-in for a pager and a ticketing system.
DEMO_ONLY = frozenset({"receiver"})
# Not compose services at all: compose's Alertmanager sends the heartbeat to an outside service.
NOT_IN_COMPOSE = DEMO_ONLY | {"heartbeat"}
# `--demo`: everything, with the simulator and the receiver.
DEMO_COMPONENTS = (*DEFAULT_COMPONENTS, "simulator", "receiver")
# Components are modules of this installation, run by the launcher's own interpreter: a console
# script found on PATH may belong to another copy of Vigía.
MODULES = {
    "exporter": "vigia.exporter.cli",
    "ingest": "vigia.ingest.cli",
    "simulator": "vigia.ingest.simulator.cli",
    "dashboard": "vigia.dashboard.cli",
    "receiver": "vigia.launcher.receiver",
    "heartbeat": "vigia.launcher.heartbeat",
}


@dataclass(frozen=True)
class DemoTraffic:
    """The demo's simulated HES: live readings and a periodic outage that Prometheus alerts on.

    Readings of a 15-minute period are sent during the 5 minutes after it ends. The simulated clock
    starts at the last quarter-hour boundary (`start`), so those 5 minutes are the first 5 of every
    15 after the simulator starts, and an outage `after` seconds into each quarter holds readings
    back: the HES backlog grows for `duration` seconds, then the backlog is released at once. The
    demo's alert (launcher/demo-rules.yml) fires on that backlog and resolves after the release.
    """

    start: str  # ISO-8601 UTC, a quarter-hour boundary
    meters: int = 2000  # 8,000 readings per quarter, ~27 messages/s while a quarter is sent
    outage_after: float = 90.0
    outage_duration: float = 150.0
    outage_every: float = 900.0


@dataclass(frozen=True)
class DemoHes:
    """The demo's HES database (launcher/mariadb.py) and how the stack uses it. Without Kafka
    Connect, a second simulator writes the same readings into it, where Connect would carry
    them from: the HES watch, the hop lags and the completeness ratio then read a real HES."""

    writer_dsn_file: Path  # the simulator's user (INSERT, UPDATE)
    reader_dsn_file: Path  # the exporter's and the ingest job's (SELECT, BINLOG MONITOR)
    simulator_port: int  # the HES simulator's /metrics (not scraped: it repeats the other's)


class PlanError(ValueError):
    """Invalid launcher configuration (the CLI exits 2 with this message)."""


@dataclass(frozen=True)
class Ports:
    exporter: int = 9308
    ingest: int = 9310
    simulator: int = 9311
    dashboard: int = 8050
    prometheus: int = 9090
    alertmanager: int = 9093
    receiver: int = 9097
    heartbeat: int = 9098
    # Spark's own defaults; worker n's web UI is spark_worker_ui + n - 1.
    spark_master: int = 7077
    spark_master_ui: int = 8080
    spark_worker_ui: int = 8081

    def of(self, component: str) -> int:
        return int(getattr(self, component))


@dataclass(frozen=True)
class Settings:
    bootstrap_servers: str
    kafka_options: tuple[str, ...]
    listen_address: str
    ports: Ports
    run_dir: Path
    prometheus_config: Path  # the generated local prometheus.yml
    alertmanager_config: Path
    prometheus_binary: str | None
    alertmanager_binary: str | None
    python: str = sys.executable  # the interpreter that runs the Python components
    demo: DemoTraffic | None = None
    hes: DemoHes | None = None
    # With the ingest job and > 0: a standalone master and this many one-core workers run it.
    spark_workers: int = 0
    spark_home: Path | None = None  # PySpark's package directory (None: not installed)


@dataclass(frozen=True)
class Process:
    name: str
    argv: tuple[str, ...]
    port: int
    health_path: str  # HTTP path that answers 200 once the process serves
    # Stopped once every other process has exited: the ingest job's Spark cluster, which the job
    # needs to finish its batch when it is asked to stop.
    stop_last: bool = False


def parse_names(values: Iterable[str]) -> list[str]:
    """`a,b` and repeated flags, validated against COMPONENTS."""
    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    unknown = sorted(set(names) - set(COMPONENTS))
    if unknown:
        raise PlanError(
            f"unknown component(s) {', '.join(unknown)}; choose from {', '.join(COMPONENTS)}"
        )
    return names


def choose(
    only: Sequence[str],
    without: Sequence[str],
    with_: Sequence[str],
    defaults: Sequence[str] = DEFAULT_COMPONENTS,
) -> list[str]:
    """Components to run, in COMPONENTS order. --only replaces the default set."""
    if only and with_:
        raise PlanError("--only and --with cannot be combined: list everything in --only")
    chosen = set(only) if only else set(defaults) | set(with_)
    chosen -= set(without)
    if not chosen:
        raise PlanError("no component left to run")
    return [c for c in COMPONENTS if c in chosen]


def client_host(listen_address: str) -> str:
    """Where local clients reach a server bound to `listen_address`."""
    return "127.0.0.1" if listen_address in ("0.0.0.0", "") else listen_address


def url(settings: Settings, component: str) -> str:
    host = client_host(settings.listen_address)
    return f"http://{host}:{settings.ports.of(component)}"


def compose_addresses(settings: Settings, components: Sequence[str]) -> dict[str, str]:
    """compose service name -> local host:port, for the components that run here."""
    host = client_host(settings.listen_address)
    return {c: f"{host}:{settings.ports.of(c)}" for c in components}


def build(settings: Settings, components: Sequence[str]) -> list[Process]:
    if KAFKA_COMPONENTS.intersection(components) and not settings.bootstrap_servers:
        raise PlanError(
            "no Kafka bootstrap servers: give --bootstrap-servers or VIGIA_KAFKA_BOOTSTRAP_SERVERS"
        )
    processes = [_process(settings, c) for c in components]
    if "simulator" in components and settings.demo and settings.hes:
        at = components.index("simulator") + 1
        processes.insert(at, _hes_simulator(settings, settings.demo, settings.hes))
    if "ingest" in components and settings.spark_workers > 0:
        at = components.index("ingest")
        processes[at:at] = _spark_cluster(settings)
    ports = {p.name: p.port for p in processes}
    if len(set(ports.values())) != len(ports):
        raise PlanError(f"two components share a port: {ports}")
    return processes


def spark_master_url(settings: Settings) -> str:
    return spark_cluster.master_url(
        client_host(settings.listen_address), settings.ports.spark_master
    )


def _spark_cluster(s: Settings) -> list[Process]:
    """The master, then the workers, as processes of the stack: their output goes to logs/ like
    everyone's, and they stop with it (supervisor.py stops them after the ingest job)."""
    if s.spark_home is None:
        raise PlanError("--spark-workers needs pyspark (the ingest extra), which is not installed")
    host, data = client_host(s.listen_address), s.run_dir / "data" / "spark"
    ports = s.ports
    daemons = [
        spark_cluster.master(
            s.spark_home, host, ports.spark_master, ports.spark_master_ui, data / "master"
        ),
        *(
            spark_cluster.worker(
                s.spark_home,
                n,
                spark_master_url(s),
                host,
                ports.spark_worker_ui + n - 1,
                data / f"worker-{n}",
            )
            for n in range(1, s.spark_workers + 1)
        ),
    ]
    return [
        _kept_running(
            s,
            Process(
                name=d.name,
                argv=("env", *(f"{k}={v}" for k, v in d.env.items()), *d.argv),
                port=d.ui_port,
                health_path="/json/",
                stop_last=True,
            ),
        )
        for d in daemons
    ]


def _kafka(settings: Settings) -> tuple[str, ...]:
    args: tuple[str, ...] = ("--bootstrap-servers", settings.bootstrap_servers)
    for option in settings.kafka_options:
        args += ("--kafka-option", option)
    return args


def _process(s: Settings, name: str) -> Process:
    address, port, data = s.listen_address, str(s.ports.of(name)), s.run_dir / "data"
    argv: tuple[str, ...]
    health = "/metrics"
    if name == "exporter":
        argv = (*_module(s, name), *_kafka(s), *_hes_watch(s), *_demo_retention(s))
        argv += ("--listen-address", address)
        argv += ("--port", port)
        health = "/healthz"
    elif name == "ingest":
        argv = (
            *_module(s, name),
            "run",
            *_kafka(s),
            *_spark_master(s),
            "--output",
            str(data / "parquet" / "measures"),
            "--quarantine",
            str(data / "parquet" / "quarantine"),
            "--checkpoint",
            str(s.run_dir / "checkpoints" / "ingest"),
            *_hes_reader(s),
            "--metrics-address",
            address,
            "--metrics-port",
            port,
        )
    elif name == "simulator":
        argv = (
            *_module(s, name),
            *(_demo_traffic(s.demo) if s.demo else ("live",)),
            *_kafka(s),
            "--metrics-address",
            address,
            "--metrics-port",
            port,
        )
    elif name == "dashboard":
        argv = (
            *_module(s, name),
            *(("--marker", "demo") if s.demo else ()),
            "--prometheus-url",
            url(s, "prometheus"),
            "--exporter-url",
            url(s, "exporter"),
            "--alertmanager-url",
            url(s, "alertmanager"),
            "--listen-address",
            address,
            "--port",
            port,
        )
        health = "/healthz"
    elif name == "prometheus":
        argv = (
            _binary(s.prometheus_binary, name),
            f"--config.file={s.prometheus_config}",
            f"--storage.tsdb.path={data / 'prometheus'}",
            f"--web.listen-address={address}:{port}",
            *_demo_quiet(s),
        )
        health = "/-/ready"
    elif name == "alertmanager":
        argv = (
            _binary(s.alertmanager_binary, name),
            f"--config.file={s.alertmanager_config}",
            f"--storage.path={data / 'alertmanager'}",
            f"--web.listen-address={address}:{port}",
            # A single instance: no gossip listener (it would take port 9094) and no peers.
            "--cluster.listen-address=",
            *_demo_quiet(s),
        )
        health = "/-/ready"
    elif name in ("receiver", "heartbeat"):
        argv = (*_module(s, name), "--listen-address", address, "--port", port)
        health = "/healthz"
    else:  # pragma: no cover - parse_names rejects anything else
        raise PlanError(f"unknown component {name}")
    # The driver binds loopback like the cluster, and like the demo (Spark warns otherwise).
    if name == "ingest" and (s.spark_workers > 0 or s.demo):
        argv = ("env", f"SPARK_LOCAL_IP={client_host(address)}", *argv)
    return _kept_running(
        s, Process(name=name, argv=argv, port=s.ports.of(name), health_path=health)
    )


# The mock cluster answers no DescribeConfigs: the exporter takes the demo's topics to have Kafka's
# defaults, so that the outage budget, the retention margins and the under-min-ISR light have a
# limit to read (the mock's topics: measure and the probe's).
DEMO_TOPIC_CONFIG = tuple(
    f"{topic}:{setting}"
    for topic in ("measure", "vigia-probe")
    for setting in (f"retention.ms={7 * 24 * 3600 * 1000}", "min.insync.replicas=1")
)


def _demo_retention(s: Settings) -> tuple[str, ...]:
    """The demo topics' configs; and no binlog margin: the demo runs no Kafka Connect, whose
    offsets topic it reads."""
    if not s.demo:
        return ()
    return ("--assumed-topic-config", ",".join(DEMO_TOPIC_CONFIG), "--connect-offsets-topic=")


def _demo_quiet(s: Settings) -> tuple[str, ...]:
    """Prometheus's and Alertmanager's two dozen start-up lines would fill the demo's console:
    there they say only what goes wrong."""
    return ("--log.level=warn",) if s.demo else ()


def _hes_reader(s: Settings) -> tuple[str, ...]:
    return ("--hes-dsn-file", str(s.hes.reader_dsn_file)) if s.hes else ()


def _hes_watch(s: Settings) -> tuple[str, ...]:
    """The exporter's watch of the demo's HES, which counts its day's rows every 30 s rather than
    every 5 minutes: a table of minutes of readings, where a real HES's holds days."""
    return (*_hes_reader(s), "--hes-count-interval", "30") if s.hes else ()


def _hes_simulator(s: Settings, demo: DemoTraffic, hes: DemoHes) -> Process:
    argv = (
        *_module(s, "simulator"),
        *_demo_traffic(demo),
        "--sink",
        "hes",
        "--hes-dsn-file",
        str(hes.writer_dsn_file),
        "--metrics-address",
        s.listen_address,
        "--metrics-port",
        str(hes.simulator_port),
    )
    process = Process(
        name="simulator-hes", argv=argv, port=hes.simulator_port, health_path="/metrics"
    )
    return _kept_running(s, process)


def _kept_running(s: Settings, process: Process) -> Process:
    """The process under launcher/keep_running.py, which starts it again when it crashes instead of
    letting its end stop the stack: whatever dies, Prometheus and Alertmanager stay to say so."""
    health = f"http://{client_host(s.listen_address)}:{process.port}{process.health_path}"
    wrapper = (s.python, "-m", "vigia.launcher.keep_running", "--name", process.name)
    return replace(process, argv=(*wrapper, "--health-url", health, "--", *process.argv))


def _spark_master(s: Settings) -> tuple[str, ...]:
    """Local mode, or the stack's own cluster (client mode: the driver is the ingest process)."""
    return ("--spark-master", spark_master_url(s)) if s.spark_workers > 0 else ()


def _module(s: Settings, name: str) -> tuple[str, ...]:
    return (s.python, "-m", MODULES[name])


def _demo_traffic(demo: DemoTraffic) -> tuple[str, ...]:
    return (
        "outage",
        "--start",
        demo.start,
        "--meters",
        str(demo.meters),
        "--outage-after",
        f"{demo.outage_after:g}",
        "--outage-duration",
        f"{demo.outage_duration:g}",
        "--outage-every",
        f"{demo.outage_every:g}",
    )


def _binary(path: str | None, name: str) -> str:
    if not path:
        raise PlanError(f"{name} is not installed (not on PATH); install it or leave it out")
    return path


def command_line(process: Process) -> str:
    """Shell command for honcho (it runs /bin/sh -c): exec, so signals reach the program itself."""
    return f"exec {shlex.join(process.argv)}"


def procfile(processes: Sequence[Process]) -> str:
    """Procfile text (honcho/foreman format) for the planned processes."""
    return "".join(f"{p.name}: {command_line(p)}\n" for p in processes)
