"""A distributed Kafka Connect worker with Debezium's MySQL connector, from the runtime named by
VIGIA_TEST_CONNECT_HOME (`libs/` the worker's classpath, `plugins/` its plugin path, as
../shared/connect-debezium-runtime lays it out), against the harness's cluster and MariaDB HES.

The worker's settings are docker/connect/worker-distributed.properties with the run's addresses;
the connector is docker/connect/connector-hes-measure.json with the run's addresses and, because
the HES here is MariaDB, docker/connect/connector-hes-measure.mariadb.json on top: what compose
and the tests register differs in nothing else. It logs as compose's worker does, by
docker/connect/connect-log4j2.properties: to the console alone, which the harness writes to
`connect.out` in the worker's directory."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port
from tests.realstack.kafka_cluster import find_jmx_agent
from tests.realstack.process import LoggedProcess, StartError
from vigia.launcher.mariadb import HesDatabase

REPO = Path(__file__).resolve().parents[2]
CONNECT_DIR = REPO / "docker" / "connect"
CONNECTOR = "hes-measure"
JMX_RULES = REPO / "prometheus" / "jmx-connect.yml"
LOG4J2 = CONNECT_DIR / "connect-log4j2.properties"


# Connect holds the tasks of a worker that left its group for scheduled.rebalance.max.delay.ms
# (5 minutes by default, the repository's config) before it hands them out again (issue 23). The
# harness's worker waits 2 minutes: test_connect_stall_drill.py waits the whole delay out, and 2
# minutes still leave the page its minute and a half.
HARNESS_REBALANCE_DELAY_MS = 120_000


def worker_properties(
    bootstrap: str, rest_port: int, plugins: Path, rebalance_delay_ms: int | None = None
) -> str:
    """docker/connect/worker-distributed.properties with this run's addresses; with
    `rebalance_delay_ms`, its scheduled.rebalance.max.delay.ms."""
    ours = {
        "bootstrap.servers": bootstrap,
        "listeners": f"http://127.0.0.1:{rest_port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(rest_port),
        "plugin.path": str(plugins),
    }
    lines = []
    for line in (CONNECT_DIR / "worker-distributed.properties").read_text().splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={ours[key]}" if key in ours else line)
    if rebalance_delay_ms is not None:
        lines.append(f"scheduled.rebalance.max.delay.ms={rebalance_delay_ms}")
    return "\n".join(lines) + "\n"


def connector_config(bootstrap: str, hes: HesDatabase) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONNECT_DIR / "connector-hes-measure.json").read_text())
    config.update(json.loads((CONNECT_DIR / "connector-hes-measure.mariadb.json").read_text()))
    config.update(
        {
            "database.hostname": hes.host,
            "database.port": str(hes.port),
            "schema.history.internal.kafka.bootstrap.servers": bootstrap,
        }
    )
    return config


class ConnectWorker:
    def __init__(
        self,
        connect_home: Path,
        kafka_home: Path,
        workdir: Path,
        log_config: Path = LOG4J2,
        rebalance_delay_ms: int | None = None,
    ) -> None:
        """`log_config`: another log4j2 file, for benchmarks/connect_log_volume.py's comparison;
        `rebalance_delay_ms`: see `worker_properties`."""
        self.home = connect_home
        self.workdir = workdir
        self.log_config = log_config
        self.rebalance_delay_ms = rebalance_delay_ms
        self.rest_port = free_port()
        self.jmx_port = free_port()
        self.jmx_agent = find_jmx_agent(kafka_home)
        self.process: LoggedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def jmx_url(self) -> str:
        return f"http://127.0.0.1:{self.jmx_port}/metrics" if self.jmx_agent else ""

    def start(self, bootstrap: str, hes: HesDatabase, timeout: float = 180.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        properties = self.workdir / "worker.properties"
        properties.write_text(
            worker_properties(
                bootstrap, self.rest_port, self.home / "plugins", self.rebalance_delay_ms
            )
        )
        java = ["java", "-Xmx1g", f"-Dlog4j2.configurationFile={self.log_config}"]
        if self.jmx_agent is not None:
            java.append(f"-javaagent:{self.jmx_agent}=127.0.0.1:{self.jmx_port}:{JMX_RULES}")
        argv = [
            *java,
            *("-cp", f"{self.home / 'libs'}/*"),
            "org.apache.kafka.connect.cli.ConnectDistributed",
            str(properties),
        ]
        env = {**os.environ, "HES_CONNECT_PASSWORD": hes.passwords["connect"]}
        self.process = LoggedProcess("connect", argv, self.workdir / "connect.out", env)
        self.process.launch()
        self._wait_for_rest(timeout)
        answer = httpx.put(
            f"{self.url}/connectors/{CONNECTOR}/config",
            json=connector_config(bootstrap, hes),
            timeout=60,
        )
        if answer.status_code not in (200, 201):
            raise StartError(f"PUT {CONNECTOR} refused ({answer.status_code}): {answer.text}")
        self._wait(self.connector_running, timeout, f"{CONNECTOR} RUNNING")

    def connector_running(self) -> bool:
        status = httpx.get(f"{self.url}/connectors/{CONNECTOR}/status", timeout=5)
        if status.status_code != 200:
            return False
        body = status.json()
        tasks = body.get("tasks", [])
        return (
            body["connector"]["state"] == "RUNNING"
            and bool(tasks)
            and all(t["state"] == "RUNNING" for t in tasks)
        )

    def kill(self) -> None:
        """SIGKILL by PID, as a crash or the OOM killer does: no offset flushed, no group left."""
        assert self.process is not None
        self.process.signal(signal.SIGKILL)
        self.process.wait_exit(30)

    def relaunch(self, timeout: float = 180.0) -> None:
        """The same worker again after `kill`: same ports and properties; its connector comes from
        the config topic, and Connect's group decides when it runs (no PUT)."""
        assert self.process is not None and not self.process.running
        self.process.launch()
        self._wait_for_rest(timeout)

    def _wait_for_rest(self, timeout: float) -> None:
        self._wait(
            lambda: httpx.get(f"{self.url}/connectors", timeout=5).status_code == 200,
            timeout,
            "the worker's REST API",
        )

    def close(self) -> None:
        if self.process is not None:
            self.process.stop(60)

    def _wait(self, check: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if not self.process.running:
                raise StartError(f"Kafka Connect exited: {self.process.tail()}")
            try:
                if check():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert self.process is not None
        raise StartError(f"no {what} after {timeout:g} s: {self.process.tail()}")
