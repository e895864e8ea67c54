"""Generates Vigía's Grafana boards (grafana/dashboards/*.json).

The JSON files are committed (Grafana provisions them as they are); this script is their source,
written in generator/panels.py's vocabulary. Edit it, run `python grafana/generate_dashboards.py`,
commit both. tests/monitoring checks that the committed JSON equals this script's output and runs
every query against a real Prometheus.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from common.logs import setup_logging
from generator.labels import (
    BROKER_VAR,
    CB,
    CBT,
    CG,
    CGT,
    CLUSTER_VAR,
    CN,
    CONNECTOR_VAR,
    CQ,
    CT,
    DBZ,
    GROUP_VAR,
    INGEST_GROUP,
    QUERY_VAR,
    TOPIC_VAR,
    C,
)
from generator.panels import Board, bargauge, q, row, stat, table, timeseries, value_texts
from generator.render import render

OUT_DIR = Path(__file__).resolve().parent / "dashboards"

STATUS_MAPPINGS = value_texts((1, "OK", "green"), (2, "WARN", "yellow"), (3, "ERR", "red"))
PARTITION_STATUS_MAPPINGS = value_texts(
    (1, "OK", "green"),
    (2, "WARN", "yellow"),
    (3, "STOP", "red"),
    (4, "STALL", "red"),
    (5, "REWIND", "orange"),
)
UP_DOWN_MAPPINGS = value_texts((0, "DOWN", "red"), (1, "UP", "green"))


def kafka_cluster_board() -> Board:
    overview = row(
        "Overview",
        stat(
            "Brokers",
            q(f"max by (cluster) (kafka_brokers{{{C}}})", "in metadata"),
            q(f"sum by (cluster) (1 - max by (cluster, broker) (kafka_broker_up{{{C}}}))", "down"),
            description="Brokers in the metadata, and expected brokers (replicas, KRaft "
            "voters) missing from it: kafka_broker_up.",
        ),
        stat(
            "Active controller",
            q(f"kafka_cluster_info{{{C}}}", "broker {{controller_id}}", instant=True),
            description="KRaft quorum leader as the exporter reports it.",
            # Its value is always 1: the name says which broker leads.
            text_mode="name",
        ),
        stat(
            "Offline partitions",
            q(f"sum(topic:kafka_topic_offline_partitions:sum{{{C}}})", "offline"),
            thresholds=((1, "red"),),
        ),
        stat(
            "Under min ISR",
            q(f"sum(topic:kafka_topic_under_min_isr_partitions:sum{{{C}}})", "under min ISR"),
            thresholds=((1, "red"),),
        ),
        stat(
            "Under-replicated",
            q(f"sum(topic:kafka_topic_under_replicated_partitions:sum{{{C}}})", "URP"),
            thresholds=((1, "orange"),),
        ),
        stat(
            "Leaders not on preferred replica",
            q(
                f"sum(cluster:kafka_topic_leader_not_preferred_partitions:sum{{{C}}})",
                "not preferred",
            ),
            thresholds=((1, "yellow"),),
        ),
    )
    partitions = row(
        "Partitions per broker",
        timeseries(
            "Leader partitions per broker",
            q(f"max by (broker) (kafka_broker_leader_partitions{{{CB}}})", "broker {{broker}}"),
            width=8,
        ),
        timeseries(
            "Follower partitions per broker",
            q(f"max by (broker) (kafka_broker_follower_partitions{{{CB}}})", "broker {{broker}}"),
            width=8,
        ),
        timeseries(
            "Leader skew (1 = even share)",
            q(f"broker:kafka_broker_leader_partitions:skew_ratio{{{CB}}}", "broker {{broker}}"),
            width=8,
            description="Partitions a broker leads over the cluster mean.",
        ),
        table(
            "Leader distribution: topic × broker",
            q(f"sum by (topic, broker) (kafka_topic_broker_leader_partitions{{{CBT}}})"),
            transformations=(
                {
                    "id": "groupingToMatrix",
                    "options": {
                        "columnField": "broker",
                        "rowField": "topic",
                        "valueField": "Value",
                    },
                },
            ),
        ),
        timeseries(
            "Preferred leaders not led, per broker",
            q(
                f"broker:kafka_broker_preferred_leader_partitions:imbalance_ratio{{{CB}}}",
                "broker {{broker}}",
            ),
            unit="percentunit",
            description="KafkaLeaderImbalance fires above 10 % for 15 minutes.",
        ),
    )
    replication = row(
        "Replication",
        timeseries(
            "URP, under min ISR and offline partitions by topic",
            q(f"topic:kafka_topic_under_replicated_partitions:sum{{{CT}}}", "URP {{topic}}"),
            q(f"topic:kafka_topic_under_min_isr_partitions:sum{{{CT}}}", "under min ISR {{topic}}"),
            q(f"topic:kafka_topic_offline_partitions:sum{{{CT}}}", "offline {{topic}}"),
        ),
        timeseries(
            "Out-of-sync replicas per broker",
            q(f"broker:kafka_partition_replica_out_of_sync:sum{{{CB}}}", "broker {{broker}}"),
        ),
        timeseries(
            "Longest out-of-sync replica per broker",
            q(
                # Only out-of-sync replicas have series by default: 0 for the others.
                f"max by (broker) (kafka_partition_replica_out_of_sync_seconds{{{CBT}}}) "
                "or on (broker) 0 * max by (broker) "
                f"(kafka_broker_leader_partitions{{{CB}}})",
                "broker {{broker}}",
            ),
            unit="s",
            width=8,
        ),
        timeseries(
            "Replication latency (probe, acks=all − acks=1)",
            q(
                f"max by (broker) (vigia_probe_replication_latency_seconds{{{CB}}})",
                "leader {{broker}}",
            ),
            unit="s",
            width=8,
        ),
        timeseries(
            "Probe round trip p99",
            q(f"broker:vigia_probe_roundtrip_latency_seconds:p99_5m{{{CB}}}", "leader {{broker}}"),
            unit="s",
            width=8,
        ),
        timeseries(
            "Probe produce latency p99 (acks=all vs acks=1)",
            q(
                f"broker_acks:vigia_probe_produce_latency_seconds:p99_5m{{{CB}}}",
                "leader {{broker}} acks={{acks}}",
            ),
            unit="s",
            width=8,
        ),
        timeseries(
            "Probe messages by outcome",
            q(
                "sum by (broker, outcome) "
                f"(rate(vigia_probe_messages_total{{{CB}}}[$__rate_interval]))",
                "{{broker}} {{outcome}}",
            ),
            unit="ops",
            width=8,
        ),
        timeseries(
            "Follower max lag (JMX)",
            q(
                f"max by (broker) (kafka_server_replicafetchermanager_maxlag{{{CB}}})",
                "broker {{broker}}",
            ),
            width=8,
        ),
        timeseries(
            "ISR shrinks and expands (JMX)",
            q(
                "sum by (broker) (rate(kafka_server_replicamanager_isrshrinks_total"
                f"{{{CB}}}[$__rate_interval]))",
                "shrinks {{broker}}",
            ),
            q(
                "sum by (broker) (rate(kafka_server_replicamanager_isrexpands_total"
                f"{{{CB}}}[$__rate_interval]))",
                "expands {{broker}}",
            ),
            unit="ops",
            width=8,
            description="In KRaft the controller removes a stopped broker from the ISRs, so "
            "shrinks stay 0 when a broker dies; watch URP.",
        ),
        timeseries(
            "Produce request time p99 (JMX)",
            q(
                "max by (broker) (kafka_network_requestmetrics_totaltimems"
                f'{{{CB}, request="Produce", quantile="0.99"}})',
                "total {{broker}}",
            ),
            q(
                "max by (broker) (kafka_network_requestmetrics_remotetimems"
                f'{{{CB}, request="Produce", quantile="0.99"}})',
                "waiting for followers {{broker}}",
            ),
            unit="ms",
            width=8,
        ),
        timeseries(
            "Active controller and fenced brokers (JMX)",
            q(
                f"max by (broker) (kafka_controller_kafkacontroller_activecontrollercount{{{CB}}})",
                "active controller {{broker}}",
            ),
            q(f"max(kafka_controller_kafkacontroller_fencedbrokercount{{{C}}})", "fenced brokers"),
            width=8,
        ),
    )
    resources = row(
        "Broker CPU, memory and JVM (JMX)",
        timeseries(
            "CPU",
            q(
                "sum by (broker) (rate(process_cpu_seconds_total"
                f'{{{CB}, job="kafka-jmx"}}[$__rate_interval]))',
                "broker {{broker}}",
            ),
            unit="percentunit",
            width=8,
            description="Cores used by the broker JVM (1 = one core).",
        ),
        timeseries(
            "Resident memory",
            q(
                f'max by (broker) (process_resident_memory_bytes{{{CB}, job="kafka-jmx"}})',
                "broker {{broker}}",
            ),
            unit="bytes",
            width=8,
        ),
        timeseries(
            "JVM heap used",
            q(f'max by (broker) (jvm_memory_bytes_used{{{CB}, area="heap"}})', "used {{broker}}"),
            q(f'max by (broker) (jvm_memory_bytes_max{{{CB}, area="heap"}})', "max {{broker}}"),
            unit="bytes",
            width=8,
        ),
        timeseries(
            "GC time",
            q(
                "sum by (broker, gc) (rate(jvm_gc_collection_seconds_sum"
                f"{{{CB}}}[$__rate_interval]))",
                "{{broker}} {{gc}}",
            ),
            unit="percentunit",
            width=8,
        ),
        timeseries(
            "Request handler and network idle",
            q(
                "max by (broker) "
                f"(kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent{{{CB}}})",
                "request handlers {{broker}}",
            ),
            q(
                "max by (broker) "
                f"(kafka_network_socketserver_networkprocessoravgidle_percent{{{CB}}})",
                "network {{broker}}",
            ),
            unit="percentunit",
            width=8,
        ),
        timeseries(
            "Bytes in and out per broker (JMX)",
            q(f"broker:kafka_server_brokertopicmetrics_bytesin:rate5m{{{CB}}}", "in {{broker}}"),
            q(f"broker:kafka_server_brokertopicmetrics_bytesout:rate5m{{{CB}}}", "out {{broker}}"),
            unit="Bps",
            width=8,
        ),
    )
    disk = row(
        "Disk",
        timeseries(
            "Log dir size per broker",
            q(f"broker:kafka_broker_log_dir_size_bytes:sum{{{CB}}}", "broker {{broker}}"),
            unit="bytes",
        ),
        timeseries(
            "Volume used",
            q(f"broker_log_dir:kafka_broker_log_dir_used:ratio{{{CB}}}", "{{broker}} {{log_dir}}"),
            unit="percentunit",
            thresholds=((0.8, "orange"), (0.9, "red")),
        ),
    )
    exporter = row(
        "Exporter",
        stat(
            "Last collection complete",
            q(f"min(vigia_exporter_up{{{C}}})", "complete"),
            width=8,
            height=8,
            mappings=value_texts((0, "PARTIAL", "orange"), (1, "COMPLETE", "green")),
        ),
        timeseries(
            "Age of the last collection",
            q(f"time() - max(vigia_exporter_last_collection_timestamp_seconds{{{C}}})", "age"),
            unit="s",
            width=8,
            thresholds=((120, "red"),),
        ),
        stat(
            "Probe running",
            q(f"min(vigia_probe_up{{{C}}})", "probe"),
            width=8,
            height=8,
            description="0 when the probe is disabled (--no-probe) or cannot run "
            "(the exporter log says why): replication latency and probe panels go blank.",
            mappings=value_texts((0, "OFF", "orange"), (1, "RUNNING", "green")),
        ),
        timeseries(
            "Collection errors by phase",
            q(
                "sum by (phase) (increase(vigia_exporter_collection_errors_total"
                f"{{{C}}}[$__rate_interval]))",
                "{{phase}}",
            ),
            width=8,
            description="Which calls to Kafka failed (VigiaExporterPartial).",
        ),
    )
    return Board(
        uid="vigia-kafka-cluster",
        title="Vigía / Kafka cluster",
        description="Brokers, controller, partition leadership, replication, broker JVMs, disk.",
        variables=(CLUSTER_VAR, BROKER_VAR, TOPIC_VAR),
        rows=(overview, partitions, replication, resources, disk, exporter),
    )


def topics_board() -> Board:
    rates = row(
        "Throughput",
        timeseries(
            "Messages in per topic (offsets)",
            q(f"topic:kafka_topic_partition_current_offset:rate5m{{{CT}}}", "{{topic}}"),
            unit="ops",
        ),
        timeseries(
            "Messages in per topic (exporter, between collections)",
            q(f"topic:kafka_topic_messages_in_per_second:avg5m{{{CT}}}", "{{topic}}"),
            unit="ops",
        ),
        timeseries(
            "Messages in per broker and topic (exporter)",
            q(
                f"broker_topic:kafka_broker_topic_messages_in_per_second:avg5m{{{CBT}}}",
                "{{broker}} {{topic}}",
            ),
            unit="ops",
            description="Attributed to each partition's leader.",
        ),
        timeseries(
            "Messages in per broker and topic (JMX)",
            q(
                f"broker_topic:kafka_server_brokertopicmetrics_messagesin:rate5m{{{CBT}}}",
                "{{broker}} {{topic}}",
            ),
            unit="ops",
        ),
        timeseries(
            "Bytes in and out per topic (JMX)",
            q(
                "sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesin_total"
                f'{{{CBT}, topic!=""}}[$__rate_interval]))',
                "in {{topic}}",
            ),
            q(
                "sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesout_total"
                f'{{{CBT}, topic!=""}}[$__rate_interval]))',
                "out {{topic}}",
            ),
            unit="Bps",
            width=24,
        ),
    )
    sizes = row(
        "Size and retention",
        timeseries(
            "Topic size (all replicas)",
            q(f"max by (topic) (kafka_topic_size_bytes{{{CT}}})", "{{topic}}"),
            unit="bytes",
        ),
        timeseries(
            "Topic size (leaders only)",
            q(f"max by (topic) (kafka_topic_leader_size_bytes{{{CT}}})", "{{topic}}"),
            unit="bytes",
        ),
        timeseries(
            "Average partition size (leader replicas)",
            q(
                f"topk(10, max by (topic) (kafka_topic_leader_size_bytes{{{CT}}}) "
                f"/ max by (topic) (kafka_topic_partitions{{{CT}}}))",
                "{{topic}}",
            ),
            unit="bytes",
        ),
        timeseries(
            "Retained messages per topic",
            q(
                "sum by (topic) (max by (topic, partition) "
                f"(kafka_topic_partition_current_offset{{{CT}}})"
                " - max by (topic, partition) "
                f"(kafka_topic_partition_oldest_offset{{{CT}}}))",
                "{{topic}}",
            ),
        ),
    )
    layout = row(
        "Layout",
        bargauge(
            "Partitions per topic",
            q(f"max by (topic) (kafka_topic_partitions{{{CT}}})", "{{topic}}"),
            width=8,
        ),
        bargauge(
            "Replication factor per topic",
            q(f"max by (topic) (kafka_topic_replication_factor{{{CT}}})", "{{topic}}"),
            width=8,
        ),
        table(
            "Partitions led per topic and broker",
            q(f"max by (topic, broker) (kafka_topic_broker_leader_partitions{{{CBT}}})"),
            width=8,
        ),
    )
    return Board(
        uid="vigia-topics",
        title="Vigía / Topics",
        description="Messages per second per topic and per broker, sizes, retained messages.",
        variables=(CLUSTER_VAR, TOPIC_VAR, BROKER_VAR),
        rows=(rates, sizes, layout),
    )


def consumers_board() -> Board:
    flow = row(
        "Produced vs consumed",
        timeseries(
            "Produced and consumed messages per topic",
            q(f"topic:kafka_topic_partition_current_offset:rate5m{{{CT}}}", "produced {{topic}}"),
            q(
                f"consumergroup_topic:kafka_consumergroup_current_offset:rate5m{{{CGT}}}",
                "consumed {{consumergroup}} {{topic}}",
            ),
            unit="ops",
        ),
        timeseries(
            "Consumed messages (exporter, between collections)",
            q(
                "max by (consumergroup, topic) "
                f"(kafka_consumergroup_messages_consumed_per_second{{{CGT}}})",
                "{{consumergroup}} {{topic}}",
            ),
            unit="ops",
        ),
    )
    lag = row(
        "Lag",
        timeseries(
            "Lag in messages",
            q(
                f"max by (consumergroup, topic) (kafka_consumergroup_lag_sum{{{CGT}}})",
                "{{consumergroup}} {{topic}}",
            ),
        ),
        timeseries(
            "Lag in seconds (oldest unconsumed message)",
            q(
                f"max by (consumergroup, topic) (kafka_consumergroup_max_lag_seconds{{{CGT}}})",
                "{{consumergroup}} {{topic}}",
            ),
            unit="s",
        ),
        timeseries(
            "Time to catch up",
            q(
                f"max by (consumergroup, topic) (kafka_consumergroup_catchup_seconds{{{CGT}}})",
                "{{consumergroup}} {{topic}}",
            ),
            unit="s",
            description="Backlog ÷ how fast it shrank over the exporter's catch-up window; "
            "no value while the backlog holds or grows (docs/lag.md#retention).",
        ),
        timeseries(
            "Retention margin",
            q(
                "min by (consumergroup, topic) "
                f"(kafka_consumergroup_min_retention_margin_seconds{{{CGT}}})",
                "{{consumergroup}} {{topic}}",
            ),
            unit="s",
            description="Seconds until Kafka may delete the group's oldest unread message "
            "(a lower bound). A group is at risk when catching up takes longer.",
        ),
        timeseries(
            "Lag per partition (messages)",
            q(
                f"max by (consumergroup, topic, partition) (kafka_consumergroup_lag{{{CGT}}})",
                "{{consumergroup}} {{topic}}-{{partition}}",
            ),
            width=8,
        ),
        # Per partition with --group-lag-granularity=partition, else per topic.
        timeseries(
            "Lag per partition or topic (seconds)",
            q(
                "max by (consumergroup, topic, partition) "
                f"(kafka_consumergroup_lag_seconds{{{CGT}}}) or on (consumergroup, topic) "
                "max by (consumergroup, topic) "
                f"(kafka_consumergroup_max_lag_seconds{{{CGT}}})",
                "{{consumergroup}} {{topic}} {{partition}}",
            ),
            unit="s",
            width=8,
        ),
        timeseries(
            "Lag trend (messages/s, > 0 = falling behind)",
            q(
                f"consumergroup_topic:kafka_consumergroup_lag:deriv10m{{{CGT}}}",
                "{{consumergroup}} {{topic}}",
            ),
            unit="ops",
            width=8,
        ),
    )
    status = row(
        "Status",
        stat(
            "Group status",
            q(f"max by (consumergroup) (kafka_consumergroup_status{{{CG}}})", "{{consumergroup}}"),
            width=8,
            height=8,
            thresholds=((2, "yellow"), (3, "red")),
            mappings=STATUS_MAPPINGS,
        ),
        # Per partition with --group-lag-granularity=partition, else per topic.
        table(
            "Partition or topic status",
            q(
                "max by (consumergroup, topic, partition) "
                f"(kafka_consumergroup_partition_status{{{CGT}}}) or on (consumergroup, "
                "topic) max by (consumergroup, topic) "
                f"(kafka_consumergroup_topic_status{{{CGT}}})"
            ),
            width=8,
            mappings=PARTITION_STATUS_MAPPINGS,
        ),
        timeseries(
            "Members and state",
            q(f"max by (consumergroup) (kafka_consumergroup_members{{{CG}}})", "{{consumergroup}}"),
            q(
                f"max by (consumergroup, state, protocol) (kafka_consumergroup_info{{{CG}}})",
                "{{consumergroup}} {{state}} {{protocol}}",
            ),
            width=8,
        ),
    )
    return Board(
        uid="vigia-consumers",
        title="Vigía / Consumers",
        description="Produced vs consumed per group and topic, lag (messages, seconds), status.",
        variables=(CLUSTER_VAR, GROUP_VAR, TOPIC_VAR),
        rows=(flow, lag, status),
    )


def ingest_board() -> Board:
    health = row(
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
    flow = row(
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
    durations = row(
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
    days = row(
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
    return Board(
        uid="vigia-ingest",
        title="Vigía / Ingest",
        description="The PySpark job: batches, rates, durations, backlog, quarantine, freshness.",
        variables=(CLUSTER_VAR, QUERY_VAR),
        rows=(health, flow, durations, days),
    )


def capacity_board() -> Board:
    disk = row(
        "Disk",
        timeseries(
            "Disk growth per broker (per day, 1h trend)",
            q(
                "sum by (broker) "
                f"(broker_log_dir:kafka_broker_log_dir_size_bytes:deriv1h{{{CB}}}) * 86400",
                "broker {{broker}}",
            ),
            unit="bytes",
        ),
        timeseries(
            "Days until the log dir is full (6h trend)",
            q(
                "min by (broker) "
                f"(broker_log_dir:kafka_broker_log_dir_days_until_full:deriv6h{{{CB}}})",
                "broker {{broker}}",
            ),
            unit="d",
            description="Empty for a broker whose log dirs are not growing.",
        ),
        timeseries(
            "Log dir size",
            q(f"broker:kafka_broker_log_dir_size_bytes:sum{{{CB}}}", "broker {{broker}}"),
            unit="bytes",
            width=8,
        ),
        timeseries(
            "Free space on the volume",
            q(
                f"max by (broker, log_dir) (kafka_broker_log_dir_usable_bytes{{{CB}}})",
                "{{broker}} {{log_dir}}",
            ),
            unit="bytes",
            width=8,
        ),
        bargauge(
            "Outage budget per topic",
            q(f"min by (topic) (kafka_topic_outage_budget_seconds{{{C}}})", "{{topic}}"),
            unit="s",
            width=8,
            description=(
                "How long a consumer that stopped now could stay stopped before the topic's "
                "retention deletes a message it has not read, at today's production "
                "(docs/lag.md#retention)."
            ),
        ),
        bargauge(
            "Volume used",
            q(f"broker_log_dir:kafka_broker_log_dir_used:ratio{{{CB}}}", "{{broker}} {{log_dir}}"),
            unit="percentunit",
            width=8,
            thresholds=((0.8, "orange"), (0.9, "red")),
        ),
    )
    load = row(
        "Partitions and load",
        timeseries(
            "Partition replicas per broker",
            q(f"broker:kafka_broker_partition_replicas:sum{{{CB}}}", "broker {{broker}}"),
            width=8,
        ),
        timeseries(
            "Leader partitions per broker",
            q(f"max by (broker) (kafka_broker_leader_partitions{{{CB}}})", "broker {{broker}}"),
            width=8,
        ),
        timeseries(
            "JVM heap used / max",
            q(
                f'max by (broker) (jvm_memory_bytes_used{{{CB}, area="heap"}}) / max by '
                f'(broker) (jvm_memory_bytes_max{{{CB}, area="heap"}})',
                "broker {{broker}}",
            ),
            unit="percentunit",
            width=8,
        ),
        timeseries(
            "Throughput trend, user topics (1h rate)",
            q(f"cluster:kafka_topic_partition_current_offset:rate1h{{{C}}}", "{{cluster}}"),
            unit="ops",
        ),
        timeseries(
            "Messages per day per topic",
            q(
                "sum by (topic) (increase(kafka_topic_partition_current_offset"
                f'{{{C}, topic!~"__.*"}}[1d]))',
                "{{topic}}",
            ),
        ),
    )
    return Board(
        uid="vigia-capacity",
        title="Vigía / Capacity",
        description="Disk growth and days to full, partitions per broker, throughput trend.",
        variables=(CLUSTER_VAR, BROKER_VAR),
        rows=(disk, load),
    )


def hes_board() -> Board:
    """The HES leg: HES database → Kafka Connect (Debezium) → Kafka → ingest, hop by hop."""
    hops = row(
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
    connect = row(
        "Kafka Connect",
        table(
            "Task states",
            q(f"max by (connect, connector, task, state) (kafka_connect_task_state{{{CN}}}) == 1"),
            description="Current state of every task (REST, through the exporter).",
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
    debezium = row(
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
    return Board(
        uid="vigia-hes",
        title="Vigía / HES leg",
        description="HES database, Kafka Connect and Debezium feeding measure, hop by hop.",
        variables=(CLUSTER_VAR, CONNECTOR_VAR),
        rows=(hops, connect, debezium),
    )


BOARDS = (
    kafka_cluster_board,
    topics_board,
    consumers_board,
    ingest_board,
    capacity_board,
    hes_board,
)


def rendered() -> dict[str, str]:
    """File name → JSON text, exactly as committed."""
    return {
        f"{board.uid}.json": json.dumps(render(board), indent=2, ensure_ascii=False) + "\n"
        for board in (make() for make in BOARDS)
    }


def main() -> int:
    setup_logging()
    OUT_DIR.mkdir(exist_ok=True)
    for name, text in rendered().items():
        (OUT_DIR / name).write_text(text, encoding="utf-8")
    logging.getLogger("generate_dashboards").info("wrote %d boards to %s", len(BOARDS), OUT_DIR)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
