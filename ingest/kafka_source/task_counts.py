"""The read tasks' Kafka retries and skipped offsets to the driver, through a Spark accumulator.

``read()`` runs in executors' Python workers, on whichever host Spark placed them; a local spool
directory (`retry_spool`) only reaches the driver's host. An accumulator reaches the driver from
every executor: the worker sends its tasks' additions with each task's result, and the driver's
Python merges them on Spark's accumulator-update thread.

How the accumulator gets to ``read()``: the data source class is pickled at registration and
re-created in the planner workers, which build the reader and pickle it into each task. Our
`KafkaDataSource` is importable, so it is pickled by reference and a class attribute set on the
driver would not travel; `source.counted_source` makes a subclass at registration time, which
cloudpickle pickles by value, accumulator included (an accumulator pickles as its id and zero
value, and re-registers itself wherever it is unpickled).

What the count means (checked on pyspark 4.3): cumulative, not per batch; added when a task ends,
so a read still running is not in it yet; a failed task attempt adds nothing (its retries show in
the executor's log only); a read Spark computes twice counts twice (the job's foreachBatch
persists the batch, so its two actions read Kafka once). The planner's calls (latestOffset,
commit) run in a runner that never sends accumulator updates: those stay with the spool.
"""

from __future__ import annotations

from collections import Counter

from pyspark import SparkContext
from pyspark.accumulators import Accumulator, AccumulatorParam

from vigia.ingest.kafka_source.counts import (
    Counts,
    RetryCounts,
    SkippedOffsets,
    added,
    retries_of,
    retry,
    skipped,
    skipped_of,
)


class CountsParam(AccumulatorParam[Counts]):
    def zero(self, value: Counts) -> Counts:
        return Counter()

    def addInPlace(self, value1: Counts, value2: Counts) -> Counts:
        # Despite the name, a new value (see counts.added): never change one the driver may read.
        return added(value1, value2)


class AccumulatorObserver:
    """A `retry.RetryObserver` with ``skipped``, as `retry_spool.SpoolObserver`, adding to an
    accumulator: what a task adds reaches the driver when the task ends."""

    def __init__(self, accumulator: Accumulator[Counts]) -> None:
        self._accumulator = accumulator

    def __call__(self, call: str, error: str) -> None:
        self._accumulator.add(retry(call, error))

    def skipped(self, topic: str, partition: int, offsets: int) -> None:
        self._accumulator.add(skipped(topic, partition, offsets))


class TaskCounts:
    """The driver's end: the accumulator, made once a SparkContext exists (the job's metrics are
    served before Spark starts); empty until then."""

    def __init__(self) -> None:
        self.accumulator: Accumulator[Counts] | None = None

    def attach(self, context: SparkContext) -> Accumulator[Counts]:
        if self.accumulator is None:
            self.accumulator = context.accumulator(Counter(), CountsParam())
        return self.accumulator

    def value(self) -> Counts:
        return self.accumulator.value if self.accumulator is not None else Counter()

    def retries(self) -> RetryCounts:
        return retries_of(self.value())

    def skipped(self) -> SkippedOffsets:
        return skipped_of(self.value())
