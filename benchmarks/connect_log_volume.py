"""Bytes the Kafka Connect worker logs per 30 s while Kafka is up and while every node is down, with
the repository's log config (docker/connect/connect-log4j2.properties, what compose runs) and with
the runtime's default levels (Kafka's config/connect-log4j2.yaml: every logger at INFO; its
console part, the same file without its WARN loggers; that YAML also writes every line a second
time to `connect.log`, which is not counted here).

The harness's parts (tests/realstack): a 3-node Kafka cluster, the MariaDB HES and a distributed
Connect worker with `hes-measure`, without the tenants' load. Per log config a fresh worker runs
30 s with Kafka up, then every node is stopped for `--down` seconds and started again:

    VIGIA_TEST_KAFKA_HOME=/work/shared/kafka/kafka_2.13-4.0.0 \\
    VIGIA_TEST_CONNECT_HOME=/work/shared/connect-debezium-runtime \\
    flock /tmp/vigia-realstack.lock .venv/bin/python -m benchmarks.connect_log_volume

README.md's components table (Kafka Connect) says what the repository's config changes.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.conftest import free_port
from tests.realstack.connect_worker import LOG4J2, ConnectWorker
from tests.realstack.kafka_cluster import STARTED, KafkaCluster
from vigia.launcher.mariadb import HesDatabase

WINDOW = 30.0
LOGGER = re.compile(r"\(([\w.$]+):\d+\)$")


def default_levels(path: Path) -> Path:
    """The repository's config without its `logger.*` lines: everything at INFO, as the runtime's
    default says, on the same console appender and pattern."""
    lines = LOG4J2.read_text().splitlines()
    kept = [line for line in lines if not line.startswith(("logger.", "#"))]
    path.write_text("\n".join(kept) + "\n")
    return path


def restart_all(cluster: KafkaCluster, timeout: float = 300.0) -> None:
    """Every node launched before any is waited for: one node alone has no quorum to start."""
    for _, process in cluster.logs():
        process.launch()
    for _, process in cluster.logs():
        process.wait_for_line(STARTED, timeout)
    cluster.wait_for_brokers({1, 2, 3}, timeout)


def windows(log: Path, seconds: float) -> list[int]:
    """The bytes `log` grew by in each WINDOW of the next `seconds`."""
    sizes = [log.stat().st_size]
    began = time.monotonic()
    for k in range(1, int(seconds // WINDOW) + 1):
        time.sleep(max(0.0, began + k * WINDOW - time.monotonic()))
        sizes.append(log.stat().st_size)
    return [b - a for a, b in itertools.pairwise(sizes)]


def loudest(text: str, top: int = 4) -> list[tuple[str, int]]:
    """The loggers that wrote the most bytes of `text`."""
    counts: Counter[str] = Counter()
    for line in text.splitlines(keepends=True):
        if found := LOGGER.search(line.rstrip()):
            counts[found.group(1)] += len(line.encode())
    return counts.most_common(top)


def measure(
    name: str, config: Path, cluster: KafkaCluster, hes: HesDatabase, workdir: Path, down: float
) -> None:
    worker = ConnectWorker(
        Path(os.environ["VIGIA_TEST_CONNECT_HOME"]), cluster.home, workdir / name, config
    )
    try:
        worker.start(cluster.bootstrap, hes)
        assert worker.process is not None
        log = worker.process.log
        time.sleep(10)  # the task's start-up lines are not the steady state
        up = windows(log, WINDOW)
        mark = log.stat().st_size
        cluster.close()
        stopped = windows(log, down)
        with log.open("rb") as f:
            f.seek(mark)
            chatter = f.read().decode(errors="replace")
        restart_all(cluster)
    finally:
        worker.close()
    print(f"{name}: bytes per {WINDOW:.0f} s, Kafka up {up}, all nodes down {stopped}")
    for logger, size in loudest(chatter):
        print(f"  while down: {size:>9,} B  {logger}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down", type=float, default=60.0, help="seconds every node is down")
    parser.add_argument("--repo-only", action="store_true", help="skip the default levels")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vigia-connect-log-") as tmp:
        workdir = Path(tmp)
        cluster = KafkaCluster(Path(os.environ["VIGIA_TEST_KAFKA_HOME"]), workdir / "kafka")
        hes = HesDatabase(workdir / "hes", free_port())
        try:
            cluster.start_all()
            cluster.create_pipeline_topics()
            hes.start()
            measure("repository config", LOG4J2, cluster, hes, workdir, args.down)
            if not args.repo_only:
                defaults = default_levels(workdir / "default-levels.properties")
                measure("default levels", defaults, cluster, hes, workdir, args.down)
        finally:
            hes.close()
            cluster.close()


if __name__ == "__main__":
    main()
