"""A librdkafka mock cluster in a child process that the test can steer: stop and start a broker,
create a topic, move a partition's leader.

The child hosts `tests.rdkafka_mock.ControlledCluster` (the mock's control API through ctypes), so
that a test can also stop the whole cluster (SIGSTOP) or outlive it. Each command is a line on the
child's stdin, answered by one line (0 = done, else ERROR and why):

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
from pathlib import Path
from types import TracebackType

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import sys

from tests.rdkafka_mock import ControlledCluster

cluster = ControlledCluster(int(sys.argv[1]))
print(cluster.bootstrap_servers, flush=True)
commands = {
    "topic": lambda topic, partitions, rf: cluster.create_topic(topic, int(partitions), int(rf)),
    "leader": lambda topic, part, broker: cluster.set_leader(topic, int(part), int(broker)),
    "down": lambda broker: cluster.broker_down(int(broker)),
    "up": lambda broker: cluster.broker_up(int(broker)),
}
for line in sys.stdin:
    command, *args = line.split()
    try:
        commands[command](*args)
        print(0, flush=True)
    except Exception as exc:  # the answer line says what failed
        print(f"ERROR {exc!r}", flush=True)
"""


class MockClusterProcess:
    def __init__(self, brokers: int = 3) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(brokers)],
            cwd=REPO,  # where the child imports tests.rdkafka_mock from
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
