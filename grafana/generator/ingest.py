"""The "Vigía / Ingest" board, row by row."""

from __future__ import annotations

from generator.horizon import HORIZON
from generator.labels import CLUSTER_VAR, CQ, INGEST_GROUP, QUERY_VAR, C
from generator.panels import Board, bargauge, q, row, stat, timeseries, value_texts

HEALTH = row(
    "Health",
    stat(
        "Query",
        q(f"max by (query) (vigia_ingest_query_active{{{CQ}}})", "{{query}}"),
        width=6,
        mappings=value_texts((0, "STOPPED", "red"), (1, "RUNNING", "green")),
    ),
    stat(
        "Newest stored measure age",
        q(f"query:vigia_ingest_newest_measure_age_seconds:max{{{CQ}}}", "{{query}}"),
        unit="s",
        width=6,
        thresholds=((1800, "orange"), (3600, "red")),
    ),
    stat(
        "Last progress age",
        q(f"query:vigia_ingest_last_progress_age_seconds:max{{{CQ}}}", "{{query}}"),
        unit="s",
        width=6,
        thresholds=((120, "orange"), (300, "red")),
    ),
    stat(
        "Backlog (vigia-ingest, oldest unconsumed message)",
        q(f"max(kafka_consumergroup_max_lag_seconds{{{INGEST_GROUP}}})", "lag"),
        unit="s",
        width=6,
        thresholds=((300, "orange"), (900, "red")),
    ),
)


FLOW = row(
    "Batches and rows",
    timeseries(
        "Batches per minute",
        q(
            f"sum by (query) (rate(vigia_ingest_batches_total{{{CQ}}}[$__rate_interval])) * 60",
            "{{query}}",
        ),
        width=8,
    ),
    timeseries(
        "Input and processed rows/s (last progress)",
        q(f"max by (query) (vigia_ingest_input_rows_per_second{{{CQ}}})", "input {{query}}"),
        q(
            f"max by (query) (vigia_ingest_processed_rows_per_second{{{CQ}}})",
            "processed {{query}}",
        ),
        unit="ops",
        width=8,
    ),
    timeseries(
        "Rows written and quarantined",
        q(
            f"sum by (query) (rate(vigia_ingest_valid_rows_total{{{CQ}}}[$__rate_interval]))",
            "written {{query}}",
        ),
        q(
            f"sum by (query) (rate(vigia_ingest_invalid_rows_total{{{CQ}}}[$__rate_interval]))",
            "quarantined {{query}}",
        ),
        unit="ops",
        width=8,
    ),
    timeseries(
        "Quarantined rows by reason",
        q(f"query_reason:vigia_ingest_invalid_rows:rate5m{{{CQ}}}", "{{reason}}"),
        unit="ops",
        width=8,
        stack=True,
    ),
    timeseries(
        "Quarantine ratio (15m)",
        q(f"query:vigia_ingest_invalid_rows:ratio_rate15m{{{CQ}}}", "{{query}}"),
        unit="percentunit",
        width=8,
        thresholds=((0.02, "red"),),
    ),
    timeseries(
        "Rows in the last batch",
        q(f"max by (query) (vigia_ingest_batch_input_rows{{{CQ}}})", "{{query}}"),
        width=8,
    ),
)


