"""The ingest job: Kafka → validation → Parquet measures and quarantine, exactly once, with metrics.

    Kafka source (vigia-kafka, or Spark's built-in "kafka")
      → transform.parse → transform.classify → observe(per-reason counts, newest TS)
      → transform.slim (the message as received kept on rejected rows only)           [streaming]
      → foreachBatch: persist; split valid / rejected; dedupe_latest(valid); drop rows an
                      incremental snapshot re-delivered that are already stored
                      (ingest.redelivery); observe the stored rows (per day, freshness:
                      ingest.stored_observation); ExactlyOnceSink publishes both as
                      batch N                                                          [per batch]

Exactly once end to end rests on three things: Spark's offset log fixes each batch's Kafka ranges
before it runs (a replay reads the same messages); `ingest.sinks.ExactlyOnceSink` makes publishing a
batch idempotent by batch id (see its docstring for the protocol); and Spark's commit log marks a
batch done only after foreachBatch returned. Killing the driver at any moment therefore leaves at
worst one batch to redo, and redoing it replaces, never adds.

After each completed batch, `GroupCommitListener` commits the batch's end offsets to the consumer
group (default vigia-ingest) so the job's lag shows in the exporter, Burrow and
kafka-consumer-groups. The vigia-kafka source also commits from its ``commit(end)``, but Spark calls
that only when it plans the *next* batch (the lag would read one batch high, and the last batch of
a run would never be committed); the listener commits as soon as a batch is done, for either source.
The group's offsets are for monitoring only: the job restarts from its checkpoint, never from them.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, Final
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.registry import Collector
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from vigia.common import wsgi_server
from vigia.common.hes import parse_dsn
from vigia.ingest import redelivery, transform
from vigia.ingest.config import IngestConfig, deadline_rule
from vigia.ingest.deadline import DeadlineState, first_judged_day
from vigia.ingest.deadline_watch import (
    STATE_FILE as DEADLINE_STATE_FILE,
)
from vigia.ingest.deadline_watch import (
    DeadlineWatch,
    load_state,
    stored_by_deadline,
)
from vigia.ingest.graceful_stop import GracefulStop
from vigia.ingest.hes_source import DayRowsRefresher, day_rows
from vigia.ingest.kafka_source import SOURCE_NAME, register
from vigia.ingest.kafka_source.adapter import ERROR_MARKER, KafkaAdmin, KafkaSourceError
from vigia.ingest.kafka_source.counts import summed
from vigia.ingest.kafka_source.retry import RetryObserver
from vigia.ingest.kafka_source.retry_spool import RetrySpool
from vigia.ingest.kafka_source.task_counts import TaskCounts
from vigia.ingest.loss_log import loss_dir
from vigia.ingest.metrics import (
    BatchWritten,
    IngestListener,
    IngestMetrics,
    day_window,
    expected_measures_per_day,
    sample_from_progress,
    utc_today,
)
from vigia.ingest.query_restart import QueryRestarts
from vigia.ingest.schema import KAFKA_SOURCE_COLUMNS, REDELIVERED, SNAPSHOT_READ, VALID_SCHEMA
from vigia.ingest.sinks import ExactlyOnceSink, HadoopFs, Output, SinkError
from vigia.ingest.spark_health import SparkHealth, executors_url, rest_fetch
from vigia.ingest.spark_session import start_session
from vigia.ingest.stored_observation import StoredObservation

log = logging.getLogger(__name__)

LISTENER_WAIT_S: Final = 10.0
BYPASS_PARTIAL_AGGREGATION: Final = "spark.sql.execution.bypassPartialAggregation"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
# Spark loggers that print a failed query's stack traces; the job reports the failure itself, in
# one sentence (run with --log-level DEBUG to keep them).
_NOISY_LOGGERS: Final = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.sql.execution.streaming",
    "org.apache.spark.sql.execution.datasources.v2.python",
    "org.apache.spark.api.python",
)


class JobError(RuntimeError):
    """A failure the CLI reports as one sentence."""


def session_settings(spark_master: str | None, driver_memory: str | None = None) -> dict[str, str]:
    """Spark settings of the job; a master given by spark-submit wins over local[*], and so do
    its driver memory and Java options. ``driver_memory``: the heap of a local master's JVM."""
    from pyspark import SparkConf

    submitted = SparkConf()
    master = spark_master or submitted.get("spark.master", None) or "local[*]"
    settings = {
        "spark.master": master,
        # Dates and timestamps mean UTC whatever the machine's zone: measure_date partitions too.
        "spark.sql.session.timeZone": "UTC",
        # Otherwise a partitioned write sorts each task's rows by measure_date first.
        "spark.sql.maxConcurrentOutputFileWriters": "16",
        # The persisted batch lives a few seconds: compressing it costs more CPU than it saves.
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # Stage progress bars would interleave with the job's log lines.
        "spark.ui.showConsoleProgress": "false",
    }
    if not master.startswith("local"):
        return settings
    if not submitted.contains("spark.sql.shuffle.partitions"):
        # The in-batch dedupe shuffles; Spark's 200 partitions would mean 200 files per batch.
        settings["spark.sql.shuffle.partitions"] = str(os.cpu_count() or 2)
    # The tasks run in the driver's JVM, which allocates gigabytes of short-lived rows per batch:
    # the throughput collector spends a quarter less CPU on the same batch than G1, Java's
    # default, with its write barriers and concurrent marking (docs/ingest-performance.md).
    if not submitted.contains("spark.driver.extraJavaOptions"):
        settings["spark.driver.extraJavaOptions"] = "-XX:+UseParallelGC"
    if driver_memory and not submitted.contains("spark.driver.memory"):
        settings["spark.driver.memory"] = driver_memory
    return settings


