"""The ingest job's Prometheus metrics ("Ingest job" in shared/design/metrics.md), label ``query``.

Two feeds, both in the driver's Python process:
- `IngestListener`, a StreamingQueryListener: every progress event becomes a `ProgressSample`
  (`sample_from_progress`, pure) — rows, rates, phase durations, the observed per-reason invalid
  counts and newest measure TS (``df.observe`` in the stream), and offsets behind latest, computed
  from each source's ``latestOffset`` (our source reports it through reportLatestOffset, Spark's
  Kafka source natively) against the batch's ``endOffset``;
- the foreachBatch sink reports what it wrote (`BatchWritten`): valid rows, in-batch duplicates
  collapsed, rows per measure date.

`IngestMetrics` keeps the totals and builds every family afresh on each scrape (a custom collector).
Counters count since the process started, as Prometheus expects of counters; `day_measures` is
seeded from storage at start so it means "rows stored for that day", not "since restart".
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from pyspark.sql.streaming.listener import StreamingQueryListener

from vigia.ingest.deadline import DeadlineState
from vigia.ingest.freshness import COHORTS, FRESHNESS_BUCKETS, AgeCounts
from vigia.ingest.kafka_source.offsets import Offsets, from_json, offsets_behind
from vigia.ingest.schema import MAGNITUDES, PERIODS_PER_DAY, REASONS
from vigia.ingest.transform import OBSERVATION, OBSERVED_NEWEST_TS

log = logging.getLogger(__name__)

DAY_WINDOW: Final = 7
"""vigia_ingest_day_measures covers today and the 6 days before (UTC): bounded cardinality."""
BATCH_DURATION_BUCKETS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)


def _offsets(value: Any) -> Offsets | None:
    """A progress event's offsets: a JSON object, or its text (Spark's Kafka source)."""
    if value is None:
        return None
    data = json.loads(value) if isinstance(value, str) else value
    if not isinstance(data, dict):
        return None
    try:
        return from_json(data)
    except (TypeError, ValueError, AttributeError):
        return None  # not a Kafka-shaped offset (another kind of source)


def _epoch_seconds(timestamp: str) -> float:
    return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class ProgressSample:
    """What the metrics take from one progress event."""

    batch_id: int
    timestamp: float
    input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float
    batch_duration_seconds: float
    phase_seconds: dict[str, float]
    invalid_by_reason: dict[str, int]
    newest_measure_timestamp: float | None
    offsets_behind: dict[str, int]
    end_offsets: Offsets


def sample_from_progress(
    progress: Mapping[str, Any], observation: str = OBSERVATION
) -> ProgressSample:
    """A StreamingQueryProgress as JSON (``json.loads(progress.json)``) → ProgressSample."""
    observed = (progress.get("observedMetrics") or {}).get(observation) or {}
    newest = observed.get(OBSERVED_NEWEST_TS)
    behind: dict[str, int] = {}
    end_offsets: Offsets = {}
    for source in progress.get("sources") or []:
        end = _offsets(source.get("endOffset"))
        if end is None:
            continue
        end_offsets.update(end)
        latest = _offsets(source.get("latestOffset"))
        if latest is not None:
            for topic, gap in offsets_behind(end, latest).items():
                behind[topic] = max(behind.get(topic, 0), gap)
    return ProgressSample(
        batch_id=int(progress["batchId"]),
        timestamp=_epoch_seconds(str(progress["timestamp"])),
        input_rows=int(progress.get("numInputRows") or 0),
        input_rows_per_second=float(progress.get("inputRowsPerSecond") or 0.0),
        processed_rows_per_second=float(progress.get("processedRowsPerSecond") or 0.0),
        batch_duration_seconds=float(progress.get("batchDuration") or 0) / 1000,
        phase_seconds={k: float(v) / 1000 for k, v in (progress.get("durationMs") or {}).items()},
        invalid_by_reason={r.value: int(observed.get(r.value) or 0) for r in REASONS},
        newest_measure_timestamp=float(newest) if newest is not None else None,
        offsets_behind=behind,
        end_offsets=end_offsets,
    )


@dataclass(frozen=True)
class BatchWritten:
    """What the sink published for one batch."""

    batch_id: int
    valid_rows: int
    duplicate_rows: int
    rows_by_date: dict[dt.date, int] = field(default_factory=dict)
    freshness: Mapping[str, AgeCounts] = field(default_factory=dict)
    """Ages of the stored measures per cohort (`ingest.freshness.cohort_ages`)."""


def day_window(today: dt.date) -> list[dt.date]:
    return [today - dt.timedelta(days=back) for back in range(DAY_WINDOW - 1, -1, -1)]


def expected_measures_per_day(meters: int | None) -> int | None:
    """Measures a complete day holds: every meter, every period, every magnitude."""
    return None if meters is None else meters * PERIODS_PER_DAY * len(MAGNITUDES)


def judged_days(today: dt.date, running_since: float) -> list[dt.date]:
    """Closed days of the window the job was running through, whose completeness is judged.

    A day the job started during (or after) is not: a brand-new install never saw yesterday, and
    a day it joined halfway may only be partly in Kafka's retention. A day with nothing stored
    that the job ran through counts, as 0."""
    start = dt.datetime.fromtimestamp(running_since, dt.UTC)
    first = start.date() if start.time() == dt.time(0) else start.date() + dt.timedelta(days=1)
    return [day for day in day_window(today)[:-1] if day >= first]


def utc_today(clock: Callable[[], float] = time.time) -> dt.date:
    return dt.datetime.fromtimestamp(clock(), dt.UTC).date()


class IngestMetrics(Collector):
    """Thread-safe totals fed by the listener and the sink; a prometheus-client collector."""

    def __init__(
        self,
        query: str,
        clock: Callable[[], float] = time.time,
        trigger_interval: float | None = None,
        expected_per_day: int | None = None,
        kafka_retries: Callable[[], Mapping[tuple[str, str], int]] = dict,
        skipped_offsets: Callable[[], Mapping[tuple[str, int], int]] = dict,
    ) -> None:
        """``trigger_interval``: the configured seconds between batches (None for available-now
        runs), exposed so boards can tell a slow batch from a long trigger. ``expected_per_day``:
        measures a complete day holds (`expected_measures_per_day`); None serves no ratio.
        ``kafka_retries``: the Kafka calls' retries so far by (call, error), read on each scrape
        (the job sums `ingest.kafka_source.retry_spool` and `ingest.kafka_source.task_counts`);
        ``skipped_offsets``: the offsets reads went on past because retention had deleted them,
        by (topic, partition), read the same way."""
        self.query = query
        self._clock = clock
        self._trigger_interval = trigger_interval
        self._expected_per_day = expected_per_day
        self._kafka_retries = kafka_retries
        self._skipped_offsets = skipped_offsets
        self._lock = threading.Condition()
        self._active = False
        self._batches = 0
        self._input_rows = 0
        self._valid_rows = 0
        self._duplicate_rows = 0
        self._invalid = dict.fromkeys((r.value for r in REASONS), 0)
        self._last: ProgressSample | None = None
        self._last_progress: float | None = None
        self._newest_measure: float | None = None
        self._buckets = [0] * (len(BATCH_DURATION_BUCKETS) + 1)
        self._duration_sum = 0.0
        self._days: dict[dt.date, int] = {}
        self._source_days: dict[dt.date, int] = {}
        self._seen_batches: set[int] = set()
        self._running_since: float | None = None
        self._freshness = {cohort: AgeCounts() for cohort in COHORTS}
        self._deadline: DeadlineState | None = None
        self._deadline_overdue = 0

    # -- feeds -------------------------------------------------------------------------------
    def query_started(self) -> None:
        with self._lock:
            self._active = True

    def query_terminated(self) -> None:
        with self._lock:
            self._active = False

    def idle(self, timestamp: float) -> None:
        """An idle event proves the query is alive and polling, just without new data."""
        with self._lock:
            self._last_progress = max(self._last_progress or 0.0, timestamp)

    def progress(self, sample: ProgressSample) -> None:
        with self._lock:
            self._last = sample
            self._last_progress = max(self._last_progress or 0.0, sample.timestamp)
            if sample.newest_measure_timestamp is not None:
                self._newest_measure = max(
                    self._newest_measure or 0.0, sample.newest_measure_timestamp
                )
            if sample.batch_id in self._seen_batches:
                return
            self._seen_batches.add(sample.batch_id)
            self._lock.notify_all()
            self._batches += 1
            self._input_rows += sample.input_rows
            for reason, count in sample.invalid_by_reason.items():
                self._invalid[reason] = self._invalid.get(reason, 0) + count
            self._buckets[bisect_left(BATCH_DURATION_BUCKETS, sample.batch_duration_seconds)] += 1
            self._duration_sum += sample.batch_duration_seconds

    def wait_for_batch(self, batch_id: int, timeout_s: float) -> bool:
        """Wait until the progress event of ``batch_id`` was counted (listeners are asynchronous);
        False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: batch_id in self._seen_batches, timeout_s)

    def batch_written(self, written: BatchWritten) -> None:
        with self._lock:
            self._valid_rows += written.valid_rows
            self._duplicate_rows += written.duplicate_rows
            for day, rows in written.rows_by_date.items():
                self._days[day] = self._days.get(day, 0) + rows
            for cohort, ages in written.freshness.items():
                self._freshness[cohort] = self._freshness[cohort] + ages

    def deadline_counted(self, state: DeadlineState, overdue: int) -> None:
        """The deadline counters' totals (`ingest.deadline_watch`) and how many due days could
        not be counted yet (the HES unreachable, storage unreadable)."""
        with self._lock:
            self._deadline = state
            self._deadline_overdue = overdue

    def source_day_rows(self, rows: Mapping[dt.date, int]) -> None:
        """Rows the HES holds per closed day (`ingest.hes_source.DayRowsRefresher`): with them, a
        day's completeness is judged against the source instead of meters × 96 × magnitudes."""
        with self._lock:
            self._source_days = dict(rows)

    def running_since(self, timestamp: float) -> None:
        """When the job first ran against its checkpoint (kept across restarts): days are judged
        complete or not only from the first one it was running through."""
        with self._lock:
            self._running_since = timestamp

    def seed_days(self, stored: Mapping[dt.date, int]) -> None:
        """Rows already in storage per date, read when the job starts."""
        with self._lock:
            for day, rows in stored.items():
                self._days[day] = self._days.get(day, 0) + rows

    # -- exposition ----------------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        with self._lock:
            yield from self._families()

    def _families(self) -> Iterable[Metric]:
        q = [self.query]
        labels = ["query"]

        def gauge(name: str, doc: str, value: float | None) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, doc, labels=labels)
            if value is not None:
                family.add_metric(q, value)
            return family

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            family = CounterMetricFamily(name, doc, labels=labels)
            family.add_metric(q, value)
            return family

        last = self._last
        yield gauge(
            "vigia_ingest_query_active", "1 while the streaming query runs.", float(self._active)
        )
        yield gauge(
            "vigia_ingest_trigger_interval_seconds",
            "Configured time between micro-batches (no sample for an available-now run).",
            self._trigger_interval,
        )
        yield counter("vigia_ingest_batches_total", "Completed micro-batches.", self._batches)
        yield counter("vigia_ingest_input_rows_total", "Kafka messages read.", self._input_rows)
        yield counter(
            "vigia_ingest_valid_rows_total", "Valid measures written to Parquet.", self._valid_rows
        )
        invalid = CounterMetricFamily(
            "vigia_ingest_invalid_rows_total",
            "Messages written to the quarantine, by reason.",
            labels=["query", "reason"],
        )
        for reason, count in sorted(self._invalid.items()):
            invalid.add_metric([self.query, reason], count)
        yield invalid
        yield counter(
            "vigia_ingest_duplicate_rows_total",
            "Valid measures not stored: a newer one for the same key in the same batch, "
            "or a measure a repair re-delivered that was stored already.",
            self._duplicate_rows,
        )
        retries = CounterMetricFamily(
            "vigia_ingest_kafka_retries_total",
            "Kafka calls of the job tried again after a retriable error, by call and error.",
            labels=["query", "call", "error"],
        )
        for (call, error), count in sorted(self._kafka_retries().items()):
            retries.add_metric([self.query, call, error], count)
        yield retries
        skipped = CounterMetricFamily(
            "vigia_ingest_skipped_offsets_total",
            "Offsets the job went on past because retention had deleted them before it read "
            "them (--no-fail-on-data-loss; the vigia-kafka source only), by partition.",
            labels=["query", "topic", "partition"],
        )
        for (topic, partition), count in sorted(self._skipped_offsets().items()):
            skipped.add_metric([self.query, topic, str(partition)], count)
        yield skipped
        yield gauge(
            "vigia_ingest_batch_input_rows",
            "Rows in the last micro-batch.",
            float(last.input_rows) if last else None,
        )
        yield gauge(
            "vigia_ingest_input_rows_per_second",
            "Input rate of the last micro-batch (from its progress event).",
            last.input_rows_per_second if last else None,
        )
        yield gauge(
            "vigia_ingest_processed_rows_per_second",
            "Processing rate of the last micro-batch (from its progress event).",
            last.processed_rows_per_second if last else None,
        )
        histogram = HistogramMetricFamily(
            "vigia_ingest_batch_duration_seconds",
            "Duration of micro-batches.",
            labels=labels,
        )
        cumulative, buckets = 0, []
        for le, count in zip((*BATCH_DURATION_BUCKETS, float("inf")), self._buckets, strict=True):
            cumulative += count
            buckets.append(("+Inf" if le == float("inf") else repr(le), cumulative))
        histogram.add_metric(q, buckets, self._duration_sum)
        yield histogram
        yield self._freshness_family()
        phases = GaugeMetricFamily(
            "vigia_ingest_phase_duration_seconds",
            "The last micro-batch's durationMs breakdown, by Spark's phase names.",
            labels=["query", "phase"],
        )
        for phase, seconds in sorted((last.phase_seconds if last else {}).items()):
            phases.add_metric([self.query, phase], seconds)
        yield phases
        behind = GaugeMetricFamily(
            "vigia_ingest_offsets_behind_latest",
            "Largest number of offsets a partition of the topic had left after the last batch.",
            labels=["query", "topic"],
        )
        for topic, gap in sorted((last.offsets_behind if last else {}).items()):
            behind.add_metric([self.query, topic], gap)
        yield behind
        yield gauge(
            "vigia_ingest_last_progress_timestamp_seconds",
            "When the query last reported progress (or idleness): old means stuck.",
            self._last_progress,
        )
        yield gauge(
            "vigia_ingest_newest_measure_timestamp_seconds",
            "Newest measure TS written (freshness).",
            self._newest_measure,
        )
        days = GaugeMetricFamily(
            "vigia_ingest_day_measures",
            f"Rows stored per measure date, for the last {DAY_WINDOW} days (UTC).",
            labels=["query", "measure_date"],
        )
        today = utc_today(self._clock)
        for day in day_window(today):
            if day in self._days:
                days.add_metric([self.query, day.isoformat()], self._days[day])
        yield days
        ratio = GaugeMetricFamily(
            "vigia_ingest_day_completeness_ratio",
            "Rows stored ÷ measures expected, for closed days of the last "
            f"{DAY_WINDOW} (UTC) the job was running through (from their first second): "
            "expected = the HES's rows for the day with --hes-dsn (days the HES holds rows for), "
            "else meters × 96 × magnitudes with --expected-meters; no sample without either.",
            labels=["query", "measure_date"],
        )
        judged = [] if self._running_since is None else judged_days(today, self._running_since)
        for day in judged:
            stored = self._days.get(day, 0)
            if self._source_days:
                expected = self._source_days.get(day, 0)
                if expected > 0:
                    ratio.add_metric([self.query, day.isoformat()], stored / expected)
            elif self._expected_per_day:
                ratio.add_metric([self.query, day.isoformat()], stored / self._expected_per_day)
        yield ratio
        yield from self._deadline_families()

    def _freshness_family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(
            "vigia_ingest_measure_freshness_seconds",
            "Seconds from a stored measure's ts (the HES wrote it) to its batch's ingested_at "
            "stamp, by cohort: live (read from the binlog) or redelivered (read by a snapshot).",
            labels=["query", "cohort"],
        )
        for cohort in COHORTS:
            ages = self._freshness[cohort]
            buckets = [(str(le), n) for le, n in zip(FRESHNESS_BUCKETS, ages.buckets, strict=True)]
            family.add_metric(
                [self.query, cohort], [*buckets, ("+Inf", ages.count)], ages.sum_seconds
            )
        return family

    def _deadline_families(self) -> Iterable[Metric]:
        state = self._deadline
        expected = CounterMetricFamily(
            "vigia_ingest_deadline_measures_expected",
            "Measures expected of each day, added once when the day's deadline passes.",
            labels=["query"],
        )
        stored = CounterMetricFamily(
            "vigia_ingest_deadline_measures_stored",
            "Of those, the measures stored by the deadline, added at the same time.",
            labels=["query"],
        )
        overdue = GaugeMetricFamily(
            "vigia_ingest_deadline_days_overdue",
            "Days past their deadline not counted yet (their expected or stored measures could "
            "not be read: see the job's log).",
            labels=["query"],
        )
        if state is not None:
            expected.add_metric([self.query], state.expected_total)
            stored.add_metric([self.query], state.stored_total)
            overdue.add_metric([self.query], self._deadline_overdue)
        yield expected
        yield stored
        yield overdue


class IngestListener(StreamingQueryListener):
    """Feeds `IngestMetrics` from the events of the query named ``metrics.query``."""

    def __init__(self, metrics: IngestMetrics) -> None:
        self._metrics = metrics
        self._query_ids: set[str] = set()

    def onQueryStarted(self, event: Any) -> None:
        if event.name == self._metrics.query:
            self._query_ids.add(str(event.id))
            self._metrics.query_started()

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        if progress.name != self._metrics.query:
            return
        try:
            self._metrics.progress(sample_from_progress(json.loads(progress.json)))
        except Exception:  # a metrics bug must never take the ingest down
            log.exception("could not turn a progress event into metrics")

    def onQueryIdle(self, event: Any) -> None:
        if str(event.id) in self._query_ids:
            self._metrics.idle(_epoch_seconds(event.timestamp))

    def onQueryTerminated(self, event: Any) -> None:
        if str(event.id) in self._query_ids:
            self._metrics.query_terminated()
