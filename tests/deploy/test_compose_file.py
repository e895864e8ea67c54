"""docker-compose.yml checked by construction (there is no Docker daemon to run it)."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import time
import tomllib
import urllib.request
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import free_port
from tests.deploy.compose import (
    COMPOSE_FILE,
    REPO,
    MissingVariable,
    bind_sources,
    defaults_used,
    env_example,
    published_ports,
    raw,
    resolved,
    variables_used,
)
from tests.scripts import console_script
from vigia.launcher.plan import COMPONENTS, NOT_IN_COMPOSE

# The variable compose refuses to run without; .env.example leaves it empty on purpose.
REQUIRED = {"GRAFANA_ADMIN_PASSWORD": "not-admin"}
DEFAULTS = {k: v for k, v in env_example().items() if v} | REQUIRED
SERVICES: dict[str, dict[str, Any]] = resolved(DEFAULTS)["services"]
RAW_SERVICES: dict[str, dict[str, Any]] = raw()["services"]
PROJECT_SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
PROMETHEUS_DIR = REPO / "prometheus"

# Where Vigía components listen unless compose sets the flag or variable (docs/development.md).
COMPONENT_PORTS = {
    "vigia-exporter": ("--port", "VIGIA_EXPORTER_PORT", 9308),
    "vigia-ingest": ("--metrics-port", "VIGIA_INGEST_METRICS_PORT", 9310),
    "vigia-simulate": ("--metrics-port", "VIGIA_SIMULATE_METRICS_PORT", 9311),
    "vigia-dashboard": ("--port", "VIGIA_DASHBOARD_PORT", 8050),
}
BIND_ADDRESS = {
    "vigia-exporter": ("--listen-address", "VIGIA_EXPORTER_LISTEN_ADDRESS"),
    "vigia-ingest": ("--metrics-address", "VIGIA_INGEST_METRICS_ADDRESS"),
    "vigia-simulate": ("--metrics-address", "VIGIA_SIMULATE_METRICS_ADDRESS"),
    "vigia-dashboard": ("--listen-address", "VIGIA_DASHBOARD_LISTEN_ADDRESS"),
}


def command(service: dict[str, Any]) -> list[str]:
    cmd = service.get("command", [])
    return cmd.split() if isinstance(cmd, str) else [str(c) for c in cmd]


def project_services() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in SERVICES.items() if command(s) and command(s)[0] in PROJECT_SCRIPTS}


def flag_value(argv: list[str], flag: str) -> str | None:
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(flag + "="):
            return token.split("=", 1)[1]
    return None


def dockerfile_env(path: Path) -> dict[str, str]:
    """ENV defaults of a Dockerfile (`ENV A=1 \\ B=2` form)."""
    text = path.read_text().replace("\\\n", " ")
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            out.update(pair.partition("=")[::2] for pair in line[4:].split() if "=" in pair)
    return out


def listening_ports(name: str, service: dict[str, Any]) -> set[int]:
    """The container ports a service's own configuration makes it listen on."""
    env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
    argv = command(service)
    if "KAFKA_LISTENERS" in env:
        dockerfile = REPO / service["build"]["context"] / service["build"]["dockerfile"]
        jmx_port = env.get("JMX_EXPORTER_PORT") or dockerfile_env(dockerfile)["JMX_EXPORTER_PORT"]
        return {int(p) for p in re.findall(r":(\d+)", env["KAFKA_LISTENERS"])} | {int(jmx_port)}
    if argv and argv[0] in COMPONENT_PORTS:
        flag, variable, default = COMPONENT_PORTS[argv[0]]
        return {int(flag_value(argv, flag) or env.get(variable) or default)}
    if argv and argv[0].endswith("spark-class"):  # a standalone master or worker
        return {int(flag_value(argv, "--port") or 0), int(flag_value(argv, "--webui-port") or 0)}
    listen = flag_value(argv, "--web.listen-address")
    if listen:
        return {int(listen.rsplit(":", 1)[1])}
    if str(service.get("image", "")).startswith("mysql:"):
        return {int(flag_value(argv, "--port") or 3306)}
    worker = [REPO / src for src, target in bind_sources(service) if target.endswith(".properties")]
    if worker:  # a Kafka Connect worker: its REST listener and the JMX agent's port
        properties = dict(
            line.split("=", 1) for line in worker[0].read_text().splitlines() if "=" in line
        )
        dockerfile = REPO / service["build"]["context"] / service["build"]["dockerfile"]
        options = env.get("KAFKA_OPTS") or dockerfile_env(dockerfile)["KAFKA_OPTS"]
        agent = re.search(r"jmx_prometheus_javaagent\.jar=(\d+):", options)
        assert agent, f"{name}: no JMX agent port in KAFKA_OPTS"
        return {int(properties["listeners"].rsplit(":", 1)[1]), int(agent[1])}
    if str(service.get("image", "")).startswith("grafana/grafana:"):
        return {int(env.get("GF_SERVER_HTTP_PORT", 3000))}
    return set()


