"""Fixtures of the real-system suites (a pytest plugin, loaded by tests/conftest.py).

Where each target comes from, in order:
- a user's own systems: VIGIA_TEST_KAFKA_BOOTSTRAP_SERVERS (with VIGIA_TEST_KAFKA_BROKER_STOP /
  _START, VIGIA_TEST_KAFKA_SECURED_BOOTSTRAP_SERVERS and VIGIA_TEST_KAFKA_OPTIONS),
  VIGIA_TEST_CONNECT_URL (VIGIA_TEST_CONNECT_JMX_URL), VIGIA_TEST_HES_DSN
  (VIGIA_TEST_HES_WRITER_DSN, VIGIA_TEST_HES_SIGNAL_DSN, VIGIA_TEST_HES_STOP / _START);
- the harness: VIGIA_TEST_KAFKA_HOME (an Apache Kafka distribution) starts a 3-node cluster the
  first time a test asks for Kafka, with other tenants' load on it; VIGIA_TEST_CONNECT_HOME as well
  starts a MariaDB HES and a Connect worker with connector hes-measure the first time a test asks
  for Connect or the HES. Everything is stopped by PID when the run ends;
- neither: the test is skipped with one line that says what to set (in CI: fails, tests/strict.py).

VIGIA_TEST_KAFKA_EXPORTER names kafka_exporter's binary, the series budget's yardstick.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.realstack.connect_worker import HARNESS_REBALANCE_DELAY_MS, ConnectWorker
from tests.realstack.kafka_cluster import KafkaCluster
from tests.realstack.process import LoggedProcess
from tests.realstack.targets import (
    BrokerControl,
    ConnectTarget,
    HesTarget,
    KafkaTarget,
    SecuredTarget,
    ShellBrokers,
    shell,
)
from vigia.launcher.mariadb import HesDatabase

KAFKA_HOME_ENV = "VIGIA_TEST_KAFKA_HOME"
CONNECT_HOME_ENV = "VIGIA_TEST_CONNECT_HOME"
KAFKA_EXPORTER_ENV = "VIGIA_TEST_KAFKA_EXPORTER"
BOOTSTRAP_ENV = "VIGIA_TEST_KAFKA_BOOTSTRAP_SERVERS"
SECURED_BOOTSTRAP_ENV = "VIGIA_TEST_KAFKA_SECURED_BOOTSTRAP_SERVERS"
OPTIONS_ENV = "VIGIA_TEST_KAFKA_OPTIONS"
STOP_ENV, START_ENV = "VIGIA_TEST_KAFKA_BROKER_STOP", "VIGIA_TEST_KAFKA_BROKER_START"
CONNECT_URL_ENV, CONNECT_JMX_ENV = "VIGIA_TEST_CONNECT_URL", "VIGIA_TEST_CONNECT_JMX_URL"
HES_DSN_ENV, HES_WRITER_ENV = "VIGIA_TEST_HES_DSN", "VIGIA_TEST_HES_WRITER_DSN"
HES_SIGNAL_ENV = "VIGIA_TEST_HES_SIGNAL_DSN"
HES_STOP_ENV, HES_START_ENV = "VIGIA_TEST_HES_STOP", "VIGIA_TEST_HES_START"
NO_KAFKA = (
    f"no real Kafka: set {KAFKA_HOME_ENV} to an Apache Kafka distribution (the tests start a "
    f"cluster) or {BOOTSTRAP_ENV} to your own cluster"
)
NO_CONNECT = (
    f"no real Kafka Connect: set {CONNECT_HOME_ENV} (with {KAFKA_HOME_ENV}) to a Connect + "
    f"Debezium runtime, or {CONNECT_URL_ENV} to your own worker"
)


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


class RealStack:
    """The harness's processes, each started the first time a test needs it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.kafka: KafkaCluster | None = None
        self.tenants: LoggedProcess | None = None
        self.hes: HesDatabase | None = None
        self.connect: ConnectWorker | None = None
        self.failed: BaseException | None = None

    def cluster(self) -> KafkaCluster:
        if self.failed is not None:  # one failed start, not one per test
            raise self.failed
        try:
            return self._cluster()
        except BaseException as exc:
            self.failed = exc
            raise

    def _cluster(self) -> KafkaCluster:
        if self.kafka is None:
            home = Path(_env(KAFKA_HOME_ENV))
            self.kafka = KafkaCluster(home, self.workdir / "kafka")
            began = time.monotonic()
            self.kafka.start_all()
            print(f"\nreal stack: 3 Kafka nodes up in {time.monotonic() - began:.1f} s", end="")
            self._start_tenants(self.kafka.bootstrap)
        return self.kafka

    def hes_and_connect(self) -> tuple[HesDatabase, ConnectWorker]:
        cluster = self.cluster()
        if self.hes is None or self.connect is None:
            began = time.monotonic()
            cluster.create_pipeline_topics()
            self.hes = HesDatabase(self.workdir / "hes", free_port())
            self.hes.start()
            self.connect = ConnectWorker(
                Path(_env(CONNECT_HOME_ENV)),
                cluster.home,
                self.workdir / "connect",
                rebalance_delay_ms=HARNESS_REBALANCE_DELAY_MS,
            )
            self.connect.start(cluster.bootstrap, self.hes)
            print(f"\nreal stack: HES + Connect up in {time.monotonic() - began:.1f} s", end="")
        return self.hes, self.connect

    def _start_tenants(self, bootstrap: str) -> None:
        self.tenants = LoggedProcess(
            "tenants",
            [sys.executable, "-m", "tests.realstack.tenants", bootstrap],
            self.workdir / "tenants.out",
            os.environ,
        )
        self.tenants.launch()
        self.tenants.wait_for_line("tenants ready", 300)

    def processes(self) -> list[LoggedProcess]:
        found = [p for _, p in self.kafka.logs()] if self.kafka else []
        if self.tenants:
            found.append(self.tenants)
        if self.connect and self.connect.process:
            found.append(self.connect.process)
        return found

    def close(self) -> None:
        if self.tenants is not None:
            self.tenants.stop(30)
        if self.connect is not None:
            self.connect.close()
        if self.hes is not None:
            self.hes.close()
        if self.kafka is not None:
            self.kafka.close()


