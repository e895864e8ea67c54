"""docker-compose.yml's HES leg, checked by construction: the HES database (MySQL 8.4, binlog ROW,
the schema and users of its init script), Kafka Connect with Debezium (the recorded worker config,
RF 3), the connector registration, mysqld_exporter, and data reaching `measure` only through
Connect. The init script and the registration script run here for real, against Debian's MariaDB
and a loopback HTTP stand-in for Connect's REST API."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pymysql
import pytest
import yaml

from tests.conftest import free_port
from tests.deploy.compose import REPO, bind_sources, env_example, resolved
from vigia.common.hes import TABLE_DDL, connect, parse_dsn
from vigia.exporter.config import SourceSettings
from vigia.ingest.simulator.cli import main as simulate
from vigia.launcher.mariadb import USERS, HesDatabase, MariaDBError, binaries

FIXTURES = REPO / "tests" / "fixtures" / "connect-debezium"
SERVICES: dict[str, dict[str, Any]] = resolved(
    {k: v for k, v in env_example().items() if v} | {"GRAFANA_ADMIN_PASSWORD": "x"}
)["services"]


def _fixture(name: str) -> Path:
    """A recorded file (tests/fixtures/connect-debezium, a copy of shared/fixtures')."""
    return FIXTURES / name


def _properties(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def _mounted(service: str, target: str) -> Path:
    (source,) = [s for s, t in bind_sources(SERVICES[service]) if t == target]
    return REPO / source


def test_the_hes_is_mysql_84_with_a_row_binlog_and_the_repository_schema() -> None:
    hes = SERVICES["hes-db"]
    assert re.fullmatch(r"mysql:8\.4\.\d+", hes["image"])
    assert {"--binlog-format=ROW", "--binlog-row-image=FULL", "--server-id=1"} <= set(
        hes["command"]
    )
    schema = _mounted("hes-db", "/etc/vigia/hes/schema.sql").read_text()
    assert TABLE_DDL + ";" in schema, "docker/hes/schema.sql differs from common/hes.py"
    assert _mounted("hes-db", "/docker-entrypoint-initdb.d/init-hes.sh").is_file()


def test_connect_runs_the_recorded_worker_config_in_distributed_mode() -> None:
    worker = _properties(_mounted("connect", "/etc/kafka-connect/worker-distributed.properties"))
    recorded = _properties(_fixture("worker-distributed.properties"))
    addresses = {"bootstrap.servers", "listeners", "rest.advertised.host.name"}
    addresses |= {"rest.advertised.port", "plugin.path"}
    for key, value in recorded.items():
        if key not in addresses:
            assert worker[key] == value, key
    for topic in ("config", "offset", "status"):
        assert worker[f"{topic}.storage.replication.factor"] == "3"
    assert worker["bootstrap.servers"] == "kafka-1:9092,kafka-2:9092,kafka-3:9092"
    assert SERVICES["connect"]["command"] == ["/etc/kafka-connect/worker-distributed.properties"]
    dockerfile = (REPO / "docker" / "connect" / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["/opt/kafka/bin/connect-distributed.sh"]' in dockerfile
    assert worker["plugin.path"] == "/opt/connect/plugins" and worker["plugin.path"] in dockerfile
    assert dockerfile.count("sha1sum -c -") == 2, "the plugin and the agent are both verified"
    jmx = _mounted("connect", "/opt/jmx-exporter/jmx-connect.yml")
    assert jmx.read_text() == _fixture("jmx-connect.yml").read_text(), "not the recorded rules"
    versions = re.findall(r"^ARG (\w+_VERSION)=(\S+)$", dockerfile, re.M)
    assert dict(versions) == {
        "KAFKA_VERSION": "4.3.0",
        "DEBEZIUM_VERSION": "3.6.3.Final",
        "JMX_EXPORTER_VERSION": "0.20.0",
    }, "the versions shared/fixtures/connect-debezium was recorded with"


def test_the_connector_is_the_recorded_one_writing_to_the_ingest_topic() -> None:
    ours = json.loads(_mounted("connect-init", "/etc/vigia/connector-hes-measure.json").read_text())
    recorded = json.loads(_fixture("connector-hes-measure.json").read_text())
    # What differs, and why: compose's addresses, a password from the environment, MySQL's own
    # driver (the recording ran against MariaDB), and the ingest job's topic.
    changed = {
        "database.hostname": "hes-db",
        "database.port": "3306",
        "database.password": "${env:HES_CONNECT_PASSWORD}",
        "schema.history.internal.kafka.bootstrap.servers": "kafka-1:9092,kafka-2:9092,kafka-3:9092",
        "transforms.route.replacement": "measure",
    }
    # What `vigia-ingest repair` changed: Debezium's signalling table, its events kept out of
    # Kafka, and which records an incremental snapshot re-delivers (the job drops those it stores).
    # No message.key.columns: an incremental snapshot keeps one row per message key in each chunk,
    # and with the meter as the key it sent one row per meter; the key is the primary key again,
    # and `keyfield` still makes the meter the Kafka key.
    repair = {
        "signal.enabled.channels": "source",
        "signal.data.collection": "hes.debezium_signal",
        "transforms": "dropsignal," + recorded["transforms"],
        "transforms.dropsignal.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.dropsignal.predicate": "signaltable",
        "predicates": "signaltable",
        "predicates.signaltable.type": (
            "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"
        ),
        "predicates.signaltable.pattern": "cdc\\.hes\\.debezium_signal",
        "transforms.unwrap.add.fields": "source.snapshot",
    }
    # How fast a repair's snapshot reaches Kafka: larger chunks, queue and batches, and producer
    # requests compressed and batched (docs/performance.md, "Repairing a day").
    speed = {
        "incremental.snapshot.chunk.size": "32768",
        "max.batch.size": "8192",
        "max.queue.size": "32768",
        "producer.override.batch.size": "1048576",
        "producer.override.linger.ms": "50",
        "producer.override.compression.type": "lz4",
    }
    dropped = {"database.jdbc.driver", "database.protocol", "message.key.columns"}
    expected = {k: v for k, v in recorded.items() if k not in dropped} | changed | repair | speed
    assert ours == expected
    assert (
        SERVICES["connect"]["environment"]["HES_CONNECT_PASSWORD"]
        == (SERVICES["hes-db"]["environment"]["HES_CONNECT_PASSWORD"])
    )


def test_data_reaches_kafka_only_through_connect() -> None:
    simulator = SERVICES["simulator"]
    assert simulator["command"][:4] == ["vigia-simulate", "live", "--sink", "hes"]
    assert "VIGIA_KAFKA_BOOTSTRAP_SERVERS" not in simulator["environment"]
    assert simulator["environment"]["VIGIA_HES_DSN"].startswith("mysql://hes_writer:")
    for reader in ("exporter", "ingest"):
        assert SERVICES[reader]["environment"]["VIGIA_HES_DSN"].startswith("mysql://hes_reader:")
    exporter = SERVICES["mysqld-exporter"]
    assert "--mysqld.username=hes_monitor" in exporter["command"]
    assert "--mysqld.address=hes-db:3306" in exporter["command"]


def test_prometheus_scrapes_the_connect_agent_and_mysqld_exporter() -> None:
    config = yaml.safe_load((REPO / "prometheus" / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    for job, target in (("kafka-connect", "connect:9404"), ("hes-mysqld", "mysqld-exporter:9104")):
        (sd,) = jobs[job]["file_sd_configs"]
        groups = [g for f in sd["files"] for g in json.loads((REPO / "prometheus" / f).read_text())]
        assert [t for g in groups for t in g["targets"]] == [target]


def _size(text: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmg]?)", text.lower()).groups()  # type: ignore[union-attr]
    return int(number) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]


def test_connect_logs_are_bounded_while_kafka_is_down() -> None:
    """Issue 23: with Kafka unreachable the worker logged about 1 MB every 30 s ("Rebootstrapping
    with ..."). Its log config (docker/connect/connect-log4j2.properties) writes to the console
    alone, which compose rotates, and keeps the clients' reconnect chatter at WARN."""
    connect = SERVICES["connect"]
    option = connect["environment"]["KAFKA_LOG4J_OPTS"]
    assert option.startswith("-Dlog4j2.configurationFile=")
    config = _properties(_mounted("connect", option.split("=", 1)[1]))
    config = {k.strip(): v.strip() for k, v in config.items()}
    appenders = {k.split(".")[1] for k in config if k.startswith("appender.")}
    assert {config[f"appender.{a}.type"] for a in appenders} == {"Console"}, (
        "a file nothing rotates"
    )
    assert config["rootLogger.level"] == "INFO"
    refs = {v for k, v in config.items() if k.startswith("rootLogger.appenderRef.")}
    assert refs == {config[f"appender.{a}.name"] for a in appenders}
    levels = {
        config[k]: config[k.removesuffix(".name") + ".level"]
        for k in config
        if k.startswith("logger.") and k.endswith(".name")
    }
    for chatty in (
        "org.apache.kafka.clients.Metadata",  # "Rebootstrapping with ..." at INFO
        "org.apache.kafka.clients.admin.internals.AdminMetadataManager",  # the admin client's
        "org.apache.kafka.clients.NetworkClient",  # "Node -1 disconnected." at INFO
    ):
        assert levels[chatty] in ("WARN", "ERROR"), chatty
    logging = connect["logging"]
    assert logging["driver"] == "json-file"
    bound = _size(logging["options"]["max-size"]) * int(logging["options"]["max-file"])
    assert 0 < bound <= 100 << 20, "the console's output kept on disk, at most"


def test_the_exporter_watches_connect_beside_the_hes() -> None:
    """The stall verdict names the connector from Connect's REST (--connect-url) and judges it on
    what reaches `measure` from the HES (--hes-dsn)."""
    exporter = SERVICES["exporter"]["environment"]
    assert exporter["VIGIA_CONNECT_URLS"] == "connect=http://connect:8083"
    assert "8083" in SERVICES["connect"]["expose"]
    script = _mounted("connect-init", "/etc/vigia/register-connector.sh").read_text()
    (name,) = re.findall(r"CONNECTOR_NAME:=([\w.-]+)}", script)
    assert "CONNECTOR_NAME" not in SERVICES["connect-init"]["environment"]
    assert name == SourceSettings().connector, "the connector the stall verdict is laid to"


class _ConnectStandIn(BaseHTTPRequestHandler):
    puts: ClassVar[list[tuple[str, Any]]] = []

    def do_GET(self) -> None:
        self._answer(200, b"[]")

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        created = not self.puts
        self.puts.append((self.path, json.loads(body)))
        self._answer(201 if created else 200, body)

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def connect_stand_in() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _ConnectStandIn)
    _ConnectStandIn.puts = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


def test_registration_is_an_idempotent_put_of_the_repository_json(connect_stand_in: str) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: cannot run the registration script here")
    init = SERVICES["connect-init"]
    script = _mounted("connect-init", "/etc/vigia/register-connector.sh")
    config = _mounted("connect-init", "/etc/vigia/connector-hes-measure.json")
    assert init["entrypoint"] == ["/bin/sh", "/etc/vigia/register-connector.sh"]
    assert (
        init["restart"] == "no" and init["depends_on"]["connect"]["condition"] == "service_healthy"
    )
    env = {**os.environ, "CONNECT_URL": connect_stand_in, "CONNECTOR_CONFIG": str(config)}
    for _ in range(2):  # every `docker compose up` runs it again
        subprocess.run(["sh", str(script)], env=env, check=True, timeout=30, capture_output=True)
    expected = ("/connectors/hes-measure/config", json.loads(config.read_text()))
    assert _ConnectStandIn.puts == [expected, expected]


def test_connect_healthcheck_asks_the_rest_api(connect_stand_in: str) -> None:
    """The worker's healthcheck (bash only: the image has no HTTP client), run here against the
    stand-in: healthy when GET /connectors answers 200."""
    test = SERVICES["connect"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "bash", "-c"]
    port = connect_stand_in.rsplit(":", 1)[1]
    command = test[3].replace("127.0.0.1/8083", f"127.0.0.1/{port}")
    assert subprocess.run(["bash", "-c", command], timeout=10, check=False).returncode == 0


def _shim_mysql(bin_dir: Path, socket: Path) -> None:
    """`mysql` as the MySQL image has it, for the init script: root over the server's socket."""
    mariadb = shutil.which("mariadb")
    assert mariadb
    bin_dir.mkdir()
    shim = bin_dir / "mysql"
    shim.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do shift; case "$a" in -p*|-u*|--protocol=*) ;; '
        '*) set -- "$@" "$a";; esac; done\n'
        f'exec {mariadb} --no-defaults -S {socket} -uroot "$@"\n'
    )
    shim.chmod(0o755)