def build_spark(config: IngestConfig) -> SparkSession:
    spark = start_session(
        config.query_name, session_settings(config.spark_master, config.driver_memory)
    )
    quiet_spark_logs(spark, config.log_level)
    return spark


def quiet_spark_logs(spark: SparkSession, level: str) -> None:
    if level == "DEBUG":
        return
    spark.sparkContext.setLogLevel("WARN")
    jvm: Any = spark.sparkContext._jvm
    off = jvm.org.apache.logging.log4j.Level.OFF
    for name in _NOISY_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, off)


def read_stream(
    spark: SparkSession,
    config: IngestConfig,
    retry_spool: str | None = None,
    task_counts: TaskCounts | None = None,
) -> DataFrame:
    """The Kafka stream with the columns of Spark's Kafka source, whichever source reads it.
    ``retry_spool``: where the vigia-kafka source's planner counts its Kafka retries
    (`RetrySpool`); ``task_counts``: where its read tasks count theirs and the offsets they
    skipped (else in the spool too, which misses executors on other hosts)."""
    reader = spark.readStream
    if config.source == "python-kafka":
        register(spark, task_counts.attach(spark.sparkContext) if task_counts is not None else None)
        reader = reader.format(SOURCE_NAME).option("commitGroupId", config.group_id)
    else:
        reader = reader.format("kafka")
    reader = (
        reader.option("kafka.bootstrap.servers", config.bootstrap_servers)
        .option("subscribe", config.topic)
        .option("startingOffsets", config.starting_offsets)
        .option("failOnDataLoss", str(config.fail_on_data_loss).lower())
    )
    if config.source == "python-kafka":
        reader = reader.option("kafkaTimeoutMs", str(int(config.kafka_timeout * 1000)))
        if retry_spool:
            reader = reader.option("retrySpoolDir", retry_spool)
        if not config.fail_on_data_loss:
            reader = reader.option("lossLogDir", loss_dir(config.output))
    if config.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    for key, value in config.kafka_options.items():
        reader = reader.option(f"kafka.{key}", value)
    try:
        return reader.load().select(*KAFKA_SOURCE_COLUMNS)
    except AnalysisException as exc:
        if config.source == "spark-kafka":
            raise JobError(
                "Spark's built-in Kafka source is not on the classpath (the spark-sql-kafka-0-10 "
                "package); use --source python-kafka"
            ) from exc
        raise


def observed_stream(raw: DataFrame) -> DataFrame:
    """Parsed and classified rows, observed so each progress event carries per-reason counts."""
    classified = transform.classify(transform.parse(raw))
    observed = classified.observe(transform.OBSERVATION, *transform.observe_exprs())
    return transform.slim(observed)


