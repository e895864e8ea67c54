"""vigia-stack's choices, command lines and generated Prometheus config (no process started)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.compose import REPO, raw
from vigia.exporter.probe.runner import DEFAULT_TOPIC as PROBE_TOPIC
from vigia.launcher import cli, demo, packages, plan, spark_cluster, supervisor
from vigia.launcher.prometheus_config import (
    BROKER_HOST,
    KNOWN_COMPOSE_HOSTS,
    LocalConfig,
    localize,
    rewrite_groups,
)

PROMETHEUS_DIR = REPO / "prometheus"


def settings(tmp_path: Path, **changes: object) -> plan.Settings:
    base = plan.Settings(
        bootstrap_servers="b1:9092,b2:9092",
        kafka_options=("security.protocol=SASL_SSL",),
        listen_address="127.0.0.1",
        ports=plan.Ports(),
        run_dir=tmp_path,
        prometheus_config=tmp_path / "prometheus" / "prometheus.yml",
        alertmanager_config=tmp_path / "alertmanager" / "alertmanager.yml",
        prometheus_binary="/usr/bin/prometheus",
        alertmanager_binary="/usr/bin/prometheus-alertmanager",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def own_command(process: plan.Process) -> tuple[str, ...]:
    """The component's own command line, without launcher/keep_running.py in front of it."""
    if process.argv[1:3] == ("-m", "vigia.launcher.keep_running"):
        return process.argv[process.argv.index("--") + 1 :]
    return process.argv


def test_component_names_are_the_compose_service_names() -> None:
    services = set(raw()["services"])
    assert set(plan.COMPONENTS) - plan.NOT_IN_COMPOSE <= services
    brokers = {s for s in services if BROKER_HOST.fullmatch(s)}
    assert services - brokers == KNOWN_COMPOSE_HOSTS


def test_default_set_leaves_the_simulator_out_and_flags_adjust_it() -> None:
    assert plan.choose([], [], []) == [
        "exporter",
        "ingest",
        "dashboard",
        "prometheus",
        "alertmanager",
        "heartbeat",
    ]
    assert plan.choose([], ["ingest"], ["simulator"]) == [
        "exporter",
        "simulator",
        "dashboard",
        "prometheus",
        "alertmanager",
        "heartbeat",
    ]
    assert plan.choose(["dashboard", "exporter"], ["dashboard"], []) == ["exporter"]
    assert plan.parse_names(["exporter,dashboard", "ingest"]) == ["exporter", "dashboard", "ingest"]
    with pytest.raises(plan.PlanError, match=r"unknown component.*grafana"):
        plan.parse_names(["grafana"])
    with pytest.raises(plan.PlanError, match="cannot be combined"):
        plan.choose(["exporter"], [], ["simulator"])
    with pytest.raises(plan.PlanError, match="no component left"):
        plan.choose(["exporter"], ["exporter"], [])


def test_command_lines_use_the_contract_flags(tmp_path: Path) -> None:
    s = settings(
        tmp_path, listen_address="0.0.0.0", ports=plan.Ports(dashboard=18050), python="/venv/py"
    )
    processes = {p.name: p for p in plan.build(s, plan.COMPONENTS)}
    assert processes["exporter"].argv == (
        "/venv/py",
        "-m",
        "vigia.launcher.keep_running",
        "--name",
        "exporter",
        "--health-url",
        "http://127.0.0.1:9308/healthz",
        "--",
        "/venv/py",
        "-m",
        "vigia.exporter.cli",
        "--bootstrap-servers",
        "b1:9092,b2:9092",
        "--kafka-option",
        "security.protocol=SASL_SSL",
        "--listen-address",
        "0.0.0.0",
        "--port",
        "9308",
    )
    ingest = own_command(processes["ingest"])
    assert ingest[:4] == ("/venv/py", "-m", "vigia.ingest.cli", "run")
    assert ingest[ingest.index("--checkpoint") + 1] == str(tmp_path / "checkpoints" / "ingest")
    assert ingest[ingest.index("--metrics-port") + 1] == "9310"
    assert own_command(processes["simulator"])[2:4] == ("vigia.ingest.simulator.cli", "live")
    dashboard = own_command(processes["dashboard"])
    # Clients of a server bound to 0.0.0.0 reach it on 127.0.0.1.
    assert dashboard[dashboard.index("--prometheus-url") + 1] == "http://127.0.0.1:9090"
    assert dashboard[dashboard.index("--port") + 1] == "18050"
    assert "--cluster.listen-address=" in own_command(processes["alertmanager"])
    assert processes["prometheus"].health_path == "/-/ready"
    assert plan.procfile([processes["exporter"]]).startswith(
        "exporter: exec /venv/py -m vigia.launcher.keep_running --name exporter "
        "--health-url http://127.0.0.1:9308/healthz -- /venv/py -m vigia.exporter"
    )


