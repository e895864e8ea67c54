"""CPU seconds of one collection on the harness's real 3-node cluster, for this tree and for others
(e.g. an older commit unpacked with `git archive`), each step as `vigia-exporter` runs it:
`KafkaAdapter.collect` and the record-times step (process CPU time: every thread, librdkafka's and
kafka-python's included), then `derive` and, inside it, the retention step (`retention_view`,
issue 22; trees before it have none); derive is pure and single-threaded, so it and its step are
timed in the thread's CPU time, apart from the clients' background threads. Median of
`--collections`, one a second.

The cluster gets `--topics` topics of 40 partitions, `--groups` groups with committed offsets on
20 partitions of one of them (benchmarks/exporter_restarts.py's seed), `--messages` messages in
every partition (the groups' commits at offset 1 leave them lag), and a live producer.
Issue 10's size, ≈ 2,100 partitions and 50 groups with lag, against the tree before issue 22:

    mkdir /tmp/vigia-753dd0b && git archive 753dd0b | tar -x -C /tmp/vigia-753dd0b
    PYTHONPATH=. python -m benchmarks.exporter_collect_real \
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --topics 52 --groups 50 \
        --tree . --tree /tmp/vigia-753dd0b

On the shared 2-core machine (2,130 partitions, 1,000 group-partitions with lag), CPU-s per
collection: collect 0.40 in both, record times 0.008; derive 0.113 with its retention step 0.023,
0.081 before issue 22.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from benchmarks.exporter_restarts import PARTITIONS, seed
from tests.realstack.kafka_cluster import KafkaCluster

# Runs with PYTHONPATH set to the tree measured.
MEASURE = """
import statistics, sys, time
from vigia.exporter.cli import tune_gc
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.kafka.record_times import RecordTimeReader
from vigia.exporter.model import state
from vigia.exporter.model.filters import Filters
from vigia.exporter.model.record_time import RecordBudget

# The retention step, timed where derive calls it.
retention_cpu = []
step = getattr(state, "retention_view", None)
if step is not None:
    def timed(*args, **kwargs):
        began = time.thread_time()
        try:
            return step(*args, **kwargs)
        finally:
            retention_cpu.append(time.thread_time() - began)
    state.retention_view = timed

bootstrap, collections = sys.argv[1], int(sys.argv[2])
adapter = KafkaAdapter(bootstrap, {}, Filters())
reader = RecordTimeReader(bootstrap, {}, RecordBudget())
history = state.History()
tune_gc()
# The first collection opens the connections (kafka-python's bootstrap too) and the first derive
# starts the histories: neither is measured.
previous = state.derive(None, reader(adapter.collect(10), None, 10), history)
retention_cpu.clear()
collect, records, derive, wall, ok = [], [], [], [], 0
for _ in range(collections):
    c, w = time.process_time(), time.monotonic()
    snapshot = adapter.collect(10)
    collect.append(time.process_time() - c)
    wall.append(time.monotonic() - w)
    ok += snapshot.ok
    c = time.process_time()
    snapshot = reader(snapshot, previous, 10)
    records.append(time.process_time() - c)
    c = time.thread_time()
    previous = state.derive(previous, snapshot, history)
    derive.append(time.thread_time() - c)
    time.sleep(1)
reader.close()
adapter.close()
median = statistics.median
lagging = sum(1 for g in previous.group_lags if g.lag)
retention = f"{median(retention_cpu):.4f}" if retention_cpu else "none"
print(f"CPU-s per collection: collect {median(collect):.3f} ({median(wall):.2f} s wall), "
      f"record times {median(records):.3f}, derive {median(derive):.4f} (its retention step "
      f"{retention}); {ok} of {len(collect)} complete, {len(snapshot.groups)} groups, "
      f"{sum(len(t.partitions) for t in snapshot.topics)} partitions, {lagging} group "
      f"partitions with lag")
"""


def fill(
    bootstrap: str, topics: list[str], per_partition: int, partitions: int = PARTITIONS
) -> None:
    """`per_partition` messages in every partition of the topics (`partitions` each): the groups'
    commits at 1 leave them lag."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for topic, partition, n in itertools.product(topics, range(partitions), range(per_partition)):
        producer.produce(topic, value=b'{"n": %d}' % n, partition=partition)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("the messages could not be written in 2 minutes")


def produce(
    bootstrap: str, topics: list[str], stop: threading.Event, partitions: int = PARTITIONS
) -> None:
    """About 100 messages a second round the partitions (`partitions` per topic) until `stop`:
    the backlogs grow, as a stopped ingest job's would, and the offsets move between
    collections."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for topic, partition in itertools.cycle(itertools.product(topics, range(partitions))):
        if stop.wait(0.01):
            break
        producer.produce(topic, value=b"{}", partition=partition)
        producer.poll(0)
    producer.flush(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--tree", type=Path, action="append", required=True)
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--collections", type=int, default=10)
    args = parser.parse_args()
    cluster = KafkaCluster(args.kafka_home, Path(tempfile.mkdtemp(prefix="vigia-collect-")))
    stop = threading.Event()
    try:
        cluster.start_all()
        topics = [f"drill-{n}" for n in range(args.topics)]
        seed(cluster.bootstrap, topics, args.groups)
        fill(cluster.bootstrap, topics, args.messages)
        producer = threading.Thread(
            target=produce, args=(cluster.bootstrap, topics, stop), daemon=True
        )
        producer.start()
        time.sleep(5)
        for tree in args.tree:
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            argv = [sys.executable, "-c", MEASURE, cluster.bootstrap, str(args.collections)]
            # In the tree too: `python -c` puts the working directory before PYTHONPATH.
            done = subprocess.run(
                argv, env=env, cwd=tree, capture_output=True, text=True, timeout=900
            )
            print(f"{tree}: {done.stdout.strip() or done.stderr.strip()[-500:]}")
        stop.set()
        producer.join(60)
    finally:
        stop.set()
        cluster.close()


if __name__ == "__main__":
    main()