def observed_counts(observation: Observation) -> dict[str, Any]:
    """The counts and sums ``observation`` collected (waiting for them, like `Observation.get`);
    none when Spark dropped the observed plan as empty: a missing count is 0.

    With AQE, once a shuffle stage turns out to hold no row, AQEPropagateEmptyRelation replaces
    the plan above it, stage included, with an empty relation: in a batch without a valid row,
    the dedupe's aggregate and its shuffle stage, which holds the observation of the valid rows.
    That observation's node is then absent from the executed plan, and Spark completes it with a
    row without a schema (SPARK-54620), which PySpark's `Observation.get` fails an assertion on
    (`PythonSQLUtils.toPyRow`). Spark drops only a plan it proved empty, and a batch's plans have
    no join (which would drop its other side too), so no counts means no row."""
    # PySpark has no public way to tell that row apart: ask the JVM's Observation for it.
    jrow = observation._jo.getRow() if observation._jo is not None else None
    if jrow is not None and jrow.schema() is None:
        return {}
    return dict(observation.get)


class BatchWriter:
    """The foreachBatch function: split, dedupe, publish exactly once, report."""

    def __init__(self, sink: ExactlyOnceSink, config: IngestConfig, metrics: IngestMetrics) -> None:
        self._sink = sink
        self._config = config
        self._metrics = metrics

    def __call__(self, classified: DataFrame, batch_id: int) -> None:
        # The dedupe groups by measure key and a batch rarely repeats a key: an aggregation before
        # the shuffle reduces nothing and costs ~20 % of a batch's CPU (docs/ingest-performance.md).
        # Set on the stream's own session: the start-up count per day wants the two-phase one.
        classified.sparkSession.conf.set(BYPASS_PARTIAL_AGGREGATION, "true")
        # Both outputs derive from the classified rows; without the cache the second write would
        # read Kafka and parse every message again.
        classified.persist()
        try:
            # The survey fills the cache (most of a batch's work): the stamp taken after it is
            # the closer to the commit, the moment freshness measures ages to.
            survey = redelivery.survey(classified)
            now = transform.ingested_at(dt.datetime.now(dt.UTC))
            valid, invalid = transform.split_classified(
                classified, now, (REDELIVERED, SNAPSHOT_READ)
            )
            after = Observation(f"stored-{batch_id}")
            latest = transform.dedupe_latest(valid)
            if survey.redelivered:
                stored_keys = redelivery.stored_keys(
                    classified.sparkSession, self._config.output, survey.redelivered, batch_id
                )
                latest = redelivery.without_stored(latest, stored_keys)
                log.info(
                    "batch %d re-delivers measures of %s: storing those not stored yet",
                    batch_id,
                    ", ".join(d.isoformat() for d in survey.redelivered),
                )
            else:
                latest = latest.drop(REDELIVERED)
            observation = StoredObservation.for_batch(
                day_window(utc_today()), survey.valid, survey.snapshot_reads
            )
            stored = observation.observe(
                latest,
                after,
                measure_date=F.col("measure_date"),
                stored_at=F.col("ingested_at"),
                ts=F.col("ts"),
                snapshot_read=F.col(SNAPSHOT_READ),
            ).drop(SNAPSHOT_READ)
            self._sink.write(
                batch_id,
                [
                    Output(self._config.output, stored, ("measure_date",)),
                    Output(self._config.quarantine, invalid),
                ],
            )
            counts = observation.read(observed_counts(after))
            self._metrics.batch_written(
                BatchWritten(
                    batch_id=batch_id,
                    valid_rows=counts.rows,
                    # Valid rows not stored: in-batch duplicates, re-deliveries stored already.
                    duplicate_rows=survey.valid - counts.rows,
                    rows_by_date=counts.rows_by_date,
                    freshness=counts.freshness,
                )
            )
            log.info("batch %d: %d measures stored", batch_id, counts.rows)
        finally:
            classified.unpersist()


class GroupCommitListener(StreamingQueryListener):
    """Commits each completed batch's end offsets to the consumer group (see module docstring)."""

    def __init__(self, query_name: str, admin: KafkaAdmin, topic: str) -> None:
        self._query = query_name
        self._admin = admin
        self._topic = topic
        self._lock = threading.Lock()

    def commit_progress(self, progress: Mapping[str, Any]) -> None:
        end = sample_from_progress(progress).end_offsets
        mine = {tp: offset for tp, offset in end.items() if tp[0] == self._topic}
        with self._lock:
            try:
                self._admin.commit(mine)
            except KafkaSourceError as exc:
                log.warning("batch end offsets not committed: %s", exc.sentence)

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        if event.progress.name == self._query:
            self.commit_progress(json.loads(event.progress.json))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