def test_every_component_runs_under_the_restart_wrapper_with_its_health_url(
    tmp_path: Path,
) -> None:
    """Whatever dies, nothing stops the stack but a stop asked for: Prometheus and Alertmanager
    stay up to page about the ingest job, the Spark cluster or the simulator."""
    s = settings(tmp_path, spark_workers=1, spark_home=Path("/py/pyspark"))
    processes = plan.build(s, plan.COMPONENTS)
    assert {p.name for p in processes if p.argv != own_command(p)} == {
        *plan.COMPONENTS,
        "spark-master",
        "spark-worker-1",
    }
    for process in processes:
        wrapper = process.argv[: process.argv.index("--")]
        assert wrapper[wrapper.index("--name") + 1] == process.name
        url = f"http://127.0.0.1:{process.port}{process.health_path}"
        assert wrapper[wrapper.index("--health-url") + 1] == url


def test_components_run_on_the_launchers_own_interpreter(tmp_path: Path) -> None:
    """Not console scripts from PATH, which may belong to another installation of Vigía."""
    processes = plan.build(settings(tmp_path), plan.COMPONENTS)
    python = [p for p in processes if p.name not in ("prometheus", "alertmanager")]
    # The restart wrapper and the component it runs alike.
    argvs = [p.argv for p in python] + [own_command(p) for p in python]
    assert {argv[:2] for argv in argvs} == {(sys.executable, "-m")}
    for argv in argvs:  # each module exists in this installation and is runnable
        spec = importlib.util.find_spec(argv[2])
        assert spec is not None and spec.origin is not None, argv[2]
        assert 'if __name__ == "__main__":' in Path(spec.origin).read_text(), argv[2]


def test_demo_plan_adds_the_outage_traffic_the_marker_and_the_receiver(tmp_path: Path) -> None:
    traffic = demo.traffic(now=1_763_950_000.0)  # 2025-11-24 02:06:40 UTC
    assert traffic.start == "2025-11-24T02:00:00Z"  # the last quarter-hour boundary
    s = settings(tmp_path, demo=traffic)
    assert plan.choose([], [], [], plan.DEMO_COMPONENTS) == list(plan.COMPONENTS)
    processes = {p.name: p for p in plan.build(s, plan.COMPONENTS)}
    simulator = own_command(processes["simulator"])
    assert simulator[3] == "outage"
    for flag, value in (
        ("--start", traffic.start),
        ("--outage-after", "90"),
        ("--outage-duration", "150"),
        ("--outage-every", "900"),
    ):
        assert simulator[simulator.index(flag) + 1] == value, flag
    assert own_command(processes["dashboard"])[3:5] == ("--marker", "demo")
    assert processes["receiver"].health_path == "/healthz"
    # Missing Debian packages drop what needs them, nothing else.
    assert demo.runnable(plan.COMPONENTS, ["prometheus-alertmanager"]) == [
        "exporter",
        "ingest",
        "simulator",
        "dashboard",
        "prometheus",
    ]
    assert packages.java_major('openjdk version "17.0.21.1" 2026-11-17') == 17
    assert packages.java_major('java version "1.8.0_392"') == 8
    assert packages.java_major("nothing") is None