_STACK_KEY = pytest.StashKey[RealStack]()
_SESSION_KEY = pytest.StashKey[pytest.Session]()
REAL_FIXTURES = frozenset(
    {
        "real_stack",
        "real_stack_cluster",
        "kafka_target",
        "secured_target",
        "connect_target",
        "hes_target",
        "connect_worker",
    }
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the real stack carry the `realstack` marker and run last: the cluster, Connect and
    the tenants' load it starts stay up until the run ends, and the unit suites' timings must not
    share the cores with it. First among the hooks, so that `-m realstack` selects by it."""
    # The marker too: a fixture that starts the stack through getfixturevalue is not seen.
    real = [i for i in items if i.get_closest_marker("integration") or _uses_real_stack(i)]
    for item in real:
        item.add_marker(pytest.mark.realstack)
    moved = {id(i) for i in real}
    items[:] = [i for i in items if id(i) not in moved] + real


def _uses_real_stack(item: pytest.Item) -> bool:
    return bool(REAL_FIXTURES & set(getattr(item, "fixturenames", ())))


@pytest.fixture(scope="session")
def real_stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealStack]:
    stack = RealStack(tmp_path_factory.mktemp("realstack"))
    request.config.stash[_STACK_KEY] = stack
    try:
        yield stack
    finally:
        stack.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """A failed test's report ends with the last lines of every harness process's log."""
    outcome = yield
    report = outcome.get_result()
    stack = item.config.stash.get(_STACK_KEY, None)
    if report.failed and stack is not None:
        for process in stack.processes():
            report.sections.append((f"real stack: {process.log}", process.tail(15)))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash[_SESSION_KEY] = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A run that used the real stack ends here, with pytest's exit status, everything printed.

    What the interpreter's own shutdown would do next is destroy the native clients still held by
    module globals and daemon threads, their brokers long gone: in CI one of those destructors
    hung after every test had passed (a stack dump showed the main thread in native code, no
    Python frame) until the job's timeout. Nothing is left to run at this point."""
    session = config.stash.get(_SESSION_KEY, None)
    if session is None or config.stash.get(_STACK_KEY, None) is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(session.exitstatus))


# -- Kafka ----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_target(request: pytest.FixtureRequest) -> KafkaTarget:
    if servers := _env(BOOTSTRAP_ENV):
        stop, start = _env(STOP_ENV), _env(START_ENV)
        brokers = ShellBrokers(stop, start) if stop and start else None
        return KafkaTarget(servers, brokers)
    if not _env(KAFKA_HOME_ENV):
        pytest.skip(NO_KAFKA)
    cluster = request.getfixturevalue("real_stack").cluster()
    return KafkaTarget(cluster.bootstrap, cluster, cluster.jmx_urls())