def stored_day_counts(
    spark: SparkSession, sink: ExactlyOnceSink, output: str
) -> dict[dt.date, int]:
    """Rows stored per measure date in the metrics window (seeds vigia_ingest_day_measures)."""
    if not sink.fs.list_files(output):
        return {}
    first = day_window(utc_today())[0]
    rows = (
        spark.read.schema(VALID_SCHEMA)
        .parquet(output)
        .where(F.col("measure_date") >= F.lit(first))
        .groupBy("measure_date")
        .count()
        .collect()
    )
    return {row["measure_date"]: int(row["count"]) for row in rows}


RUNNING_SINCE_FILE: Final = "vigia-running-since"


def running_since(fs: HadoopFs, checkpoint: str, now: Callable[[], float] = time.time) -> float:
    """When the job first ran with this checkpoint: read from it, or now, written there on the
    first start. A restart keeps judging the days it was running through before."""
    path = checkpoint.rstrip("/") + "/" + RUNNING_SINCE_FILE
    text = fs.read_text(path)
    if text is not None:
        try:
            return float(text.strip())
        except ValueError:
            log.warning("%s holds %r, not a timestamp: starting over from now", path, text)
    since = now()
    fs.write_text(path, f"{since:.3f}\n")
    return since


def deadline_watch(
    spark: SparkSession, fs: HadoopFs, config: IngestConfig, metrics: IngestMetrics, since: float
) -> DeadlineWatch | None:
    """The completeness-by-deadline counters' watch, when the job knows what a day should hold
    (--hes-dsn or --expected-meters; none otherwise, like the completeness ratio)."""
    per_day = expected_measures_per_day(config.expected_meters)
    expected: Callable[[dt.date], int | None]
    if config.hes_dsn:
        dsn = parse_dsn(config.hes_dsn)
        expected = lambda day: day_rows(dsn, (day,))[day]  # noqa: E731
    elif per_day is not None:
        expected = lambda day: per_day  # noqa: E731
    else:
        return None
    output = config.output.rstrip("/")

    def stored(day: dt.date, by: dt.datetime) -> int:
        if not fs.exists(f"{output}/measure_date={day.isoformat()}"):
            return 0
        return stored_by_deadline(spark, output, day, by)

    def save(state: DeadlineState) -> None:
        fs.write_text(config.checkpoint.rstrip("/") + "/" + DEADLINE_STATE_FILE, state.to_json())

    rule = deadline_rule(config.deadline_time, config.deadline_timezone)
    log.info(
        "each day's measures are due by %s the next day (%s)",
        rule.at.isoformat("minutes"),
        rule.zone,
    )
    return DeadlineWatch(
        rule,
        first_judged_day(since),
        load_state(fs, config.checkpoint),
        expected,
        stored,
        save,
        metrics.deadline_counted,
    )


def failure_sentence(exc: BaseException) -> str:
    """The one sentence to print for a failed query: ours when the source or the sink raised it
    (Spark wraps it, traceback and all, in its own error)."""
    text = str(exc)
    for pattern in (re.escape(ERROR_MARKER) + r": (.+)", r"SinkError: (.+)"):
        match = re.search(pattern, text)
        if match:
            return match.group(1).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def preflight_kafka(config: IngestConfig, observer: RetryObserver | None = None) -> KafkaAdmin:
    """Fail in seconds, with one sentence, when the cluster or the topic is not there."""
    admin = KafkaAdmin(
        config.bootstrap_servers,
        config.kafka_options,
        config.group_id,
        config.kafka_timeout,
        observer=observer,
    )
    admin.partitions(config.topic)
    return admin


def start_query(
    stream: DataFrame, config: IngestConfig, writer: Callable[[DataFrame, int], None]
) -> StreamingQuery:
    """Run ``stream`` (see `observed_stream`) through ``writer`` on the configured trigger."""
    query = (
        stream.writeStream.queryName(config.query_name)
        .foreachBatch(writer)
        .option("checkpointLocation", config.checkpoint)
    )
    if config.available_now:
        query = query.trigger(availableNow=True)
    else:
        query = query.trigger(processingTime=f"{config.trigger_interval:g} seconds")
    return query.start()