@functools.cache
def help_text(*argv: str) -> str:
    command = [console_script(argv[0]), *argv[1:], "--help"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"{' '.join(argv)} --help failed: {result.stderr[-500:]}"
    return result.stdout


def test_validates_against_the_compose_specification_schema() -> None:
    schema_file = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    for label, document in (("as written", raw()), ("interpolated", resolved(DEFAULTS))):
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
        assert not errors, f"{label}: {errors}"


def test_every_image_is_pinned_to_a_version() -> None:
    pinned = re.compile(r"^[\w./-]+:(?!latest$)[\w.-]*\d[\w.-]*$")
    for name, service in SERVICES.items():
        assert "image" in service, f"{name} has no image (a build needs a versioned tag too)"
        assert pinned.match(service["image"]), f"{name}: {service['image']} is not pinned"


def test_dockerfile_base_images_are_pinned() -> None:
    for dockerfile in sorted((REPO / "docker").glob("*/Dockerfile")):
        text = dockerfile.read_text()
        args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
        bases = re.findall(r"^FROM (\S+)", text, re.M)
        assert bases, dockerfile
        for base in bases:
            image = base
            for name, value in args.items():
                image = image.replace("${" + name + "}", value)
            assert re.match(r"^[\w./-]+:[\w.-]*\d[\w.-]*$", image), f"{dockerfile}: FROM {image}"


def test_build_contexts_and_dockerfiles_exist() -> None:
    builds = {n: s["build"] for n, s in SERVICES.items() if "build" in s}
    assert set(builds) >= {"kafka-1", "kafka-2", "kafka-3", "exporter", "ingest"}
    for name, build in builds.items():
        context = REPO / build["context"]
        assert context.is_dir(), f"{name}: build context {context} is missing"
        assert (context / build.get("dockerfile", "Dockerfile")).is_file(), name
        for source in re.findall(
            r"^(?:COPY|ADD) (?!--from)(?:--\S+ )*(\S+) ",
            (context / build.get("dockerfile", "Dockerfile")).read_text(),
            re.M,
        ):
            if "://" not in source and "$" not in source:
                assert (context / source).exists(), f"{name}: COPY source {source} is missing"


def test_every_mounted_path_and_secret_file_exists() -> None:
    mounts = [(n, src) for n, s in SERVICES.items() for src, _ in bind_sources(s)]
    assert len(mounts) >= 8
    for name, source in mounts:
        assert (REPO / source).exists(), f"{name} mounts {source}, which does not exist"
    for name, secret in resolved(DEFAULTS).get("secrets", {}).items():
        assert (REPO / secret["file"]).is_file(), f"secret {name}: {secret['file']} is missing"


def test_published_host_ports_are_unique_and_private_by_default() -> None:
    published = [(n, *p) for n, s in SERVICES.items() for p in published_ports(s)]
    host_ports = [port for _, _, port, _ in published]
    assert len(host_ports) == len(set(host_ports)), sorted(host_ports)
    assert {address for _, address, _, _ in published} == {"127.0.0.1"}
    # Every published port is configurable through .env.
    for name, service in RAW_SERVICES.items():
        for entry in service.get("ports", []):
            assert re.fullmatch(r"\$\{PUBLISH_ADDRESS:-127\.0\.0\.1\}:\$\{\w+:-\d+\}:\d+", entry), (
                name,
                entry,
            )


def test_expose_lists_exactly_the_ports_each_service_listens_on() -> None:
    for name, service in SERVICES.items():
        listening = listening_ports(name, service)
        assert {int(p) for p in service.get("expose", [])} == listening, name
        for _, _, container_port in published_ports(service):
            assert container_port in listening, f"{name} publishes {container_port}"


def _scrape_targets() -> list[tuple[str, str]]:
    """(job, host:port) of every Prometheus target, static or file_sd, and of Alertmanager."""
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    jobs = [(j["job_name"], j) for j in config["scrape_configs"]]
    jobs += [("alertmanagers", am) for am in config.get("alerting", {}).get("alertmanagers", [])]
    out = []
    for job, section in jobs:
        groups = list(section.get("static_configs", []))
        for sd in section.get("file_sd_configs", []):
            for pattern in sd["files"]:
                files = sorted(PROMETHEUS_DIR.glob(pattern))
                assert files, f"{job}: no file matches {pattern}"
                for path in files:
                    groups += yaml.safe_load(path.read_text())
        assert groups, f"job {job} has no targets"
        out += [(job, target) for group in groups for target in group["targets"]]
    return out


def test_every_scrape_target_is_a_compose_service_on_a_port_it_listens_on() -> None:
    targets = _scrape_targets()
    hosts = {target.split(":")[0] for _, target in targets}
    assert hosts >= {"kafka-1", "kafka-2", "kafka-3", "exporter", "ingest", "simulator"}
    for job, target in targets:
        host, port = target.rsplit(":", 1)
        assert host in SERVICES, f"{job}: {target} is not a compose service"
        assert int(port) in listening_ports(host, SERVICES[host]), f"{job}: {target}"


def test_grafana_datasource_and_dashboards_point_inside_the_stack() -> None:
    grafana = SERVICES["grafana"]
    mounts = dict(bind_sources(grafana))
    provisioning = REPO / "grafana" / "provisioning"
    datasources = [
        ds
        for path in sorted((provisioning / "datasources").glob("*.y*ml"))
        for ds in yaml.safe_load(path.read_text()).get("datasources", [])
    ]
    assert datasources, "grafana/provisioning/datasources/ has no datasource"
    for ds in datasources:
        host, port = re.match(r"https?://([^:/]+):(\d+)", ds["url"]).groups()  # type: ignore[union-attr]
        assert int(port) in listening_ports(host, SERVICES[host]), ds["url"]
    providers = [
        p
        for path in sorted((provisioning / "dashboards").glob("*.y*ml"))
        for p in yaml.safe_load(path.read_text()).get("providers", [])
    ]
    assert providers, "grafana/provisioning/dashboards/ has no provider"
    for provider in providers:
        path = provider["options"]["path"]
        assert any(path.startswith(target) for target in mounts.values()), path
    assert list((REPO / "grafana" / "dashboards").rglob("*.json")), "no Grafana board JSON"


def test_project_commands_are_console_scripts_with_valid_flags() -> None:
    services = project_services()
    assert set(services) == {"simulator", "ingest", "exporter", "dashboard"}
    for name, service in services.items():
        argv = command(service)
        subcommand = [argv[1]] if len(argv) > 1 and not argv[1].startswith("-") else []
        text = help_text(argv[0], *subcommand)
        for token in argv:
            if token.startswith("--"):
                assert token.split("=")[0] in text, f"{name}: {token} not in --help"
        # The image is the same for all, and every one is the project's.
        assert service["image"] == SERVICES["exporter"]["image"], name


def test_project_environment_is_documented() -> None:
    """Each variable a service sets is read by its command, or by another subcommand of the same
    script that operators run in that container (`vigia-ingest repair` in `ingest`)."""
    documented = env_example()
    operated = {"vigia-ingest": ["repair"]}
    for name, service in project_services().items():
        argv = command(service)
        subcommand = [argv[1]] if len(argv) > 1 and not argv[1].startswith("-") else []
        text = help_text(argv[0], *subcommand)
        text += "".join(help_text(argv[0], other) for other in operated.get(argv[0], []))
        for variable in service.get("environment", {}):
            assert variable in text or variable in documented, f"{name}: {variable}"


def test_project_services_listen_on_all_interfaces_inside_containers() -> None:
    for name, service in project_services().items():
        argv = command(service)
        flag, variable = BIND_ADDRESS[argv[0]]
        address = flag_value(argv, flag) or service["environment"].get(variable)
        assert address == "0.0.0.0", name


def test_dependencies_wait_for_health_or_completion() -> None:
    for name, service in SERVICES.items():
        depends = service.get("depends_on", {})
        assert isinstance(depends, dict), f"{name}: depends_on needs conditions"
        for dependency, spec in depends.items():
            target = SERVICES[dependency]
            if spec["condition"] == "service_healthy":
                assert target.get("healthcheck", {}).get("test"), f"{dependency} has no healthcheck"
            else:
                assert spec["condition"] == "service_completed_successfully", (name, dependency)
                assert target.get("restart") == "no", f"{dependency} is not a one-shot"


def test_long_running_services_restart_have_memory_limits_and_healthchecks() -> None:
    units = {"k": 2**10, "m": 2**20, "g": 2**30}
    total = 0
    for name, service in SERVICES.items():
        limit = str(service["mem_limit"])
        total += int(limit[:-1]) * units[limit[-1].lower()]
        if service.get("restart") != "no":
            assert service.get("restart") == "unless-stopped", name
            assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    # Room left on a 16 GB laptop for the OS, a browser and an IDE: 10 GB before the ingest job's
    # Spark cluster (issue 25) took 2 GB more (master, two workers; the driver gave 1 GB back).
    # Limits, not use: an idle stack stays well below them.
    assert total <= 12 * 2**30, total / 2**30


def _volume_mounts(service: dict[str, Any]) -> dict[str, str]:
    """container path -> named volume, for a service's named-volume mounts."""
    mounts = (entry.split(":") for entry in service.get("volumes", []))
    return {target: source for source, target, *_ in mounts if not source.startswith(".")}


def test_the_ingest_job_runs_on_a_spark_master_and_two_workers_of_one_version() -> None:
    ingest, master = SERVICES["ingest"], SERVICES["spark-master"]
    workers = {n: s for n, s in SERVICES.items() if n.startswith("spark-worker-")}
    assert sorted(workers) == ["spark-worker-1", "spark-worker-2"]
    master_argv = command(master)
    assert master_argv[1] == "org.apache.spark.deploy.master.Master"
    url = f"spark://spark-master:{flag_value(master_argv, '--port')}"
    # Submitted in client mode to the master service, where the workers register.
    assert flag_value(command(ingest), "--spark-master") == url
    for name, worker in workers.items():
        argv = command(worker)
        assert argv[1:3] == ["org.apache.spark.deploy.worker.Worker", url], name
        assert flag_value(argv, "--host") == name and flag_value(argv, "--cores") == "1", name
        assert "spark-master" in worker["depends_on"], name
    assert set(ingest["depends_on"]) >= set(workers)
    # Output, quarantine and checkpoint: the same volume at the same path on every node.
    paths = [flag_value(command(ingest), f) for f in ("--output", "--quarantine", "--checkpoint")]
    volumes = _volume_mounts(ingest)
    for path in paths:
        assert path is not None
        (target,) = [t for t in volumes if path.startswith(t + "/")]
        for name, worker in workers.items():
            assert _volume_mounts(worker).get(target) == volumes[target], (name, path)
    # One Spark version: Apache's image for the master, the project's image (its pinned pyspark)
    # for the workers and the driver, and the pyspark the project is tested with.
    installed = importlib.metadata.version("pyspark")
    dockerfile = (REPO / "docker" / "vigia" / "Dockerfile").read_text()
    pinned = re.search(r"^ARG PYSPARK_VERSION=(\S+)$", dockerfile, re.M)
    assert pinned and pinned[1] == installed
    assert '"pyspark==${PYSPARK_VERSION}"' in dockerfile
    assert re.fullmatch(rf"apache/spark:{re.escape(installed)}(-[\w.-]+)?", master["image"])
    for service in (ingest, *workers.values()):
        assert service["image"] == SERVICES["exporter"]["image"]
    # Executors fit the workers' memory, as the drivers' settings size them.
    defaults = dict(
        line.split(None, 1)
        for line in (REPO / "docker" / "spark" / "spark-defaults.conf").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    for name, worker in workers.items():
        assert flag_value(command(worker), "--memory") == defaults["spark.executor.memory"], name
    conf_dir = dockerfile_env(REPO / "docker" / "vigia" / "Dockerfile")["SPARK_CONF_DIR"]
    for name, service in (("ingest", ingest), *workers.items()):
        mounts = dict(bind_sources(service))
        assert (
            mounts.get("./docker/spark/spark-defaults.conf") == f"{conf_dir}/spark-defaults.conf"
        ), name


def test_compose_restarts_every_component_as_vigia_stack_does() -> None:
    """Whatever the shared anchor says one day: a crashed component (a segfault in librdkafka, a
    killed ingest driver) comes back under compose as under vigia-stack (keep_running.py)."""
    for name in set(COMPONENTS) - NOT_IN_COMPOSE:
        assert SERVICES[name].get("restart") == "unless-stopped", name


def test_every_compose_variable_is_documented_in_env_example() -> None:
    used = variables_used(COMPOSE_FILE.read_text())
    documented = env_example()
    assert used - set(documented) == set()
    assert set(documented) - used == set(), "documented but unused"
    # The filled-in copy holds the Grafana password: git must never pick it up.
    assert ".env" in (REPO / ".gitignore").read_text().splitlines()
    # A commented-out line shows the default compose falls back to.
    for variable, defaults in defaults_used(COMPOSE_FILE.read_text()).items():
        assert defaults == {documented[variable]}, variable
    for variable in REQUIRED:
        assert variable in documented and documented[variable] == "", variable
        with pytest.raises(MissingVariable):
            resolved({k: v for k, v in DEFAULTS.items() if k != variable})


def test_grafana_has_no_default_admin_password_and_optional_anonymous_viewing() -> None:
    env = RAW_SERVICES["grafana"]["environment"]
    assert env["GF_SECURITY_ADMIN_PASSWORD"].startswith("${GRAFANA_ADMIN_PASSWORD:?")
    assert SERVICES["grafana"]["environment"]["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert SERVICES["grafana"]["environment"]["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"


def test_three_combined_kraft_nodes_with_rf3_and_min_isr2() -> None:
    brokers = {n: s for n, s in SERVICES.items() if "KAFKA_NODE_ID" in s.get("environment", {})}
    assert sorted(brokers) == ["kafka-1", "kafka-2", "kafka-3"]
    voters = {f"{s['environment']['KAFKA_NODE_ID']}@{s['hostname']}:9093" for s in brokers.values()}
    for name, service in brokers.items():
        env = service["environment"]
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert set(env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")) == voters
        assert (env["KAFKA_DEFAULT_REPLICATION_FACTOR"], env["KAFKA_MIN_INSYNC_REPLICAS"]) == (3, 2)
        assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == 3
        log_volume = next(
            v.split(":")[0] for v in service["volumes"] if v.split(":")[1] == env["KAFKA_LOG_DIRS"]
        )
        assert log_volume in raw()["volumes"], f"{name}: log dir not on a named volume"
        # The JMX agent's rules: the repo's file, where start-broker.sh looks for it.
        rules = dockerfile_env(REPO / "docker" / "kafka" / "Dockerfile")["JMX_EXPORTER_CONFIG"]
        assert ("./prometheus/jmx-kafka.yml", rules) in bind_sources(service)
        # Clients on the host reach the broker at the address it advertises.
        [(_, host_port, _)] = published_ports(service)
        assert env["KAFKA_ADVERTISED_LISTENERS"].endswith(f"EXTERNAL://localhost:{host_port}")


def test_init_creates_the_pipeline_topics_idempotently(tmp_path: Path) -> None:
    init = SERVICES["kafka-init"]
    calls = tmp_path / "calls"
    stub = tmp_path / "kafka-topics.sh"
    stub.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    stub.chmod(0o755)
    [(script, _)] = bind_sources(init)
    env = {**{k: str(v) for k, v in init["environment"].items()}, "KAFKA_TOPICS_SH": str(stub)}
    subprocess.run(["bash", REPO / script], env=env, check=True, timeout=30)
    creates = [c for c in calls.read_text().splitlines() if "--create" in c]
    assert all("--if-not-exists" in c for c in creates)
    assert all(f"--bootstrap-server {env['BOOTSTRAP_SERVERS']}" in c for c in creates)
    by_topic = {re.search(r"--topic (\S+)", c).group(1): c for c in creates}  # type: ignore[union-attr]
    assert "--partitions 6 --replication-factor 3" in by_topic["measure"]
    # Nothing writes a quarantine topic: rejected messages go to the ingest job's Parquet root.
    assert set(by_topic) == {"measure"}
    assert init["entrypoint"][-1] == "/opt/vigia/create-topics.sh"


def test_broker_image_verifies_a_pinned_jmx_agent_without_inventing_its_checksum() -> None:
    dockerfile = (REPO / "docker" / "kafka" / "Dockerfile").read_text()
    assert re.search(r"^ARG KAFKA_VERSION=4\.\d+\.\d+$", dockerfile, re.M)
    assert re.search(r"^ARG JMX_EXPORTER_VERSION=\d+\.\d+\.\d+$", dockerfile, re.M)
    assert re.search(r'^ARG JMX_EXPORTER_SHA256=""$', dockerfile, re.M)
    assert not re.search(r"\b[0-9a-f]{64}\b", dockerfile), "an unverified checksum value"
    assert "sha1sum -c -" in dockerfile, "the jar is always checked against Maven's .sha1"
    assert "sha256sum -c -" in dockerfile, "a pinned sha256 is checked when given"
    kafka_version = re.search(r"^ARG KAFKA_VERSION=(\S+)$", dockerfile, re.M).group(1)  # type: ignore[union-attr]
    agent_version = re.search(r"^ARG JMX_EXPORTER_VERSION=(\S+)$", dockerfile, re.M).group(1)  # type: ignore[union-attr]
    assert SERVICES["kafka-1"]["image"].endswith(f":{kafka_version}-jmx{agent_version}")
    assert SERVICES["kafka-init"]["image"] == f"apache/kafka:{kafka_version}"
    assert RAW_SERVICES["kafka-1"]["build"]["args"]["JMX_EXPORTER_SHA256"] == (
        "${JMX_EXPORTER_SHA256:-}"
    )


def test_project_image_has_python_a_jre_and_the_extras_the_services_need() -> None:
    dockerfile = (REPO / "docker" / "vigia" / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11\.\d+-slim-bookworm$", dockerfile, re.M)
    assert "openjdk-17-jre-headless" in dockerfile
    extras = set(re.search(r"pip install '\.\[([\w,]+)\]'", dockerfile).group(1).split(","))  # type: ignore[union-attr]
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert extras == {"exporter", "ingest", "dashboard"}
    assert extras <= set(declared["optional-dependencies"])


def test_shell_scripts_parse() -> None:
    for script, shell in (
        ("docker/kafka/start-broker.sh", "sh"),
        ("docker/kafka/create-topics.sh", "bash"),
    ):
        parsed = subprocess.run(
            [shell, "-n", REPO / script], capture_output=True, text=True, timeout=10, check=False
        )
        assert parsed.returncode == 0, f"{script} does not parse: {parsed.stderr}"


def test_alertmanager_entrypoint_renders_its_config_and_starts(tmp_path: Path) -> None:
    """Runs the compose service's entrypoint + command on this host, container paths mapped to
    the files compose would mount, with Debian's Alertmanager standing in for the image's."""
    binary = shutil.which("alertmanager") or shutil.which("prometheus-alertmanager")
    if not binary:
        pytest.skip("no Alertmanager binary here to run the compose entrypoint with")
    service = SERVICES["alertmanager"]
    secrets = resolved(DEFAULTS)["secrets"]
    port = free_port()
    paths = {target: str(REPO / source) for source, target in bind_sources(service)}
    paths |= {f"/run/secrets/{s}": str(REPO / secrets[s]["file"]) for s in service["secrets"]}
    paths |= {
        "/run/vigia": str(tmp_path / "tmpfs"),
        "/alertmanager": str(tmp_path / "data"),
        "/bin/alertmanager": binary,
        "0.0.0.0:9093": f"127.0.0.1:{port}",
    }

    def on_host(arg: str) -> str:
        for container, host in paths.items():
            arg = re.sub(rf"(?<![\w./-]){re.escape(container)}(?![\w.-])", host, arg)
        return arg

    (tmp_path / "tmpfs").mkdir()
    argv = [on_host(a) for a in [*service["entrypoint"], *service["command"]]]
    env = {**os.environ, **{k: on_host(str(v)) for k, v in service["environment"].items()}}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        ready = False
        while not ready and time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2):
                    ready = True
            except OSError:
                time.sleep(0.3)
        assert ready, process.stderr.read().decode() if process.poll() is not None else "timeout"
        rendered = (tmp_path / "tmpfs" / "alertmanager.yml").read_text()
        assert "http://pager.vigia.invalid/" in rendered  # the default secret: the placeholder
    finally:
        process.terminate()
        process.wait(timeout=10)