def test_the_init_script_creates_the_schema_and_least_privilege_users(tmp_path: Path) -> None:
    """Run on Debian's MariaDB (the image runs it on MySQL 8.4): the users it creates can do
    their job and nothing more."""
    try:
        binaries()
    except MariaDBError as exc:
        pytest.skip(str(exc))
    database = HesDatabase(tmp_path / "db", free_port())
    database.start()
    try:
        admin = database.admin()
        with admin.cursor() as cursor:  # the helper's own accounts would shadow the script's
            for user in USERS.values():
                cursor.execute(f"DROP USER '{user}'@'127.0.0.1'")
            cursor.execute("DROP DATABASE hes")
        admin.close()
        _shim_mysql(tmp_path / "bin", database.socket)
        env = {
            **os.environ,
            **{k: str(v) for k, v in SERVICES["hes-db"]["environment"].items()},
            "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
            "HES_SCHEMA": str(_mounted("hes-db", "/etc/vigia/hes/schema.sql")),
        }
        script = _mounted("hes-db", "/docker-entrypoint-initdb.d/init-hes.sh")
        subprocess.run(["bash", str(script)], env=env, check=True, timeout=60)

        def dsn(service: str) -> str:
            return str(SERVICES[service]["environment"]["VIGIA_HES_DSN"]).replace(
                "@hes-db:3306", f"@127.0.0.1:{database.port}"
            )

        argv = ["backfill", "--sink", "hes", "--hes-dsn", dsn("simulator"), "--meters", "2"]
        assert simulate([*argv, "--metrics-port", "0"]) == 0
        connection = connect(parse_dsn(dsn("exporter")), timeout=10)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT COUNT(*) FROM measure")
                assert cursor.fetchone() == (2 * 96 * 4,)
                with pytest.raises(pymysql.err.OperationalError, match="denied"):
                    cursor.execute("DELETE FROM measure")
        finally:
            connection.close()
        # What mysqld_exporter's replica scraper asks, as the monitoring user (issue 23).
        monitor = pymysql.connect(
            host="127.0.0.1",
            port=database.port,
            user="hes_monitor",
            password=str(SERVICES["hes-db"]["environment"]["HES_MONITOR_PASSWORD"]),
        )
        try:
            with monitor.cursor() as cursor:
                cursor.execute("SHOW SLAVE STATUS")
        finally:
            monitor.close()
        # `vigia-ingest repair`'s user, as the ingest service has it: a signal row, nothing else.
        signal_dsn = str(SERVICES["ingest"]["environment"]["VIGIA_HES_SIGNAL_DSN"])
        signal = connect(
            parse_dsn(signal_dsn.replace("@hes-db:3306", f"@127.0.0.1:{database.port}")), 10
        )
        try:
            with signal.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO debezium_signal (id, type, data) VALUES ('probe', 'log', '{}')"
                )
                with pytest.raises(pymysql.err.OperationalError, match="denied"):
                    cursor.execute("SELECT COUNT(*) FROM measure")
        finally:
            signal.close()
    finally:
        database.close()
