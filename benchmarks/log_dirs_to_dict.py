"""What kafka-python's `describe_log_dirs` spends turning one broker's answer into dicts.

A profile of the exporter at 50 groups (docs/performance.md, "Where the Python CPU goes") put
17 % of the CPU on `to_dict()` of DescribeLogDirs' answers, under yappi, which slows call-heavy
Python several times over. This times the same `to_dict()` without a profiler, on kafka-python's
own response objects shaped like one broker's answer (topics × partitions), against reading the
fields the exporter keeps straight from the objects. Prints CPU seconds per answer.

    python -m benchmarks.log_dirs_to_dict --topics 52 --partitions 40
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from kafka.protocol.admin.cluster import DescribeLogDirsResponse

Result = DescribeLogDirsResponse.DescribeLogDirsResult
Topic = Result.DescribeLogDirsTopic
Partition = Topic.DescribeLogDirsPartition


def answer(topics: int, partitions: int) -> list[Any]:
    return [
        Result(
            error_code=0,
            log_dir="/var/lib/kafka/data",
            total_bytes=1 << 40,
            usable_bytes=1 << 39,
            topics=[
                Topic(
                    name=f"topic-{t}",
                    partitions=[
                        Partition(
                            partition_index=p, partition_size=1 << 20, offset_lag=0,
                            is_future_key=False,
                        )
                        for p in range(partitions)
                    ],
                )
                for t in range(topics)
            ],
        )
    ]  # fmt: skip


def cpu_per_round(work: Callable[[], object], rounds: int) -> float:
    started = time.process_time()
    for _ in range(rounds):
        work()
    return (time.process_time() - started) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=52)
    parser.add_argument("--partitions", type=int, default=40, help="per topic")
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    results = answer(args.topics, args.partitions)

    def as_dicts() -> object:
        return [r.to_dict() for r in results]

    def as_fields() -> object:
        return [
            (t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
            for r in results
            for t in r.topics
            for p in t.partitions
        ]

    print(f"one broker's answer: {args.topics} topics × {args.partitions} partitions")
    print(f"  to_dict():          {cpu_per_round(as_dicts, args.rounds):.4f} CPU-s")
    print(f"  fields read direct: {cpu_per_round(as_fields, args.rounds):.4f} CPU-s")


if __name__ == "__main__":
    main()