def test_spark_workers_run_the_ingest_job_on_a_standalone_cluster_of_the_stack(
    tmp_path: Path,
) -> None:
    s = settings(
        tmp_path, listen_address="0.0.0.0", spark_workers=2, spark_home=Path("/py/pyspark")
    )
    processes = {p.name: p for p in plan.build(s, plan.COMPONENTS)}
    names = list(processes)
    cluster = ["spark-master", "spark-worker-1", "spark-worker-2"]
    assert names[names.index("ingest") - 3 : names.index("ingest")] == cluster
    master, *workers = (processes[n] for n in cluster)
    # Clients reach a 0.0.0.0 stack on loopback: the cluster binds and advertises that address.
    url = "spark://127.0.0.1:7077"
    assert own_command(master) == (
        "env",
        "SPARK_HOME=/py/pyspark",
        "SPARK_LOCAL_IP=127.0.0.1",
        f"SPARK_LOCAL_DIRS={tmp_path / 'data' / 'spark' / 'master' / 'local'}",
        "SPARK_DAEMON_MEMORY=256m",
        f"SPARK_DAEMON_JAVA_OPTS={spark_cluster.QUICK_JVM}",
        "SPARK_MASTER_OPTS=-Dspark.master.rest.enabled=false",
        "/py/pyspark/bin/spark-class",
        spark_cluster.MASTER_CLASS,
        *("--host", "127.0.0.1", "--port", "7077", "--webui-port", "8080"),
    )
    for n, worker in enumerate(workers, start=1):
        argv = worker.argv[worker.argv.index("/py/pyspark/bin/spark-class") + 1 :]
        assert argv == (
            spark_cluster.WORKER_CLASS,
            url,
            *("--host", "127.0.0.1", "--webui-port", str(8080 + n)),
            *("--cores", "1", "--memory", "1g"),
            *("--work-dir", str(tmp_path / "data" / "spark" / f"worker-{n}" / "work")),
        )
        assert worker.port == 8080 + n
    for daemon in (master, *workers):
        assert daemon.health_path == "/json/"
        assert daemon.stop_last  # after the job, which needs its executors to end a batch
    assert not any(p.stop_last for n, p in processes.items() if n not in cluster)
    ingest = own_command(processes["ingest"])
    assert ingest[:5] == ("env", "SPARK_LOCAL_IP=127.0.0.1", *_module_run())
    assert ingest[ingest.index("--spark-master") + 1] == url
    assert " -- env SPARK_HOME=/py/pyspark " in plan.procfile(workers)


def _module_run() -> tuple[str, ...]:
    return (sys.executable, "-m", "vigia.ingest.cli")


def test_without_spark_workers_the_job_runs_in_local_mode(tmp_path: Path) -> None:
    for s, components in (
        (settings(tmp_path), plan.COMPONENTS),
        # A cluster is the ingest job's: none without it.
        (settings(tmp_path, spark_workers=2, spark_home=tmp_path), ["exporter"]),
    ):
        processes = plan.build(s, components)
        assert [p.name for p in processes] == list(components)
        for process in processes:
            assert "--spark-master" not in process.argv
            assert own_command(process)[0] != "env"
    with pytest.raises(plan.PlanError, match="needs pyspark"):
        plan.build(settings(tmp_path, spark_workers=1), ["ingest"])
    with pytest.raises(plan.PlanError, match="share a port"):
        ports = plan.Ports(spark_worker_ui=8049)  # worker 2 on the Dash app's 8050
        plan.build(
            settings(tmp_path, spark_workers=2, spark_home=tmp_path, ports=ports),
            ["ingest", "dashboard"],
        )


def test_the_master_counts_the_workers_it_lists_alive() -> None:
    state = {"workers": [{"state": "ALIVE"}, {"state": "DEAD"}, {"state": "ALIVE"}]}
    assert spark_cluster.alive_workers(state) == 2
    assert spark_cluster.alive_workers({"workers": []}) == 0


def test_dry_run_plans_the_cluster_from_the_installed_pyspark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIGIA_STACK_SPARK_WORKERS", "1")
    argv = ["--dry-run", "--bootstrap-servers", "b:9092", "--only", "ingest"]
    assert cli.main([*argv, "--run-dir", str(tmp_path)]) == 0
    procfile = capsys.readouterr().out
    assert [line.split(":")[0] for line in procfile.splitlines()] == [
        "spark-master",
        "spark-worker-1",
        "ingest",
    ]
    home = spark_cluster.pyspark_home()
    assert home is not None and (home / "bin" / "spark-class").is_file()
    assert f"{home / 'bin' / 'spark-class'} {spark_cluster.MASTER_CLASS}" in procfile
    assert "--spark-master spark://127.0.0.1:7077" in procfile


