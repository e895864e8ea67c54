"""librdkafka's mock cluster through its C API (rd_kafka_mock_*), which confluent-kafka does not
expose. ctypes loads the librdkafka inside the confluent-kafka wheel, so the clients and the mock
share it. The demo's cluster (launcher/mock_cluster.py) and the tests' (tests/rdkafka_mock.py)
use it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from pathlib import Path

import confluent_kafka

_P = ctypes.c_void_p
Signature = tuple[object, list[object]]

SIGNATURES: Mapping[str, Signature] = {
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
    "rd_kafka_mock_topic_create": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
    "rd_kafka_mock_partition_set_leader": (
        ctypes.c_int,
        [_P, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32],
    ),
}


def load(signatures: Mapping[str, Signature] = SIGNATURES) -> ctypes.CDLL:
    bundled = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    found = sorted(bundled.glob("librdkafka*.so*"))
    lib = ctypes.CDLL(str(found[0]) if found else "librdkafka.so.1")
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


class MockCluster:
    """A mock cluster of ``brokers`` brokers (ids 1..n), held by a client handle of its own."""

    def __init__(self, brokers: int, lib: ctypes.CDLL | None = None) -> None:
        self._lib = lib or load()
        conf = self._lib.rd_kafka_conf_new()
        errors = ctypes.create_string_buffer(512)
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"0", errors, len(errors))
        # The mock cluster needs a handle to live in; this one never connects anywhere.
        self._handle = self._lib.rd_kafka_new(1, conf, errors, len(errors))  # 1: consumer
        if not self._handle:
            raise RuntimeError(errors.value.decode())
        self._cluster = self._lib.rd_kafka_mock_cluster_new(self._handle, brokers)
        self.bootstrap_servers: str = self._lib.rd_kafka_mock_cluster_bootstraps(
            self._cluster
        ).decode()
        self.brokers = brokers

    def create_topic(self, topic: str, partitions: int, replication: int) -> None:
        code = self._lib.rd_kafka_mock_topic_create(
            self._cluster, topic.encode(), partitions, replication
        )
        if code != 0:
            raise RuntimeError(f"cannot create topic {topic}: error {code}")

    def set_leader(self, topic: str, partition: int, broker: int) -> None:
        code = self._lib.rd_kafka_mock_partition_set_leader(
            self._cluster, topic.encode(), partition, broker
        )
        if code != 0:
            raise RuntimeError(f"cannot move {topic}-{partition} to broker {broker}: error {code}")

    def close(self) -> None:
        if self._cluster:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._lib.rd_kafka_destroy(self._handle)
            self._cluster = self._handle = None
