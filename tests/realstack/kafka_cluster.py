"""A 3-node KRaft cluster (or, for tests that want several clusters, a 1-node one) of combined
broker+controller nodes from an Apache Kafka distribution, on free loopback ports: a PLAINTEXT
listener (also inter-broker), a SASL_SSL listener with SCRAM-SHA-512 and the run's own CA, the
StandardAuthorizer (ANONYMOUS, i.e. PLAINTEXT, and `admin` are super users), the Prometheus JMX
agent on each node where its jar is found.

Settings as ../shared/kafka/README.md found production-like; one departure, said here once:
`log.retention.check.interval.ms` is 5 s (300 s by default) so that retention tests see deletions
within a test's time."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from tests.conftest import free_port
from tests.realstack.certs import BrokerTls, make_broker_tls
from tests.realstack.process import LoggedProcess, StartError

NODES = (1, 2, 3)
ADMIN_USER = "admin"
SECURED_USER = "vigia"
REPO = Path(__file__).resolve().parents[2]
JMX_RULES = REPO / "prometheus" / "jmx-kafka.yml"
STARTED = "Kafka Server started"


@dataclass(frozen=True)
class NodePorts:
    plaintext: int
    secured: int
    controller: int
    jmx: int


def _cluster_id() -> str:
    """What `kafka-storage.sh random-uuid` prints, without a JVM: 16 random bytes, base64url."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # Kafka never hands out such ids (they read as options)
            return text


def find_jmx_agent(kafka_home: Path) -> Path | None:
    """The agent jar beside the distribution (as ../shared/kafka lays it out), if any."""
    found = sorted(kafka_home.parent.glob("jmx_prometheus_javaagent-*.jar"))
    return found[-1] if found else None