def test_invalid_plans_say_why(tmp_path: Path) -> None:
    with pytest.raises(plan.PlanError, match="bootstrap"):
        plan.build(settings(tmp_path, bootstrap_servers=""), ["exporter"])
    # Prometheus and the dashboard need no Kafka.
    assert len(plan.build(settings(tmp_path, bootstrap_servers=""), ["dashboard"])) == 1
    with pytest.raises(plan.PlanError, match="share a port"):
        plan.build(settings(tmp_path, ports=plan.Ports(ingest=9308)), ["exporter", "ingest"])
    with pytest.raises(plan.PlanError, match="prometheus is not installed"):
        plan.build(settings(tmp_path, prometheus_binary=None), ["prometheus"])


def _local(tmp_path: Path, components: list[str], jmx: dict[str, str]) -> LocalConfig:
    s = settings(tmp_path, ports=plan.Ports(exporter=19308))
    return localize(
        yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text()),
        source_dir=PROMETHEUS_DIR,
        addresses=plan.compose_addresses(s, components),
        jmx_targets=jmx,
        alertmanager="127.0.0.1:9093" if "alertmanager" in components else None,
        target_dir=tmp_path / "targets",
        read_target_file=lambda path: json.loads(path.read_text()),
    )


def test_local_prometheus_config_points_every_target_at_this_machine(tmp_path: Path) -> None:
    components = ["exporter", "ingest", "prometheus", "alertmanager"]
    local = _local(tmp_path, components, {"1": "k1:11404"})
    groups = [g for gs in local.target_files.values() for g in gs]
    assert {t for g in groups for t in g["targets"]} == {
        "127.0.0.1:19308",
        "127.0.0.1:9310",
        "127.0.0.1:9090",
        "127.0.0.1:9093",
        "k1:11404",
    }
    assert {"targets": ["k1:11404"], "labels": {"broker": "1"}} in groups
    config = local.config
    jobs = {j["job_name"] for j in config["scrape_configs"]}
    assert "vigia-simulator" not in jobs  # not running here: no target, no job
    for job in config["scrape_configs"]:
        for sd in job["file_sd_configs"]:
            assert all(Path(f).parent == tmp_path / "targets" for f in sd["files"])
    assert all(Path(p).is_absolute() for p in config["rule_files"])
    assert config["alerting"]["alertmanagers"][0]["static_configs"] == [
        {"targets": ["127.0.0.1:9093"]}
    ]


def test_without_jmx_targets_or_alertmanager_those_parts_are_left_out(tmp_path: Path) -> None:
    config = _local(tmp_path, ["exporter", "prometheus"], {}).config
    assert "alerting" not in config
    assert {j["job_name"] for j in config["scrape_configs"]} == {"vigia-exporter", "prometheus"}


def test_target_groups_keep_labels_and_foreign_hosts() -> None:
    groups: list[dict[str, Any]] = [
        {"targets": ["exporter:9308", "10.0.0.5:9308"], "labels": {"site": "a"}},
        {"targets": ["grafana:3000"]},
        {"targets": ["kafka-1:9404"], "labels": {"broker": "1", "site": "a"}},
        {"targets": ["kafka-2:9404"], "labels": {"broker": "2", "site": "a"}},
    ]
    assert rewrite_groups(groups, {"exporter": "127.0.0.1:1"}, {"101": "b:1", "102": "c:1"}) == [
        {"targets": ["127.0.0.1:1", "10.0.0.5:9308"], "labels": {"site": "a"}},
        {"targets": ["b:1"], "labels": {"broker": "101", "site": "a"}},
        {"targets": ["c:1"], "labels": {"broker": "102", "site": "a"}},
    ]


def test_dry_run_writes_a_valid_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pager = tmp_path / "pager-url"
    pager.write_text("https://pager.example.org/hook\n")
    code = cli.main(
        [
            "--dry-run",
            "--bootstrap-servers",
            "127.0.0.1:19092",
            "--run-dir",
            str(tmp_path / "run"),
            "--with",
            "simulator",
            "--jmx-target",
            "1=127.0.0.1:11404",
            "--alertmanager-pager-url-file",
            str(pager),
            "--prometheus-binary",
            "/usr/bin/prometheus",
            "--alertmanager-binary",
            "/usr/bin/prometheus-alertmanager",
        ]
    )
    assert code == 0
    procfile = (tmp_path / "run" / "Procfile").read_text()
    assert capsys.readouterr().out == procfile
    names = [line.split(":")[0] for line in procfile.splitlines()]
    assert names == [c for c in plan.COMPONENTS if c not in plan.DEMO_ONLY]
    alertmanager_yml = tmp_path / "run" / "alertmanager" / "alertmanager.yml"
    assert "https://pager.example.org/hook" in alertmanager_yml.read_text()
    assert alertmanager_yml.stat().st_mode & 0o777 == 0o600
    prometheus_yml = tmp_path / "run" / "prometheus" / "prometheus.yml"
    if shutil.which("promtool"):
        check = subprocess.run(
            ["promtool", "check", "config", prometheus_yml], capture_output=True, text=True
        )
        assert check.returncode == 0, check.stdout + check.stderr
    if shutil.which("amtool"):
        check = subprocess.run(
            ["amtool", "check-config", alertmanager_yml], capture_output=True, text=True
        )
        assert check.returncode == 0, check.stdout + check.stderr