class IngestJob:
    """One run of the job on a SparkSession (the CLI's, or a test's shared one)."""

    def __init__(
        self,
        spark: SparkSession,
        config: IngestConfig,
        metrics: IngestMetrics,
        admin: KafkaAdmin,
        retry_spool: str | None = None,
        task_counts: TaskCounts | None = None,
    ) -> None:
        """``admin``: from `preflight_kafka`; commits the group offsets, closed by `run`.
        ``retry_spool``, ``task_counts``: see `read_stream`."""
        self.spark = spark
        self.config = config
        self.metrics = metrics
        self.admin = admin
        self.retry_spool = retry_spool
        self.task_counts = task_counts
        self._stop = threading.Event()
        self._stop_now = threading.Event()
        self.query: StreamingQuery | None = None

    def request_stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        """First signal: stop once the running batch is done; second: stop now (the batch is
        then redone on the next start, which the sink makes harmless)."""
        if self._stop.is_set():
            log.info("stopping now (signal %s)", signum)
            self._stop_now.set()
        else:
            log.info("stopping after the current batch (signal %s; again to stop now)", signum)
            self._stop.set()

    def run(self) -> None:
        """Run until the query ends (available-now) or a stop is requested; raise JobError on
        failure."""
        try:
            sink = ExactlyOnceSink(self.spark, self.config.checkpoint)
            for path, what in (
                (self.config.output, "output"),
                (self.config.quarantine, "quarantine"),
                (self.config.checkpoint, "checkpoint"),
            ):
                sink.fs.check_writable(path, what)
            since = running_since(sink.fs, self.config.checkpoint)
            self.metrics.running_since(since)
            self.metrics.seed_days(stored_day_counts(self.spark, sink, self.config.output))
            watch = deadline_watch(self.spark, sink.fs, self.config, self.metrics, since)
            if watch is not None:
                watch.start()
            try:
                self._stream(sink)
            finally:
                if watch is not None:
                    watch.stop()
        except StreamingQueryException as exc:
            raise JobError(failure_sentence(exc)) from exc
        except SinkError as exc:
            raise JobError(str(exc)) from exc
        finally:
            self.metrics.query_terminated()
            self.admin.close()

    def _stream(self, sink: ExactlyOnceSink) -> None:
        config = self.config
        committer = GroupCommitListener(config.query_name, self.admin, config.topic)
        # The bus calls listeners in registration order: once the metrics have seen the last
        # batch (we wait for that below), its offsets are committed too.
        listeners: list[StreamingQueryListener] = [committer] if config.group_id else []
        listeners.append(IngestListener(self.metrics))
        for listener in listeners:
            self.spark.streams.addListener(listener)
        try:
            last = self._run_query(sink).lastProgress
            if last is not None:
                # The listener bus is asynchronous: let the metrics see the last batch, and make
                # sure its offsets reach the group.
                self.metrics.wait_for_batch(last.batchId, LISTENER_WAIT_S)
                if config.group_id:
                    committer.commit_progress(json.loads(last.json))
        finally:
            for listener in listeners:
                self.spark.streams.removeListener(listener)

    def _run_query(self, sink: ExactlyOnceSink) -> StreamingQuery:
        """Starts the query and waits for its end, starting it again after a transient failure
        (`QueryRestarts`); returns the query that ended."""
        config = self.config
        restarts = QueryRestarts()
        while True:
            stream = observed_stream(
                read_stream(self.spark, config, self.retry_spool, self.task_counts)
            )
            writer = BatchWriter(sink, config, self.metrics)
            query = self.query = start_query(stream, config, writer)
            log.info(
                "ingesting %s from %s into %s (quarantine %s, checkpoint %s)",
                config.topic,
                config.bootstrap_servers,
                config.output,
                config.quarantine,
                config.checkpoint,
            )
            try:
                self._await(query)
                return query
            except StreamingQueryException as exc:
                last = query.lastProgress
                if self._stop.is_set() or not restarts.restart(
                    str(exc), -1 if last is None else last.batchId
                ):
                    raise
                log.warning(
                    "the query failed (%s): starting it again (%d of %d in a row)",
                    failure_sentence(exc),
                    restarts.in_a_row,
                    restarts.limit,
                )

    def _await(self, query: StreamingQuery) -> None:
        await_query(query, self._stop, self._stop_now)


def await_query(query: StreamingQuery, stop: threading.Event, stop_now: threading.Event) -> None:
    """Until the query ends, or is stopped after its current batch (`stop`) or at once
    (`stop_now`); raises the query's failure."""
    # Poll rather than block: a signal handler cannot safely call into the JVM while the main
    # thread sits inside a py4j call.
    stopping = GracefulStop()
    while not query.awaitTermination(1):
        last = query.lastProgress
        if stopping.due(
            stop.is_set(),
            stop_now.is_set(),
            query.status["isTriggerActive"],
            -1 if last is None else last.batchId,
        ):
            query.stop()
            break
    exc = query.exception()
    if exc is not None:
        raise exc


