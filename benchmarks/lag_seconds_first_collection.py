"""Lag seconds right after an exporter start on the harness's real 3-node cluster (issue 20 §2):
how many collections until every lagging group-topic has `kafka_consumergroup_max_lag_seconds`,
and what the first collections cost, for this tree and for others (e.g. an older commit unpacked
with `git archive`).

Seeds `--topics` topics of 50 partitions with hour-old records (CreateTime) and `--groups` groups,
each lagging on all partitions of two topics at its own offsets: 50 groups make 5,000 lagging
group-partitions, all distinct committed offsets. Then, per tree, a fresh process runs the
exporter's own steps (KafkaAdapter.collect, the record-times step at its defaults, derive) for
`--collections` collections and prints per collection the group-topics with a maximum and the
process CPU seconds (every thread, librdkafka's included) of the collection and of the reads:

    PYTHONPATH=. python -m benchmarks.lag_seconds_first_collection \
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0 --tree . --tree /tmp/vigia-46cc1cb
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.realstack.groups import commit_groups
from tests.realstack.kafka_cluster import KafkaCluster
from tests.realstack.topics import create_topic

PARTITIONS = 50
PER_PARTITION = 60
AGE_SECONDS = 3600.0

# Runs with PYTHONPATH set to the tree measured.
MEASURE = """
import sys, time
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.kafka.record_times import RecordTimeReader
from vigia.exporter.model.filters import Filters
from vigia.exporter.model.record_time import RecordBudget
from vigia.exporter.model.state import History, derive
adapter = KafkaAdapter(sys.argv[1], {}, Filters())
reader = RecordTimeReader(sys.argv[1], {}, RecordBudget())
history, state = History(), None
for n in range(1, int(sys.argv[2]) + 1):
    started = time.monotonic()
    cpu = time.process_time()
    snapshot = adapter.collect(10)
    collected = time.process_time()
    snapshot = reader(snapshot, state, 10 - (time.monotonic() - started))
    read = time.process_time()
    state = derive(state, snapshot, history)
    lagging = {(i.group, i.topic) for i in state.group_lags if i.lag}
    covered = len(lagging & state.max_lag_seconds.keys())
    # Right: within a tenth of the records' true age (an hour), not the exporter's uptime.
    right = sum(1 for k in lagging if state.max_lag_seconds.get(k, 0) >= 0.9 * 3600)
    print(f"collection {n}: {len(snapshot.groups)} groups, failed phases "
          f"{sorted(snapshot.failed_phases)}, {[e.message[:120] for e in snapshot.errors][:3]}; "
          f"{covered} of {len(lagging)} lagging group-topics with a maximum, {right} of them "
          f"within 10 % of the records' age; "
          f"CPU {time.process_time() - cpu:.2f} s (collect {collected - cpu:.2f}, "
          f"reads {read - collected:.2f}: {len(snapshot.record_times)} records in "
          f"{snapshot.durations.get('record_times', 0):.2f} s), "
          f"wall {time.monotonic() - started:.2f} s", flush=True)
    time.sleep(max(0.0, 15 - (time.monotonic() - started)))
reader.close()
adapter.close()
"""


def seed(bootstrap: str, topics: int, groups: int) -> None:
    names = [f"lagging-{n}" for n in range(topics)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    failed: list[str] = []

    def delivered(err: object, _: object) -> None:
        if err is not None:
            failed.append(str(err))

    first_ms = int((time.time() - AGE_SECONDS) * 1000)
    for name in names:
        create_topic(bootstrap, name, PARTITIONS, config={"message.timestamp.type": "CreateTime"})
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.produce(
                    name, b"{}", partition=p, timestamp=first_ms + i, on_delivery=delivered
                )
        producer.poll(0)
    assert producer.flush(120) == 0
    if failed:
        raise RuntimeError(f"{len(failed)} messages not delivered, first: {failed[0]}")
    commits = {}
    for g in range(groups):
        two = [names[(2 * g) % topics], names[(2 * g + 1) % topics]]
        offset = 1 + g % (PER_PARTITION - 1)
        commits[f"lagging-group-{g}"] = [
            TopicPartition(t, p, offset) for t in two for p in range(PARTITIONS)
        ]
    commit_groups(AdminClient({"bootstrap.servers": bootstrap}), commits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--tree", type=Path, action="append", required=True)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--collections", type=int, default=3)
    args = parser.parse_args()
    cluster = KafkaCluster(args.kafka_home, Path(tempfile.mkdtemp(prefix="vigia-lag-start-")))
    try:
        cluster.start_all()
        seed(cluster.bootstrap, args.topics, args.groups)
        print(f"{args.groups} groups × 2 topics × {PARTITIONS} partitions lagging", flush=True)
        for tree in args.tree:
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            argv = [sys.executable, "-c", MEASURE, cluster.bootstrap, str(args.collections)]
            # cwd too: `python -c` puts the working directory first on sys.path.
            done = subprocess.run(
                argv, env=env, cwd=tree, capture_output=True, text=True, timeout=900
            )
            print(f"{tree}:\n{done.stdout.strip() or done.stderr.strip()[-800:]}", flush=True)
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