@pytest.fixture(scope="session")
def real_kafka_bootstrap(kafka_target: KafkaTarget) -> str:
    return kafka_target.bootstrap


@pytest.fixture
def broker_control(kafka_target: KafkaTarget) -> Iterator[BrokerControl]:
    """Stops and starts brokers; after the test every broker is running again."""
    if kafka_target.brokers is None:
        pytest.skip(f"{STOP_ENV} and {START_ENV} are not set: no way to stop and start brokers")
    stopped: set[int] = set()
    brokers = kafka_target.brokers

    class Tracked:
        def stop(self, broker: int) -> None:
            stopped.add(broker)
            brokers.stop(broker)

        def start(self, broker: int) -> None:
            brokers.start(broker)
            stopped.discard(broker)

    yield Tracked()
    for broker in sorted(stopped):
        brokers.start(broker)


@pytest.fixture(scope="session")
def real_stack_cluster(request: pytest.FixtureRequest) -> KafkaCluster:
    """The harness's own cluster, for tests that need what only it has: its users (`admin`, a
    super user, and `vigia`, with no ACL of its own) and its authorizer."""
    if _env(BOOTSTRAP_ENV) or not _env(KAFKA_HOME_ENV):
        pytest.skip(f"needs the harness's own cluster: set {KAFKA_HOME_ENV}, not {BOOTSTRAP_ENV}")
    cluster: KafkaCluster = request.getfixturevalue("real_stack").cluster()
    return cluster


@pytest.fixture(scope="session")
def secured_target(request: pytest.FixtureRequest) -> SecuredTarget:
    if _env(BOOTSTRAP_ENV):
        text = _env(OPTIONS_ENV)
        if not text:
            pytest.skip(f"{OPTIONS_ENV} is not set: no secured listener to test against")
        from vigia.common.kafka_config import parse_pairs

        bootstrap = _env(SECURED_BOOTSTRAP_ENV) or _env(BOOTSTRAP_ENV)
        return SecuredTarget(bootstrap, parse_pairs(text.replace(",", "\n").splitlines()))
    if not _env(KAFKA_HOME_ENV):
        pytest.skip(NO_KAFKA)
    cluster = request.getfixturevalue("real_stack").cluster()
    return SecuredTarget(cluster.secured_bootstrap, cluster.secured_options())


# -- Kafka Connect and the HES --------------------------------------------------------------------


def _harness_connect(request: pytest.FixtureRequest) -> tuple[HesDatabase, ConnectWorker]:
    if not (_env(CONNECT_HOME_ENV) and _env(KAFKA_HOME_ENV)) or _env(BOOTSTRAP_ENV):
        pytest.skip(NO_CONNECT)
    stack: RealStack = request.getfixturevalue("real_stack")
    return stack.hes_and_connect()


@pytest.fixture(scope="session")
def connect_target(request: pytest.FixtureRequest) -> ConnectTarget:
    if url := _env(CONNECT_URL_ENV):
        return ConnectTarget(url, _env(CONNECT_JMX_ENV))
    _, worker = _harness_connect(request)
    return ConnectTarget(worker.url, worker.jmx_url)


@pytest.fixture
def connect_worker(request: pytest.FixtureRequest) -> Iterator[ConnectWorker]:
    """The harness's own worker, for drills that kill it by PID; running again after the test."""
    if _env(CONNECT_URL_ENV):
        pytest.skip(f"needs the harness's own Connect worker: unset {CONNECT_URL_ENV}")
    _, worker = _harness_connect(request)
    yield worker
    if worker.process is not None and not worker.process.running:
        worker.relaunch()


@pytest.fixture(scope="session")
def hes_target(request: pytest.FixtureRequest) -> HesTarget:
    if dsn := _env(HES_DSN_ENV):
        stop, start = _env(HES_STOP_ENV), _env(HES_START_ENV)
        return HesTarget(
            dsn,
            _env(HES_WRITER_ENV),
            _env(HES_SIGNAL_ENV),
            shell(stop) if stop else None,
            shell(start) if start else None,
        )
    if not (_env(CONNECT_HOME_ENV) and _env(KAFKA_HOME_ENV)):
        pytest.skip(
            f"no real HES: set {HES_DSN_ENV} to your HES database, or {CONNECT_HOME_ENV} and "
            f"{KAFKA_HOME_ENV} (the tests start one)"
        )
    hes, _ = _harness_connect(request)
    return HesTarget(hes.dsn("reader"), hes.dsn("writer"), hes.dsn("signal"), hes.stop, hes.start)
