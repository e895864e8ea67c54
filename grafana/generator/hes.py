"""The HES leg: HES database → Kafka Connect (Debezium) → Kafka → ingest, hop by hop."""

from __future__ import annotations

from generator.horizon import HORIZON
from generator.labels import CLUSTER_VAR, CN, CONNECTOR_VAR, DBZ, C
from generator.panels import Board, q, row, stat, table, timeseries, value_texts

UP_DOWN_MAPPINGS = value_texts((0, "DOWN", "red"), (1, "UP", "green"))


HOPS = row(
    "Hops: HES → Connect → Kafka → store",
    stat(
        "HES database",
        q(f"max(vigia_hes_up{{{C}}})", "HES"),
        description="Whether the exporter could read the HES (`--hes-dsn`).",
        mappings=UP_DOWN_MAPPINGS,
    ),
    stat(
        "HES newest row age",
        q(f"time() - max(vigia_hes_newest_row_timestamp_seconds{{{C}}})", "age"),
        unit="s",
        thresholds=((1800, "orange"), (2700, "red")),
    ),
    stat(
        "Connect workers",
        q(f"min by (connect) (kafka_connect_worker_up{{{C}}})", "{{connect}}"),
        mappings=UP_DOWN_MAPPINGS,
    ),
    stat(
        "Failed tasks",
        q(f'sum(kafka_connect_task_state{{{CN}, state="FAILED"}})', "failed"),
        description="A failed task stays failed until restarted through REST.",
        thresholds=((1, "red"),),
    ),
    stat(
        "HES → Kafka",
        q(f'max(vigia_pipeline_hop_lag_seconds{{{C}, hop="hes_to_kafka"}})', "behind"),
        unit="s",
        thresholds=((300, "orange"), (900, "red")),
    ),
    stat(
        "Kafka → store",
        q(f'max(vigia_pipeline_hop_lag_seconds{{{C}, hop="kafka_to_store"}})', "behind"),
        unit="s",
        thresholds=((900, "orange"), (3600, "red")),
    ),
    timeseries(
        "How far each hop is behind the one before",
        q(f"max by (hop) (vigia_pipeline_hop_lag_seconds{{{C}}})", "{{hop}}"),
        unit="s",
    ),
    timeseries(
        "Rows per day: HES and stored",
        q(f"max by (measure_date) (vigia_hes_day_rows{{{C}}})", "HES {{measure_date}}"),
        q(
            f"max by (measure_date) (vigia_ingest_day_measures{{{C}}})",
            "stored {{measure_date}}",
        ),
        description="A closed day is complete when both lines meet (HesDayIncomplete).",
    ),
)


CONNECT = row(
    "Kafka Connect",
    table(
        "Task states",
        q(f"max by (connect, connector, task, state) (kafka_connect_task_state{{{CN}}}) == 1"),
        description="Current state of every task (REST, through the exporter).",
    ),
    timeseries(
        "Connector stalls (moves nothing while the HES writes)",
        q(
            f"max by (connector, cause) (kafka_connect_connector_stalled{{{CN}}})",
            "{{connector}} {{cause}}",
        ),
        description=(
            "1 while the source connector moves no row to Kafka though the HES has rows it "
            "lacks, per cause: failed, unassigned, connect_down, silent (RUNNING in REST). "
            "HesConnectorStalled pages on it (docs/runbooks/HesConnectorStalled.md)."
        ),
        thresholds=((1, "red"),),
        mappings=value_texts((0, "moving", "green"), (1, "STALLED", "red")),
    ),
    timeseries(
        "Task restarts seen (1h)",
        q(
            f"sum by (connector, task) "
            f"(increase(kafka_connect_task_restarts_seen_total{{{CN}}}[1h]))",
            "{{connector}}/{{task}}",
        ),
    ),
    timeseries(
        "Records polled and written per second",
        q(
            "sum by (connector) (rate("
            f"kafka_connect_source_task_source_record_poll_total{{{CN}}}"
            "[$__rate_interval]))",
            "polled {{connector}}",
        ),
        q(
            "sum by (connector) (rate("
            f"kafka_connect_source_task_source_record_write_total{{{CN}}}"
            "[$__rate_interval]))",
            "written {{connector}}",
        ),
        unit="ops",
        description="Counters restart at every task restart; rate() ignores the drop.",
    ),
    timeseries(
        "Offset commit failures",
        q(
            "max by (connector, task) "
            f"(kafka_connect_task_offset_commit_failure_percentage{{{CN}}})",
            "{{connector}}/{{task}}",
        ),
        unit="percentunit",
    ),
)


DEBEZIUM = row(
    "Debezium (the worker's JMX agent)",
    timeseries(
        "Connected to the HES binlog",
        q(f"max by (server) (debezium_mysql_connected{{{DBZ}}})", "{{server}}"),
        width=8,
        description="No line at all while the task is FAILED: its metrics disappear.",
        mappings=UP_DOWN_MAPPINGS,
    ),
    timeseries(
        "Time behind source",
        q(
            f"max by (server) (debezium_mysql_milli_seconds_behind_source{{{DBZ}}}) / 1000",
            "{{server}}",
        ),
        unit="s",
        width=8,
        description="Frozen at its last value while disconnected.",
    ),
    timeseries(
        "Time since last event",
        q(
            f"max by (server) (debezium_mysql_milli_seconds_since_last_event{{{DBZ}}}) / 1000",
            "{{server}}",
        ),
        unit="s",
        width=8,
    ),
    timeseries(
        "Rows streamed per second",
        q(
            "sum by (server) (rate(debezium_mysql_total_number_of_create_events_seen"
            f"{{{DBZ}}}[$__rate_interval]))",
            "{{server}}",
        ),
        unit="ops",
        description="Create events: rows. Debezium's events-seen counts binlog events.",
    ),
    timeseries(
        "HES database load (mysqld_exporter)",
        q(f"sum(rate(mysql_global_status_queries{{{C}}}[$__rate_interval]))", "queries/s"),
        q(f"max(mysql_global_status_threads_connected{{{C}}})", "connections"),
        description="CDC reads the binlog: it adds one connection, not polling queries.",
    ),
)


BOARD = Board(
    uid="vigia-hes",
    title="Vigía / HES leg",
    description="HES database, Kafka Connect and Debezium feeding measure, hop by hop.",
    variables=(CLUSTER_VAR, CONNECTOR_VAR),
    rows=(HORIZON, HOPS, CONNECT, DEBEZIUM),
)
