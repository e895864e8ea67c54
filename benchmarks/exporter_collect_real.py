"""CPU seconds of one collection on the harness's real 3-node cluster, for this tree and for others
(e.g. an older commit unpacked with `git archive`): the process CPU time (every thread, librdkafka's
and kafka-python's included) of `KafkaAdapter.collect`, median of `--collections`.

    PYTHONPATH=. python -m benchmarks.exporter_collect_real \
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --tree . --tree /tmp/vigia-7aae5f5
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.exporter_restarts import seed
from tests.realstack.kafka_cluster import KafkaCluster

# Runs with PYTHONPATH set to the tree measured.
MEASURE = """
import statistics, sys, time
from exporter.model.filters import Filters
from exporter.kafka.adapter import KafkaAdapter
adapter = KafkaAdapter(sys.argv[1], {}, Filters())
adapter.collect(10)  # connections, kafka-python's bootstrap
cpu, wall, ok = [], [], 0
for _ in range(int(sys.argv[2])):
    c, w = time.process_time(), time.monotonic()
    snapshot = adapter.collect(10)
    cpu.append(time.process_time() - c)
    wall.append(time.monotonic() - w)
    ok += snapshot.ok
    time.sleep(1)
adapter.close()
print(f"{statistics.median(cpu):.3f} CPU-s, {statistics.median(wall):.2f} s per collection, "
      f"{ok} of {len(cpu)} complete, {len(snapshot.groups)} groups, "
      f"{sum(len(t.partitions) for t in snapshot.topics)} partitions")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--tree", type=Path, action="append", required=True)
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--collections", type=int, default=10)
    args = parser.parse_args()
    cluster = KafkaCluster(args.kafka_home, Path(tempfile.mkdtemp(prefix="vigia-collect-")))
    try:
        cluster.start_all()
        seed(cluster.bootstrap, [f"drill-{n}" for n in range(args.topics)], args.groups)
        time.sleep(5)
        for tree in args.tree:
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            argv = [sys.executable, "-c", MEASURE, cluster.bootstrap, str(args.collections)]
            # cwd too: `python -c` puts the working directory first on sys.path.
            done = subprocess.run(
                argv, env=env, cwd=tree, capture_output=True, text=True, timeout=900
            )
            print(f"{tree}: {done.stdout.strip() or done.stderr.strip()[-500:]}")
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
