"""librdkafka's mock cluster with its control API, which confluent-kafka does not expose.

`test.mock.num.brokers` gives brokers that never fail; the mock's C API (rd_kafka_mock_*, in the
librdkafka that ships inside the confluent-kafka wheel) can also take a broker down and up, move a
partition's leader and make a broker answer requests with errors: what a rolling restart does to
clients. ctypes loads that very library, so the clients under test and the mock share it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import confluent_kafka
from confluent_kafka import Producer

PRODUCE: Final = 0
FETCH: Final = 1
LIST_OFFSETS: Final = 2
METADATA: Final = 3
OFFSET_COMMIT: Final = 8

_P = ctypes.c_void_p


def _library() -> ctypes.CDLL:
    bundled = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    found = sorted(bundled.glob("librdkafka*.so*"))
    lib = ctypes.CDLL(str(found[0]) if found else "librdkafka.so.1")
    signatures: dict[str, tuple[object, list[object]]] = {
        "rd_kafka_conf_new": (_P, []),
        "rd_kafka_conf_set": (
            ctypes.c_int,
            [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t],
        ),
        "rd_kafka_new": (_P, [ctypes.c_int, _P, ctypes.c_char_p, ctypes.c_size_t]),
        "rd_kafka_destroy": (None, [_P]),
        "rd_kafka_mock_cluster_new": (_P, [_P, ctypes.c_int]),
        "rd_kafka_mock_cluster_destroy": (None, [_P]),
        "rd_kafka_mock_cluster_bootstraps": (ctypes.c_char_p, [_P]),
        "rd_kafka_mock_topic_create": (
            ctypes.c_int,
            [_P, ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
        ),
        "rd_kafka_mock_partition_set_leader": (
            ctypes.c_int,
            [_P, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32],
        ),
        "rd_kafka_mock_broker_set_down": (ctypes.c_int, [_P, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_up": (ctypes.c_int, [_P, ctypes.c_int32]),
        "rd_kafka_mock_push_request_errors_array": (
            None,
            [_P, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)],
        ),
        "rd_kafka_mock_clear_request_errors": (None, [_P, ctypes.c_int16]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


_LIB: Final = _library()


class ControlledCluster:
    """A mock cluster of ``brokers`` brokers (ids 1..n) whose brokers and leaders tests control."""

    def __init__(self, brokers: int = 3) -> None:
        conf = _LIB.rd_kafka_conf_new()
        errors = ctypes.create_string_buffer(512)
        _LIB.rd_kafka_conf_set(conf, b"log_level", b"0", errors, len(errors))
        # The mock cluster needs a handle to live in; this one never connects anywhere.
        self._handle = _LIB.rd_kafka_new(1, conf, errors, len(errors))  # 1: consumer
        if not self._handle:
            raise RuntimeError(errors.value.decode())
        self._cluster = _LIB.rd_kafka_mock_cluster_new(self._handle, brokers)
        self.bootstrap_servers: str = _LIB.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()
        self.brokers = brokers

    def create_topic(self, topic: str, partitions: int, replication: int = 3) -> None:
        assert (
            _LIB.rd_kafka_mock_topic_create(self._cluster, topic.encode(), partitions, replication)
            == 0
        )
        # Make sure clients see it before the test goes on.
        metadata = Producer({"bootstrap.servers": self.bootstrap_servers}).list_topics(timeout=10)
        assert topic in metadata.topics

    def set_leader(self, topic: str, partition: int, broker: int) -> None:
        assert (
            _LIB.rd_kafka_mock_partition_set_leader(
                self._cluster, topic.encode(), partition, broker
            )
            == 0
        )

    def broker_down(self, broker: int) -> None:
        """Closes the broker's connections and refuses new ones (a stopped broker)."""
        assert _LIB.rd_kafka_mock_broker_set_down(self._cluster, broker) == 0

    def broker_up(self, broker: int) -> None:
        assert _LIB.rd_kafka_mock_broker_set_up(self._cluster, broker) == 0

    def push_errors(self, api_key: int, *codes: int) -> None:
        """The next requests of kind ``api_key`` (to any broker) fail with ``codes``, in order."""
        array = (ctypes.c_int * len(codes))(*codes)
        _LIB.rd_kafka_mock_push_request_errors_array(self._cluster, api_key, len(codes), array)

    def clear_errors(self, api_key: int) -> None:
        _LIB.rd_kafka_mock_clear_request_errors(self._cluster, api_key)

    def close(self) -> None:
        if self._cluster:
            _LIB.rd_kafka_mock_cluster_destroy(self._cluster)
            _LIB.rd_kafka_destroy(self._handle)
            self._cluster = self._handle = None


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
