"""librdkafka's mock cluster with the rest of its control API, for tests.

`test.mock.num.brokers` gives brokers that never fail; the mock's C API (`launcher.rdkafka_mock`)
can also take a broker down and up, move a partition's leader and make a broker answer requests
with errors: what a rolling restart does to clients.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from confluent_kafka import Producer

from vigia.launcher.rdkafka_mock import SIGNATURES, MockCluster, load

PRODUCE: Final = 0
FETCH: Final = 1
LIST_OFFSETS: Final = 2
METADATA: Final = 3
OFFSET_COMMIT: Final = 8

_P = ctypes.c_void_p
_LIB: Final = load(
    {
        **SIGNATURES,
        "rd_kafka_mock_broker_set_down": (ctypes.c_int, [_P, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_up": (ctypes.c_int, [_P, ctypes.c_int32]),
        "rd_kafka_mock_push_request_errors_array": (
            None,
            [_P, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)],
        ),
        "rd_kafka_mock_clear_request_errors": (None, [_P, ctypes.c_int16]),
        # Variadic: (error code, round-trip ms) pairs follow, passed as c_int each.
        "rd_kafka_mock_broker_push_request_error_rtts": (
            ctypes.c_int,
            [_P, ctypes.c_int32, ctypes.c_int16, ctypes.c_size_t],
        ),
    }
)


class ControlledCluster(MockCluster):
    """A mock cluster of ``brokers`` brokers (ids 1..n) whose brokers and leaders tests control."""

    def __init__(self, brokers: int = 3) -> None:
        super().__init__(brokers, _LIB)

    def create_topic(self, topic: str, partitions: int, replication: int = 3) -> None:
        super().create_topic(topic, partitions, replication)
        # Make sure clients see it before the test goes on.
        metadata = Producer({"bootstrap.servers": self.bootstrap_servers}).list_topics(timeout=10)
        assert topic in metadata.topics

    def broker_down(self, broker: int) -> None:
        """Closes the broker's connections and refuses new ones (a stopped broker)."""
        assert _LIB.rd_kafka_mock_broker_set_down(self._cluster, broker) == 0

    def broker_up(self, broker: int) -> None:
        assert _LIB.rd_kafka_mock_broker_set_up(self._cluster, broker) == 0

    def push_errors(self, api_key: int, *codes: int) -> None:
        """The next requests of kind ``api_key`` (to any broker) fail with ``codes``, in order."""
        array = (ctypes.c_int * len(codes))(*codes)
        _LIB.rd_kafka_mock_push_request_errors_array(self._cluster, api_key, len(codes), array)

    def push_broker_errors(self, broker: int, api_key: int, *codes: int) -> None:
        """The next requests of kind ``api_key`` to ``broker`` fail with ``codes``, in order."""
        pairs = [ctypes.c_int(n) for code in codes for n in (code, 0)]
        code = _LIB.rd_kafka_mock_broker_push_request_error_rtts(
            self._cluster, broker, api_key, len(codes), *pairs
        )
        assert code == 0, f"broker {broker}: error {code}"

    def clear_errors(self, api_key: int) -> None:
        _LIB.rd_kafka_mock_clear_request_errors(self._cluster, api_key)


@contextmanager
def controlled_cluster(brokers: int = 3) -> Iterator[ControlledCluster]:
    cluster = ControlledCluster(brokers)
    try:
        yield cluster
    finally:
        cluster.close()


def leaders(bootstrap_servers: str, topic: str) -> dict[int, int]:
    """Partition → leader broker id, as the cluster's metadata says now."""
    metadata = Producer({"bootstrap.servers": bootstrap_servers, "log_level": 0}).list_topics(
        topic, timeout=10
    )
    return {p.id: p.leader for p in metadata.topics[topic].partitions.values()}