class KafkaCluster:
    def __init__(self, kafka_home: Path, workdir: Path, node_ids: tuple[int, ...] = NODES) -> None:
        self.home = kafka_home
        self.workdir = workdir
        self.node_ids = node_ids
        self.ports = {
            n: NodePorts(free_port(), free_port(), free_port(), free_port()) for n in node_ids
        }
        self.passwords = {ADMIN_USER: secrets.token_hex(8), SECURED_USER: secrets.token_hex(8)}
        self.jmx_agent = find_jmx_agent(kafka_home)
        self.tls: BrokerTls | None = None
        self.nodes: dict[int, LoggedProcess] = {}

    # -- what tests are handed ------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[n].plaintext}" for n in self.node_ids)

    @property
    def secured_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[n].secured}" for n in self.node_ids)

    def secured_options(self, user: str = ADMIN_USER) -> dict[str, str]:
        assert self.tls is not None
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": self.passwords[user],
            "ssl.ca.location": str(self.tls.ca_pem),
        }

    def jmx_urls(self) -> dict[int, str]:
        if self.jmx_agent is None:
            return {}
        return {n: f"http://127.0.0.1:{self.ports[n].jmx}/metrics" for n in self.node_ids}

    # -- life cycle -----------------------------------------------------------------------------

    def start_all(self, timeout: float = 120.0) -> None:
        self.tls = make_broker_tls(self.workdir / "tls", secrets.token_hex(8))
        cluster_id = _cluster_id()
        for n in self.node_ids:
            self._write_properties(n)
        self._format(cluster_id, timeout)
        for n in self.node_ids:
            self.nodes[n] = self._node_process(n)
            self.nodes[n].launch()
        for n in self.node_ids:
            self.nodes[n].wait_for_line(STARTED, timeout)
        self.wait_for_brokers(set(self.node_ids), timeout)

    def stop(self, node: int, timeout: float = 90.0) -> None:
        """A clean stop (controlled shutdown); returns once the process has exited."""
        self.nodes[node].stop(timeout)

    def start(self, node: int, timeout: float = 300.0) -> None:
        """Starts a stopped node; returns once it serves (its log says so). A node loads every
        partition it holds first: over two minutes on a loaded 2-core machine."""
        process = self.nodes[node]
        if process.running:
            return
        process.launch()
        process.wait_for_line(STARTED, timeout)

    def create_pipeline_topics(self) -> None:
        """`measure`, by compose's own script (docker/kafka/), since
        the cluster, like compose's, creates no topic on first use."""
        env = {
            **os.environ,
            "BOOTSTRAP_SERVERS": self.bootstrap,
            "KAFKA_TOPICS_SH": str(self.home / "bin" / "kafka-topics.sh"),
        }
        env.pop("KAFKA_OPTS", None)
        done = subprocess.run(
            ["bash", str(REPO / "docker" / "kafka" / "create-topics.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if done.returncode != 0:
            raise StartError(f"create-topics.sh failed: {(done.stderr or done.stdout)[-800:]}")

    def close(self) -> None:
        """Every node at once: stopped one by one, the last would wait for a quorum forever."""
        running = [p for p in self.nodes.values() if p.running]
        for process in running:
            process.signal(15)
        for process in running:
            process.wait_exit(60)

    def wait_for_brokers(self, expected: set[int], timeout: float) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + timeout
        seen: set[int] = set()
        while time.monotonic() < deadline:
            try:
                seen = set(admin.list_topics(timeout=5).brokers)
            except Exception:  # not up yet: any error means "ask again"
                seen = set()
            if seen == expected:
                return
            time.sleep(0.5)
        raise StartError(f"brokers {sorted(seen)} in metadata, not {sorted(expected)}")

    def logs(self) -> Iterable[tuple[str, LoggedProcess]]:
        return ((f"kafka-{n}", p) for n, p in self.nodes.items())

    # -- files ----------------------------------------------------------------------------------

    def _properties_path(self, node: int) -> Path:
        return self.workdir / f"server-{node}.properties"

    def _write_properties(self, node: int) -> None:
        assert self.tls is not None
        p = self.ports[node]
        replicas = min(3, len(self.node_ids))
        min_isr = min(2, replicas)
        voters = ",".join(f"{n}@127.0.0.1:{self.ports[n].controller}" for n in self.node_ids)
        settings = {
            "process.roles": "broker,controller",
            "node.id": node,
            "controller.quorum.voters": voters,
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{p.plaintext},SECURED://127.0.0.1:{p.secured},"
                f"CONTROLLER://127.0.0.1:{p.controller}"
            ),
            "advertised.listeners": (
                f"PLAINTEXT://127.0.0.1:{p.plaintext},SECURED://127.0.0.1:{p.secured}"
            ),
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,SECURED:SASL_SSL,CONTROLLER:PLAINTEXT"
            ),
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "log.dirs": self.workdir / f"data-{node}",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.secured.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "listener.name.secured.ssl.keystore.location": self.tls.keystore,
            "listener.name.secured.ssl.keystore.password": self.tls.password,
            "listener.name.secured.ssl.keystore.type": "PKCS12",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:ANONYMOUS;User:{ADMIN_USER}",
            "default.replication.factor": replicas,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "group.initial.rebalance.delay.ms": 0,
            "num.partitions": 3,
            "auto.create.topics.enable": "false",  # as compose: a typo creates no topic
            "log.retention.check.interval.ms": 5000,
        }
        text = "".join(f"{k}={v}\n" for k, v in settings.items())
        self._properties_path(node).write_text(text)

    def _format(self, cluster_id: str, timeout: float) -> None:
        """All three nodes formatted at once (a JVM each), with the SCRAM users in the bootstrap
        metadata so that they exist the moment the listener does."""
        scram = [
            arg
            for user, password in self.passwords.items()
            for arg in ("--add-scram", f"SCRAM-SHA-512=[name={user},password={password}]")
        ]
        formats = {
            n: subprocess.Popen(
                [
                    str(self.home / "bin" / "kafka-storage.sh"),
                    *("format", "-t", cluster_id, "-c", str(self._properties_path(n))),
                    *scram,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self._env(n),
            )
            for n in self.node_ids
        }
        for n, process in formats.items():
            out, _ = process.communicate(timeout=timeout)
            if process.returncode != 0:
                raise StartError(f"kafka-storage format of node {n} failed: {out.decode()[-800:]}")

    def _env(self, node: int) -> dict[str, str]:
        env = {
            **os.environ,
            "LOG_DIR": str(self.workdir / f"logs-{node}"),
            "KAFKA_HEAP_OPTS": "-Xmx512m -Xms512m",
        }
        env.pop("KAFKA_OPTS", None)
        return env

    def _node_process(self, node: int) -> LoggedProcess:
        env = self._env(node)
        if self.jmx_agent is not None:
            env["KAFKA_OPTS"] = (
                f"-javaagent:{self.jmx_agent}=127.0.0.1:{self.ports[node].jmx}:{JMX_RULES}"
            )
        argv = [str(self.home / "bin" / "kafka-server-start.sh"), str(self._properties_path(node))]
        return LoggedProcess(f"kafka-{node}", argv, self.workdir / f"kafka-{node}.out", env)