def serve_metrics(
    config: IngestConfig, metrics: IngestMetrics, *more: Collector
) -> WSGIServer | None:
    """Start /metrics on the configured address (None when the port is 0), serving ``metrics``
    and ``more`` (the cluster's health)."""
    if not config.metrics_port:
        return None
    registry = CollectorRegistry()
    for collector in (metrics, *more):
        registry.register(collector)
    try:
        server = wsgi_server.start(
            config.metrics_address, config.metrics_port, make_wsgi_app(registry), config.web
        )
    except OSError as exc:
        raise JobError(
            f"cannot serve metrics on {config.metrics_address}:{config.metrics_port} "
            f"({exc.strerror})"
        ) from exc
    log.info(
        "metrics on %s://%s:%d/metrics%s",
        "https" if config.web.tls else "http",
        config.metrics_address,
        config.metrics_port,
        f" ({len(config.web.users)} basic-auth users)" if config.web.users else "",
    )
    return server


def watch_executors(spark: SparkSession, health: SparkHealth) -> None:
    """The cluster's health from the driver's own UI (on by default; its port is 4040 or the
    next free one, which ``uiWebUrl`` knows)."""
    context = spark.sparkContext
    url = executors_url(context.uiWebUrl, context.applicationId)
    if url is None:
        log.warning("the Spark UI is disabled (spark.ui.enabled): no executor health metrics")
        return
    health.attach(rest_fetch(url))


def _source_counts(config: IngestConfig, metrics: IngestMetrics) -> DayRowsRefresher | None:
    """With --hes-dsn, the closed days' rows in the HES, counted on their own thread."""
    if not config.hes_dsn:
        return None
    dsn = parse_dsn(config.hes_dsn)
    log.info(
        "completeness against the HES at %s, counted every %g s",
        dsn.redacted(),
        config.hes_interval,
    )
    refresher = DayRowsRefresher(
        dsn,
        lambda: day_window(utc_today())[:-1],
        metrics.source_day_rows,
        config.hes_interval,
    )
    refresher.start()
    return refresher


def job_metrics(config: IngestConfig, spool: RetrySpool, tasks: TaskCounts) -> IngestMetrics:
    """The job's metrics; the Kafka counts sum the spool (the planner's and the driver's calls)
    and the accumulator (the read tasks', from every executor) on each scrape."""
    return IngestMetrics(
        config.query_name,
        trigger_interval=None if config.available_now else config.trigger_interval,
        expected_per_day=expected_measures_per_day(config.expected_meters),
        kafka_retries=lambda: summed(spool.counts(), tasks.retries()),
        skipped_offsets=lambda: summed(spool.skipped(), tasks.skipped()),
    )


def run_job(config: IngestConfig, spark: SparkSession | None = None) -> int:
    """`vigia-ingest run`: exit 0 when done or stopped, 1 with one sentence on failure.
    A given ``spark`` session is used and left running; otherwise one is built and stopped."""
    spool = RetrySpool()
    try:
        return _run_job(config, spark, spool)
    finally:
        spool.close()


def _run_job(config: IngestConfig, spark: SparkSession | None, spool: RetrySpool) -> int:
    try:
        admin = preflight_kafka(config, spool.observer())
    except KafkaSourceError as exc:
        log.error("%s", exc.sentence)
        return EXIT_FAILED
    tasks = TaskCounts()
    metrics = job_metrics(config, spool, tasks)
    health = SparkHealth(config.query_name)
    try:
        server = serve_metrics(config, metrics, health)
    except JobError as exc:
        admin.close()
        log.error("%s", exc)
        return EXIT_FAILED
    counts = _source_counts(config, metrics)
    own_session = spark is None
    # A stop asked for while Spark starts (seconds) is kept for the job: dying then would leave
    # the starting JVM to notice on its own, seconds later, that its driver is gone.
    early: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _frame: early.append(signum))
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    session = spark if spark is not None else build_spark(config)
    watch_executors(session, health)
    job = IngestJob(session, config, metrics, admin, spool.directory, tasks)
    for sig in previous:
        signal.signal(sig, job.request_stop)
    for signum in early:
        job.request_stop(signum)
    try:
        job.run()
        return EXIT_OK
    except JobError as exc:
        log.error("%s", exc)
        return EXIT_FAILED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if own_session:
            session.stop()
        if server is not None:
            server.shutdown()
        if counts is not None:
            counts.stop()
