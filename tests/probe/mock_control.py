"""A librdkafka mock cluster in a child process that the test can steer: stop and start a broker,
create a topic, move a partition's leader.

confluent-kafka does not expose the mock's control functions (rdkafka_mock.h), so the child calls
them through ctypes on the librdkafka that confluent-kafka bundles. Each command is a line on the
child's stdin, answered by one line (librdkafka's error code, 0 = done):

    with MockClusterProcess(3) as mock:
        mock.command("topic", "vigia-probe", 3, 3)     # partitions, replication factor
        mock.command("leader", "vigia-probe", 0, 2)    # partition 0 now led by broker 2
        mock.command("down", 1)                        # broker 1 drops connections, refuses new
        mock.command("up", 1)

A broker that is down stays in the metadata and keeps its leaderships (the mock has no controller):
moving them is the test's job, as a real controller's would be.
"""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType

CHILD = r"""
import ctypes, glob, os, sys
import confluent_kafka

site = os.path.dirname(os.path.dirname(confluent_kafka.__file__))
libs = os.path.join(site, "confluent_kafka.libs")
found = glob.glob(os.path.join(libs, "librdkafka*.so*"))
if not found:
    print("ERROR no bundled librdkafka in " + libs, flush=True)
    sys.exit(1)
lib = ctypes.CDLL(found[0])
P, S, I = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
for name, res, args in (
    ("rd_kafka_conf_new", P, []),
    ("rd_kafka_new", P, [ctypes.c_int, P, S, ctypes.c_size_t]),
    ("rd_kafka_mock_cluster_new", P, [P, ctypes.c_int]),
    ("rd_kafka_mock_cluster_bootstraps", S, [P]),
    ("rd_kafka_mock_topic_create", ctypes.c_int, [P, S, ctypes.c_int, ctypes.c_int]),
    ("rd_kafka_mock_partition_set_leader", ctypes.c_int, [P, S, I, I]),
    ("rd_kafka_mock_broker_set_down", ctypes.c_int, [P, I]),
    ("rd_kafka_mock_broker_set_up", ctypes.c_int, [P, I]),
):
    getattr(lib, name).restype = res
    getattr(lib, name).argtypes = args
errstr = ctypes.create_string_buffer(512)
handle = lib.rd_kafka_new(0, lib.rd_kafka_conf_new(), errstr, 512)
cluster = lib.rd_kafka_mock_cluster_new(handle, int(sys.argv[1]))
print(lib.rd_kafka_mock_cluster_bootstraps(cluster).decode(), flush=True)
for line in sys.stdin:
    command, *args = line.split()
    if command == "topic":
        rc = lib.rd_kafka_mock_topic_create(cluster, args[0].encode(), int(args[1]), int(args[2]))
    elif command == "leader":
        rc = lib.rd_kafka_mock_partition_set_leader(
            cluster, args[0].encode(), int(args[1]), int(args[2])
        )
    elif command == "down":
        rc = lib.rd_kafka_mock_broker_set_down(cluster, int(args[0]))
    elif command == "up":
        rc = lib.rd_kafka_mock_broker_set_up(cluster, int(args[0]))
    else:
        rc = -1
    print(rc, flush=True)
"""


class MockClusterProcess:
    def __init__(self, brokers: int = 3) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(brokers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.bootstrap_servers = self._read()
        if not self.bootstrap_servers or self.bootstrap_servers.startswith("ERROR"):
            self.close()
            raise RuntimeError(f"mock cluster child failed: {self.bootstrap_servers!r}")

    def _read(self) -> str:
        assert self._process.stdout is not None
        return self._process.stdout.readline().strip()

    def command(self, *words: object) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(" ".join(str(w) for w in words) + "\n")
        self._process.stdin.flush()
        answer = self._read()
        if answer != "0":
            raise RuntimeError(f"mock command {words} failed: {answer!r}")

    def close(self) -> None:
        self._process.kill()
        self._process.wait(10)

    def __enter__(self) -> MockClusterProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
