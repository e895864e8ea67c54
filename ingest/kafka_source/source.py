"""``vigia-kafka``: a Kafka streaming source on PySpark's Python Data Source API (pyspark ≥ 4.2).

Spark drives it from two kinds of Python processes:
- one long-lived planner worker per query runs `KafkaStreamReader`'s offset methods
  (initialOffset, latestOffset, partitions, commit, reportLatestOffset) with one admin client
  (`KafkaAdmin`) for metadata, watermarks and group commits;
- Spark tasks run `read()` on a pickled copy, one task per Kafka partition with data in the batch.

Their Kafka retries and skipped offsets reach the driver's metrics by two channels: the planner's
through the spool (`retry_spool`, the driver's host), the tasks' through an accumulator
(`task_counts`) when the source was registered with one (`counted_source`), else the spool too.

Offsets are ``{topic: {partition: next offset}}`` dicts that Spark writes to the checkpoint's offset
log before a batch runs, so a restarted query replays exactly the ranges it had planned.

`commit(end)` is how Spark tells a source a batch is done. MicroBatchExecution calls it while
constructing the *next* batch (the walCommit step), with the previous batch's end offsets, i.e.
after that batch's sink and commit log completed; the last batch of a run never gets the call
(checked with pyspark 4.3: an available-now run over three batches committed the end of the
second). The reader then commits ``end`` to the consumer group (``commitGroupId``, default
vigia-ingest) so the exporter, Burrow and kafka-consumer-groups show the lag of anyone using the
source. The ingest job does not wait for it: it commits each batch's end as soon as the batch is
done (`ingest.job.GroupCommitListener`), through the same `KafkaAdmin.commit`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from pyspark.accumulators import Accumulator
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from vigia.ingest.kafka_source import SOURCE_NAME
from vigia.ingest.kafka_source.adapter import KafkaAdmin, KafkaSourceError
from vigia.ingest.kafka_source.counts import Counts
from vigia.ingest.kafka_source.offsets import (
    OffsetRange,
    Offsets,
    PartitionLoss,
    from_json,
    next_end,
    plan_ranges,
    to_json,
)
from vigia.ingest.kafka_source.options import SourceOptions
from vigia.ingest.kafka_source.reader import read_range
from vigia.ingest.kafka_source.retry_spool import SpoolObserver, spool_observer
from vigia.ingest.kafka_source.task_counts import AccumulatorObserver
from vigia.ingest.loss_log import record_loss
from vigia.ingest.retention_loss import RetentionLoss
from vigia.ingest.schema import KAFKA_SOURCE_SCHEMA

log = logging.getLogger(__name__)


class KafkaInputPartition(InputPartition):
    """One Spark task: one Kafka partition's offset range."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, counters: Accumulator[Counts] | None = None) -> None:
        """``counters``: where read() counts its retries and skipped offsets (`task_counts`);
        None: the spool, as the planner's calls."""
        self.options = options
        self.counters = counters
        self._admin: KafkaAdmin | None = None
        self._latest: Offsets | None = None
        self._target: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Tasks get a pickled copy of the reader for read(); a live Kafka client cannot travel.
        state = dict(self.__dict__)
        state["_admin"] = None
        return state

    @property
    def admin(self) -> KafkaAdmin:
        if self._admin is None:
            options = self.options
            self._admin = KafkaAdmin(
                options.bootstrap_servers,
                options.kafka_options,
                options.commit_group_id,
                options.kafka_timeout_s,
                observer=self._spool(),
            )
        return self._admin

    def _spool(self) -> SpoolObserver | None:
        spool = self.options.retry_spool_dir
        return spool_observer(spool) if spool else None

    def _task_observer(self) -> AccumulatorObserver | SpoolObserver | None:
        """read()'s counts: the accumulator reaches the driver from any host, the spool only
        from the driver's; never both, or a local run would count each retry twice."""
        if self.counters is not None:
            return AccumulatorObserver(self.counters)
        return self._spool()

    def _skipped(self, loss: PartitionLoss, appended_before: datetime | None) -> None:
        """Counts a range a read went on past, retention having deleted it, for the job's
        vigia_ingest_skipped_offsets_total, and records it for the completeness check. The
        planner's losses are not: a re-created topic or a deleted partition is read again from its
        start, nothing unread is passed."""
        if observer := self._task_observer():
            observer.skipped(loss.topic, loss.partition, loss.lost_to - loss.lost_from)
        if directory := self.options.loss_log_dir:
            record_loss(
                directory,
                RetentionLoss(
                    loss.topic,
                    loss.partition,
                    loss.lost_from,
                    loss.lost_to,
                    loss.why,
                    detected_at=datetime.now(UTC),
                    appended_before=appended_before,
                ),
            )

    def _watermarks(self) -> tuple[Offsets, Offsets]:
        return self.admin.topic_watermarks(self.options.topics)

    def initialOffset(self) -> dict[str, Any]:
        earliest, latest = self._watermarks()
        start = self.options.starting_offsets.resolve(earliest, latest)
        log.info("no checkpoint: starting at %s", to_json(start))
        return to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        _, self._target = self._watermarks()
        log.info("available-now: reading up to %s", to_json(self._target))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        earliest, latest = self._watermarks()
        self._latest = latest
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end, losses = next_end(from_json(start), latest, earliest, max_rows, self._target)
        for loss in losses:
            if self.options.fail_on_data_loss:
                raise KafkaSourceError(
                    f"data loss: {loss.describe()}; "
                    "failOnDataLoss=false (vigia-ingest: --no-fail-on-data-loss) goes on"
                )
            log.warning("data loss, going on: %s", loss.describe())
        return to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The newest offsets seen, so progress events carry sources[].latestOffset: the job's
        metrics compute offsets-behind-latest from it (a Python source gets no source metrics)."""
        return to_json(self._latest) if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return [KafkaInputPartition(r) for r in plan_ranges(from_json(start), from_json(end))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        return read_range(
            self.options.reader_config(),
            partition.offset_range,
            fail_on_data_loss=self.options.fail_on_data_loss,
            timeout_s=self.options.read_timeout_s,
            kafka_timeout_s=self.options.kafka_timeout_s,
            observer=self._task_observer(),
            on_skip=self._skipped,
        )

    def commit(self, end: dict[str, Any]) -> None:
        if not self.options.commit_group_id:
            return
        try:
            self.admin.commit(from_json(end))
        except KafkaSourceError as exc:
            # Lag reporting must not stop ingestion: the next batch's commit catches up.
            log.warning("offsets not committed to the group: %s", exc.sentence)

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None


class KafkaDataSource(DataSource):
    """``spark.readStream.format("vigia-kafka")``; register with `register(spark)`."""

    counters: Accumulator[Counts] | None = None
    """Set on `counted_source`'s subclasses only."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return KAFKA_SOURCE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options), type(self).counters)


def counted_source(counters: Accumulator[Counts]) -> type[KafkaDataSource]:
    """The source, its reads counting into ``counters``. A class made here is not importable by
    name, so cloudpickle sends it by value, the accumulator with it (see `task_counts`)."""
    return type("CountedKafkaDataSource", (KafkaDataSource,), {"counters": counters})