DURATIONS = row(
    "Durations and backlog",
    timeseries(
        "Batch duration p95",
        q(f"query:vigia_ingest_batch_duration_seconds:p95_5m{{{CQ}}}", "{{query}}"),
        unit="s",
        width=8,
    ),
    timeseries(
        "Last batch by phase",
        q(f"max by (query, phase) (vigia_ingest_phase_duration_seconds{{{CQ}}})", "{{phase}}"),
        unit="s",
        width=8,
        stack=True,
    ),
    timeseries(
        "Offsets behind latest",
        q(f"max by (query, topic) (vigia_ingest_offsets_behind_latest{{{CQ}}})", "{{topic}}"),
        width=8,
    ),
    timeseries(
        "vigia-ingest consumer group lag",
        q(f"sum(kafka_consumergroup_lag_sum{{{INGEST_GROUP}}})", "messages"),
        q(f"max(kafka_consumergroup_max_lag_seconds{{{INGEST_GROUP}}})", "seconds"),
    ),
    timeseries(
        "Retention margin",
        q(
            f"min(kafka_consumergroup_min_retention_margin_seconds{{{INGEST_GROUP}}})",
            "retention margin",
        ),
        unit="s",
        width=6,
        description=(
            "Seconds until Kafka may delete the oldest measure vigia-ingest has not read "
            "(a lower bound; docs/lag.md#retention). IngestRetentionAtRisk pages when "
            "catching up takes longer (Consumers board, time to catch up), or when it is "
            "under 6 h and the backlog does not drain."
        ),
    ),
    timeseries(
        "Backlog drain rate",
        q(
            f"sum(kafka_consumergroup_backlog_drain_messages_per_second{{{INGEST_GROUP}}})",
            "drained per second",
        ),
        unit="ops",
        width=6,
        description="Consumed minus produced over the exporter's catch-up window (5 "
        "minutes): negative while the backlog grows.",
    ),
    timeseries(
        "Freshness: newest stored measure age",
        q(f"query:vigia_ingest_newest_measure_age_seconds:max{{{CQ}}}", "{{query}}"),
        unit="s",
        thresholds=((3600, "red"),),
    ),
)


CLUSTER = row(
    "Spark cluster and Kafka calls",
    timeseries(
        "Executors alive and their cores",
        q(f"max by (query) (vigia_ingest_executors{{{CQ}}})", "executors {{query}}"),
        q(f"max by (query) (vigia_ingest_executor_cores{{{CQ}}})", "cores {{query}}"),
        width=6,
        description="From the driver's own REST API (its UI): executors that run tasks, "
        "the driver itself in local mode. No sample while the UI does not answer.",
    ),
    timeseries(
        "Failed tasks and lost executors",
        q(
            f"sum by (query) (increase(vigia_ingest_failed_tasks_total{{{CQ}}}[$__rate_interval]))",
            "failed tasks {{query}}",
        ),
        q(
            f"sum by (query) "
            f"(increase(vigia_ingest_executors_lost_total{{{CQ}}}[$__rate_interval]))",
            "executors lost {{query}}",
        ),
        width=6,
        description="Task attempts that failed (Spark retries them) and executors removed "
        "(killed, crashed, their worker gone), per interval.",
    ),
    timeseries(
        "Kafka retries by call",
        q(
            f"sum by (call) (increase(vigia_ingest_kafka_retries_total{{{CQ}}}[$__rate_interval]))",
            "{{call}}",
        ),
        width=6,
        stack=True,
        description="Kafka calls tried again after a retriable error (a broker restarting, "
        "leadership moving): the read tasks' on every executor, counted when a task ends; the "
        "planner's and the driver's as they happen.",
    ),
    timeseries(
        "Offsets skipped (retention)",
        q(
            f"sum by (topic) "
            f"(increase(vigia_ingest_skipped_offsets_total{{{CQ}}}[$__rate_interval]))",
            "{{topic}}",
        ),
        width=6,
        description="Offsets the job went on past because retention had deleted them "
        "(--no-fail-on-data-loss only): measures that never reached Parquet.",
    ),
)


DAYS = row(
    "Days",
    bargauge(
        "Measures stored per day",
        q(f"max by (measure_date) (vigia_ingest_day_measures{{{C}}})", "{{measure_date}}"),
    ),
    bargauge(
        "Completeness per closed day",
        q(
            f"min by (measure_date) (vigia_ingest_day_completeness_ratio{{{C}}})",
            "{{measure_date}}",
        ),
        unit="percentunit",
        thresholds=((0.99, "green"),),
    ),
)


BOARD = Board(
    uid="vigia-ingest",
    title="Vigía / Ingest",
    description="The PySpark job: batches, rates, durations, backlog, quarantine, freshness.",
    variables=(CLUSTER_VAR, QUERY_VAR),
    rows=(HEALTH, HORIZON, FLOW, DURATIONS, CLUSTER, DAYS),
)