def test_demo_dry_run_links_alerts_to_its_dash_app_and_notifies_its_receiver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    argv = ["--demo", "--dry-run", "--run-dir", str(run), "--dashboard-port", "18050"]
    argv += ["--receiver-port", "19097", "--prometheus-binary", "/usr/bin/prometheus"]
    argv += ["--alertmanager-binary", "/usr/bin/prometheus-alertmanager"]
    assert cli.main(argv) == 0
    procfile = (run / "Procfile").read_text()
    assert "receiver: exec " in procfile and " outage --start " in procfile
    config = yaml.safe_load((run / "prometheus" / "prometheus.yml").read_text())
    labels = config["global"]["external_labels"]
    assert labels["vigia_console_url"] == "http://127.0.0.1:18050"
    assert str(demo.RULES) in config["rule_files"]
    alertmanager_yml = (run / "alertmanager" / "alertmanager.yml").read_text()
    assert "http://127.0.0.1:19097/pager" in alertmanager_yml
    assert "http://127.0.0.1:19097/ticket" in alertmanager_yml
    if shutil.which("promtool"):
        rules = [str(demo.RULES), *map(str, sorted(PROMETHEUS_DIR.glob("rules/*.yml")))]
        check = subprocess.run(["promtool", "check", "rules", *rules], capture_output=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_demo_without_prometheus_and_alertmanager_says_how_to_install_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "hes_missing", lambda: "sudo apt-get install -y mariadb-server")
    argv = ["--demo", "--dry-run", "--run-dir", str(tmp_path)]
    assert cli.main([*argv, "--prometheus-binary", "", "--alertmanager-binary", ""]) == 0
    procfile = (tmp_path / "Procfile").read_text()
    assert [line.split(":")[0] for line in procfile.splitlines()] == [
        "exporter",
        "ingest",
        "simulator",
        "dashboard",
    ]
    hes, warning = [r.getMessage() for r in caplog.records if "apt-get" in r.getMessage()]
    assert "`sudo apt-get install -y prometheus prometheus-alertmanager`" in warning
    assert warning.endswith("without prometheus, alertmanager, heartbeat, receiver")
    assert hes == (
        "not installed: MariaDB; `sudo apt-get install -y mariadb-server` adds the demo's HES "
        "database"
    )
    assert "--hes-dsn" not in procfile


def test_the_demo_with_mariadb_writes_the_readings_into_its_hes_too_and_watches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "hes_missing", lambda: None)
    assert cli.main(["--demo", "--dry-run", "--run-dir", str(tmp_path)]) == 0
    lines = (tmp_path / "Procfile").read_text().splitlines()
    commands = {line.split(":")[0]: line.split("--", 1)[1] for line in lines}
    assert list(commands)[2:4] == ["simulator", "simulator-hes"]
    hes = tmp_path / "data" / "hes"
    # The same traffic as the Kafka simulator's, into the HES, by the writer; no password shows.
    kafka_traffic = commands["simulator"].split(" outage ")[1].split(" --bootstrap-servers")[0]
    assert (
        f" outage {kafka_traffic} --sink hes --hes-dsn-file {hes / 'writer.dsn'} "
        in (commands["simulator-hes"])
    )
    for reader in ("exporter", "ingest"):
        assert f"--hes-dsn-file {hes / 'reader.dsn'}" in commands[reader], reader
    assert "--hes-dsn-file" not in commands["dashboard"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "grafana"], "unknown component(s) grafana"),
        (["--exporter-port", "70000"], "70000 is not a port number"),
        (["--only", "exporter"], "no Kafka bootstrap servers"),
        (["--jmx-target", "kafka1:9404"], "is not ID=HOST:PORT"),
        (["--only", "prometheus", "--prometheus-binary", ""], "prometheus is not installed"),
        (["--spark-workers", "-1"], "-1 is negative"),
        (
            ["--bootstrap-servers", "127.0.0.1:19092", "--config-dir", "/nowhere"],
            "/nowhere/prometheus.yml, /nowhere/alertmanager.yml, "
            "/nowhere/render-alertmanager-config.sh missing (--config-dir); "
            "`--without prometheus,alertmanager` runs without it",
        ),
        (
            [
                *("--bootstrap-servers", "127.0.0.1:19092", "--config-dir", "/nowhere"),
                *("--without", "alertmanager", "--prometheus-binary", ""),
            ],
            "/nowhere/prometheus.yml missing (--config-dir); `--without prometheus`",
        ),
    ],
)
def test_invalid_configuration_exits_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_free = ["--bootstrap-servers", ""] if "--bootstrap-servers" not in argv else []
    try:
        code = cli.main([*env_free, "--dry-run", "--run-dir", str(tmp_path), *argv])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code  # type: ignore[assignment]
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and message in err, err


