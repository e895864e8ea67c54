"""Fixtures shared by every test suite: recorded cluster data, loopback Kafka, free ports."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

KAFKA_FIXTURES = Path(__file__).parent / "fixtures" / "kafka-4.0-3node"
SCENARIOS = ("healthy", "healthy-later", "broker-down", "broker-back-imbalanced", "rebalanced")
# The real-system suites' fixtures (real_kafka_bootstrap, broker_control, connect_target, …), the
# one Spark session, CI's rule that a skipped test is a failed one, and a line per failure at the
# end.
pytest_plugins = ["tests.realstack.plugin", "tests.spark_session", "tests.strict", "tests.summary"]


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that this process was not
    given before: the kernel may hand a port just closed out again, and a test that picks its
    servers' ports one after another then gives two of them the same one."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


@dataclass(frozen=True)
class MockCluster:
    """librdkafka's in-process mock cluster; it lives as long as `handle` is referenced."""

    bootstrap_servers: str
    handle: object


def start_mock_cluster(num_brokers: int = 3) -> MockCluster:
    from confluent_kafka import Producer

    handle = Producer({"test.mock.num.brokers": num_brokers, "log_level": 3})
    metadata = handle.list_topics(timeout=10)
    servers = ",".join(
        f"{b.host}:{b.port}" for b in sorted(metadata.brokers.values(), key=lambda b: b.id)
    )
    return MockCluster(bootstrap_servers=servers, handle=handle)


@pytest.fixture
def mock_cluster() -> Iterator[MockCluster]:
    cluster = start_mock_cluster()
    yield cluster
    del cluster