def test_a_missing_binary_is_skipped_unless_asked_for(tmp_path: Path) -> None:
    code = cli.main(
        [
            "--dry-run",
            "--bootstrap-servers",
            "127.0.0.1:19092",
            "--run-dir",
            str(tmp_path),
            "--prometheus-binary",
            "",
            "--alertmanager-binary",
            "",
        ]
    )
    assert code == 0
    names = [line.split(":")[0] for line in (tmp_path / "Procfile").read_text().splitlines()]
    assert names == ["exporter", "ingest", "dashboard"]


def test_without_prometheus_and_alertmanager_their_config_is_not_needed(tmp_path: Path) -> None:
    argv = ["--dry-run", "--bootstrap-servers", "127.0.0.1:19092", "--run-dir", str(tmp_path)]
    assert (
        cli.main([*argv, "--config-dir", "/nowhere", "--without", "prometheus,alertmanager"]) == 0
    )
    names = [line.split(":")[0] for line in (tmp_path / "Procfile").read_text().splitlines()]
    assert names == ["exporter", "ingest", "dashboard"]


def test_a_port_in_time_wait_is_free_to_the_next_run() -> None:
    """A previous run's closed connections (TIME-WAIT) do not keep its ports from the next."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server side closes first: its end waits in TIME-WAIT
        client.close()
    process = plan.Process(name="exporter", argv=(), port=port, health_path="/healthz")
    cli._check_ports_free([process], "127.0.0.1")
    with socket.create_server(("127.0.0.1", port)), pytest.raises(plan.PlanError, match="in use"):
        cli._check_ports_free([process], "127.0.0.1")


def test_ctrl_c_that_stopped_every_component_cleanly_exits_0() -> None:
    sigint, sigterm = 128 + signal.SIGINT, 128 + signal.SIGTERM
    assert supervisor.exit_status(sigint, [0, -signal.SIGTERM, 0]) == 0
    assert supervisor.exit_status(sigterm, [0, 0]) == 0
    assert supervisor.exit_status(sigint, [0, 1]) == sigint  # one failed to stop cleanly
    assert supervisor.exit_status(sigint, [0, -signal.SIGKILL]) == sigint
    assert supervisor.exit_status(1, [1, 0]) == 1  # a component exited by itself
    # A JVM (a Spark master or worker) exits 128 + SIGTERM once its shutdown hooks have run.
    assert supervisor.exit_status(sigterm, [0, 128 + signal.SIGTERM]) == 0


def test_the_spark_cluster_gets_its_sigterm_once_the_job_has_stopped(tmp_path: Path) -> None:
    """The ingest job finishes its batch on its executors when asked to stop: its cluster stops
    after it, and cleanly (here: exit 0 only if the job's 1 s stop has ended before)."""
    import io
    import threading

    done = tmp_path / "job-stopped"
    loop = "while :; do sleep 0.1; done"
    job = plan.Process(
        name="ingest",
        argv=("sh", "-c", f"trap 'sleep 1; touch {done}; exit 0' TERM; {loop}"),
        port=1,
        health_path="/",
    )
    cluster = plan.Process(
        name="spark-master",
        argv=("sh", "-c", f"trap 'test -e {done}; exit $?' TERM; {loop}"),
        port=2,
        health_path="/",
        stop_last=True,
    )
    output = io.StringIO()
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    code = supervisor.run(
        [cluster, job], listen_address="127.0.0.1", log_dir=tmp_path, stop_timeout=10, output=output
    )
    assert code == 0, output.getvalue()


def test_a_component_that_ignores_sigterm_is_killed_once_and_the_stop_is_not_clean(
    tmp_path: Path,
) -> None:
    import io
    import threading

    stubborn = plan.Process(
        name="stubborn",
        argv=("sh", "-c", "trap '' TERM; sleep 20 & wait"),
        port=1,
        health_path="/",
    )
    # honcho counts the stop timeout from the first process that stopped.
    quick = plan.Process(name="quick", argv=("sleep", "20"), port=2, health_path="/")
    output = io.StringIO()
    # SIGTERM once the process runs (honcho handles it in this, the main, thread).
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    code = supervisor.run(
        [stubborn, quick],
        listen_address="127.0.0.1",
        log_dir=tmp_path,
        stop_timeout=1,
        output=output,
    )
    assert code == 128 + signal.SIGTERM, output.getvalue()
    assert output.getvalue().count("stubborn did not stop within 1 s: SIGKILL") == 1


def test_the_rendered_alertmanager_sends_the_heartbeat_to_the_heartbeat_component(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--dry-run", "--bootstrap-servers", "127.0.0.1:19092", "--heartbeat-port", "19098"]
    argv += ["--prometheus-binary", "/usr/bin/prometheus"]
    argv += ["--alertmanager-binary", "/usr/bin/prometheus-alertmanager"]
    assert cli.main([*argv, "--run-dir", str(tmp_path / "local")]) == 0
    procfile = (tmp_path / "local" / "Procfile").read_text()
    (line,) = [x for x in procfile.splitlines() if x.startswith("heartbeat:")]
    assert "-m vigia.launcher.heartbeat --listen-address 127.0.0.1 --port 19098" in line
    config = yaml.safe_load((tmp_path / "local" / "alertmanager" / "alertmanager.yml").read_text())
    (heartbeat,) = [r for r in config["receivers"] if r["name"] == "heartbeat"]
    assert heartbeat["webhook_configs"][0]["url"] == "http://127.0.0.1:19098/heartbeat"

    # An outside dead man's switch replaces the local one; no Alertmanager, no heartbeat.
    outside = tmp_path / "heartbeat-url"
    outside.write_text("https://dms.example.org/ping/abc\n")
    run = tmp_path / "outside"
    assert (
        cli.main([*argv, "--run-dir", str(run), "--alertmanager-heartbeat-url-file", str(outside)])
        == 0
    )
    assert "heartbeat:" not in (run / "Procfile").read_text()
    assert (
        "https://dms.example.org/ping/abc"
        in (run / "alertmanager" / "alertmanager.yml").read_text()
    )
    run = tmp_path / "no-alertmanager"
    assert cli.main([*argv, "--run-dir", str(run), "--without", "alertmanager"]) == 0
    assert "heartbeat:" not in (run / "Procfile").read_text()


def test_the_demo_gives_its_topic_a_retention_and_keeps_its_console_short(tmp_path: Path) -> None:
    assert cli.main(["--demo", "--dry-run", "--run-dir", str(tmp_path)]) == 0
    lines = (tmp_path / "Procfile").read_text().splitlines()
    commands = {line.split(":")[0]: line for line in lines}
    # The mock answers no DescribeConfigs, and the demo has no Kafka Connect offsets to read.
    assumed = (
        "--assumed-topic-config measure:retention.ms=604800000,measure:min.insync.replicas=1,"
        "vigia-probe:retention.ms=604800000,vigia-probe:min.insync.replicas=1 "
        "--connect-offsets-topic= "
    )
    assert assumed in commands["exporter"]
    assert f"{PROBE_TOPIC}:min.insync.replicas=1" in commands["exporter"]  # the probe's topic
    for name in ("prometheus", "alertmanager"):
        assert "--log.level=warn" in commands[name], name
    assert "SPARK_LOCAL_IP=127.0.0.1" in commands["ingest"]
    real_argv = ["--dry-run", "--bootstrap-servers", "b:9092", "--run-dir", str(tmp_path / "r")]
    assert cli.main(real_argv) == 0
    real = (tmp_path / "r" / "Procfile").read_text()
    assert "--assumed-topic-config" not in real and "--log.level" not in real
