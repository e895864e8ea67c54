"""Generates Vigía's Grafana boards (grafana/dashboards/*.json).

The JSON files are committed (Grafana provisions them as they are); this script is their source.
Edit it, run `python grafana/generate_dashboards.py`, commit both. tests/monitoring checks that the
committed JSON equals this script's output and runs every query against a real Prometheus.

Grafana's typed builders (`grafana-foundation-sdk` 11.6 on PyPI) were tried for the HES board and
not used: panel ids, refIds and the variable's query object come out empty or in another shape
than these boards and their tests use (so a post-processing pass would be needed), the package is
55,000 lines of generated code versioned with epochs (`1769699379!11.6.0`), and the board was not
shorter than the `Panel`/`Row` dataclasses below.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.logs import setup_logging

DATASOURCE = {"type": "prometheus", "uid": "vigia-prometheus"}
OUT_DIR = Path(__file__).resolve().parent / "dashboards"
GRID_WIDTH = 24

# Label filters every query carries; `$topic` etc. are multi-value variables whose "All" is `.*`.
C = 'cluster=~"$cluster"'
CB = 'cluster=~"$cluster", broker=~"$broker"'
CT = 'cluster=~"$cluster", topic=~"$topic"'
CBT = 'cluster=~"$cluster", broker=~"$broker", topic=~"$topic"'
CG = 'cluster=~"$cluster", consumergroup=~"$group"'
CGT = 'cluster=~"$cluster", consumergroup=~"$group", topic=~"$topic"'
CQ = 'cluster=~"$cluster", query=~"$query"'
INGEST_GROUP = 'cluster=~"$cluster", consumergroup="vigia-ingest"'
CN = 'cluster=~"$cluster", connector=~"$connector"'
DBZ = 'cluster=~"$cluster", context="streaming"'  # Debezium's series have `server`, no connector

STATUS_MAPPINGS = [
    {
        "type": "value",
        "options": {
            "1": {"text": "OK", "color": "green", "index": 0},
            "2": {"text": "WARN", "color": "yellow", "index": 1},
            "3": {"text": "ERR", "color": "red", "index": 2},
        },
    }
]
PARTITION_STATUS_MAPPINGS = [
    {
        "type": "value",
        "options": {
            "1": {"text": "OK", "color": "green", "index": 0},
            "2": {"text": "WARN", "color": "yellow", "index": 1},
            "3": {"text": "STOP", "color": "red", "index": 2},
            "4": {"text": "STALL", "color": "red", "index": 3},
            "5": {"text": "REWIND", "color": "orange", "index": 4},
        },
    }
]


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False  # tables and bar gauges show the latest value only


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[Query, ...]
    kind: str = "timeseries"  # timeseries | stat | table | bargauge
    unit: str = "short"
    width: int = 12
    height: int = 8
    description: str = ""
    thresholds: tuple[tuple[float, str], ...] = ()  # (from value, colour) after green
    mappings: list[dict[str, Any]] = field(default_factory=list)
    transformations: list[dict[str, Any]] = field(default_factory=list)
    stack: bool = False


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Variable:
    name: str
    label: str
    query: str  # label_values(...)
    multi: bool = True


@dataclass(frozen=True)
class Board:
    uid: str
    title: str
    description: str
    variables: tuple[Variable, ...]
    rows: tuple[Row, ...]


def q(expr: str, legend: str = "", instant: bool = False) -> Query:
    return Query(expr=expr, legend=legend, instant=instant)


CLUSTER_VAR = Variable("cluster", "Cluster", "label_values(kafka_brokers, cluster)")
BROKER_VAR = Variable(
    "broker", "Broker", f"label_values(kafka_broker_leader_partitions{{{C}}}, broker)"
)
TOPIC_VAR = Variable("topic", "Topic", f"label_values(kafka_topic_partitions{{{C}}}, topic)")
GROUP_VAR = Variable(
    "group", "Consumer group", f"label_values(kafka_consumergroup_members{{{C}}}, consumergroup)"
)
QUERY_VAR = Variable(
    "query", "Streaming query", f"label_values(vigia_ingest_query_active{{{C}}}, query)"
)
CONNECTOR_VAR = Variable(
    "connector", "Connector", f"label_values(kafka_connect_connector_state{{{C}}}, connector)"
)
UP_DOWN_MAPPINGS = [
    {
        "type": "value",
        "options": {
            "0": {"text": "DOWN", "color": "red", "index": 0},
            "1": {"text": "UP", "color": "green", "index": 1},
        },
    }
]


def kafka_cluster_board() -> Board:
    overview = Row(
        "Overview",
        (
            Panel(
                "Brokers",
                (
                    q(f"max by (cluster) (kafka_brokers{{{C}}})", "in metadata"),
                    q(
                        f"sum by (cluster) (1 - max by (cluster, broker) (kafka_broker_up{{{C}}}))",
                        "down",
                    ),
                ),
                kind="stat",
                width=4,
                height=4,
                description="Brokers in the metadata, and expected brokers (replicas, KRaft "
                "voters) missing from it: kafka_broker_up.",
            ),
            Panel(
                "Active controller",
                (q(f"kafka_cluster_info{{{C}}}", "broker {{controller_id}}", instant=True),),
                kind="stat",
                width=4,
                height=4,
                description="KRaft quorum leader as the exporter reports it.",
            ),
            Panel(
                "Offline partitions",
                (q(f"sum(topic:kafka_topic_offline_partitions:sum{{{C}}})", "offline"),),
                kind="stat",
                width=4,
                height=4,
                thresholds=((1, "red"),),
            ),
            Panel(
                "Under min ISR",
                (
                    q(
                        f"sum(topic:kafka_topic_under_min_isr_partitions:sum{{{C}}})",
                        "under min ISR",
                    ),
                ),
                kind="stat",
                width=4,
                height=4,
                thresholds=((1, "red"),),
            ),
            Panel(
                "Under-replicated",
                (
                    q(
                        f"sum(topic:kafka_topic_under_replicated_partitions:sum{{{C}}})",
                        "URP",
                    ),
                ),
                kind="stat",
                width=4,
                height=4,
                thresholds=((1, "orange"),),
            ),
            Panel(
                "Leaders not on preferred replica",
                (
                    q(
                        f"sum(cluster:kafka_topic_leader_not_preferred_partitions:sum{{{C}}})",
                        "not preferred",
                    ),
                ),
                kind="stat",
                width=4,
                height=4,
                thresholds=((1, "yellow"),),
            ),
        ),
    )
    partitions = Row(
        "Partitions per broker",
        (
            Panel(
                "Leader partitions per broker",
                (
                    q(
                        f"max by (broker) (kafka_broker_leader_partitions{{{CB}}})",
                        "broker {{broker}}",
                    ),
                ),
                width=8,
            ),
            Panel(
                "Follower partitions per broker",
                (
                    q(
                        f"max by (broker) (kafka_broker_follower_partitions{{{CB}}})",
                        "broker {{broker}}",
                    ),
                ),
                width=8,
            ),
            Panel(
                "Leader skew (1 = even share)",
                (
                    q(
                        f"broker:kafka_broker_leader_partitions:skew_ratio{{{CB}}}",
                        "broker {{broker}}",
                    ),
                ),
                width=8,
                description="Partitions a broker leads over the cluster mean.",
            ),
            Panel(
                "Leader distribution: topic × broker",
                (
                    q(
                        f"sum by (topic, broker) (kafka_topic_broker_leader_partitions{{{CBT}}})",
                        instant=True,
                    ),
                ),
                kind="table",
                width=12,
                transformations=[
                    {
                        "id": "groupingToMatrix",
                        "options": {
                            "columnField": "broker",
                            "rowField": "topic",
                            "valueField": "Value",
                        },
                    }
                ],
            ),
            Panel(
                "Preferred leaders not led, per broker",
                (
                    q(
                        f"broker:kafka_broker_preferred_leader_partitions:imbalance_ratio{{{CB}}}",
                        "broker {{broker}}",
                    ),
                ),
                unit="percentunit",
                width=12,
                description="KafkaLeaderImbalance fires above 10 % for 15 minutes.",
            ),
        ),
    )
    replication = Row(
        "Replication",
        (
            Panel(
                "URP, under min ISR and offline partitions by topic",
                (
                    q(
                        f"topic:kafka_topic_under_replicated_partitions:sum{{{CT}}}",
                        "URP {{topic}}",
                    ),
                    q(
                        f"topic:kafka_topic_under_min_isr_partitions:sum{{{CT}}}",
                        "under min ISR {{topic}}",
                    ),
                    q(f"topic:kafka_topic_offline_partitions:sum{{{CT}}}", "offline {{topic}}"),
                ),
                width=12,
            ),
            Panel(
                "Out-of-sync replicas per broker",
                (
                    q(
                        f"broker:kafka_partition_replica_out_of_sync:sum{{{CB}}}",
                        "broker {{broker}}",
                    ),
                ),
                width=12,
            ),
            Panel(
                "Longest out-of-sync replica per broker",
                (
                    q(
                        # Only out-of-sync replicas have series by default: 0 for the others.
                        f"max by (broker) (kafka_partition_replica_out_of_sync_seconds{{{CBT}}}) "
                        "or on (broker) 0 * max by (broker) "
                        f"(kafka_broker_leader_partitions{{{CB}}})",
                        "broker {{broker}}",
                    ),
                ),
                unit="s",
                width=8,
            ),
            Panel(
                "Replication latency (probe, acks=all − acks=1)",
                (
                    q(
                        f"max by (broker) (vigia_probe_replication_latency_seconds{{{CB}}})",
                        "leader {{broker}}",
                    ),
                ),
                unit="s",
                width=8,
            ),
            Panel(
                "Probe round trip p99",
                (
                    q(
                        f"broker:vigia_probe_roundtrip_latency_seconds:p99_5m{{{CB}}}",
                        "leader {{broker}}",
                    ),
                ),
                unit="s",
                width=8,
            ),
            Panel(
                "Probe produce latency p99 (acks=all vs acks=1)",
                (
                    q(
                        f"broker_acks:vigia_probe_produce_latency_seconds:p99_5m{{{CB}}}",
                        "leader {{broker}} acks={{acks}}",
                    ),
                ),
                unit="s",
                width=8,
            ),
            Panel(
                "Probe messages by outcome",
                (
                    q(
                        "sum by (broker, outcome) "
                        f"(rate(vigia_probe_messages_total{{{CB}}}[$__rate_interval]))",
                        "{{broker}} {{outcome}}",
                    ),
                ),
                unit="ops",
                width=8,
            ),
            Panel(
                "Follower max lag (JMX)",
                (
                    q(
                        f"max by (broker) (kafka_server_replicafetchermanager_maxlag{{{CB}}})",
                        "broker {{broker}}",
                    ),
                ),
                width=8,
            ),
            Panel(
                "ISR shrinks and expands (JMX)",
                (
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
                ),
                unit="ops",
                width=8,
                description="In KRaft the controller removes a stopped broker from the ISRs, so "
                "shrinks stay 0 when a broker dies; watch URP.",
            ),
            Panel(
                "Produce request time p99 (JMX)",
                (
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
                ),
                unit="ms",
                width=8,
            ),
            Panel(
                "Active controller and fenced brokers (JMX)",
                (
                    q(
                        "max by (broker) (kafka_controller_kafkacontroller_activecontrollercount"
                        f"{{{CB}}})",
                        "active controller {{broker}}",
                    ),
                    q(
                        f"max(kafka_controller_kafkacontroller_fencedbrokercount{{{C}}})",
                        "fenced brokers",
                    ),
                ),
                width=8,
            ),
        ),
    )
    resources = Row(
        "Broker CPU, memory and JVM (JMX)",
        (
            Panel(
                "CPU",
                (
                    q(
                        "sum by (broker) (rate(process_cpu_seconds_total"
                        f'{{{CB}, job="kafka-jmx"}}[$__rate_interval]))',
                        "broker {{broker}}",
                    ),
                ),
                unit="percentunit",
                width=8,
                description="Cores used by the broker JVM (1 = one core).",
            ),
            Panel(
                "Resident memory",
                (
                    q(
                        f'max by (broker) (process_resident_memory_bytes{{{CB}, job="kafka-jmx"}})',
                        "broker {{broker}}",
                    ),
                ),
                unit="bytes",
                width=8,
            ),
            Panel(
                "JVM heap used",
                (
                    q(
                        f'max by (broker) (jvm_memory_bytes_used{{{CB}, area="heap"}})',
                        "used {{broker}}",
                    ),
                    q(
                        f'max by (broker) (jvm_memory_bytes_max{{{CB}, area="heap"}})',
                        "max {{broker}}",
                    ),
                ),
                unit="bytes",
                width=8,
            ),
            Panel(
                "GC time",
                (
                    q(
                        "sum by (broker, gc) (rate(jvm_gc_collection_seconds_sum"
                        f"{{{CB}}}[$__rate_interval]))",
                        "{{broker}} {{gc}}",
                    ),
                ),
                unit="percentunit",
                width=8,
            ),
            Panel(
                "Request handler and network idle",
                (
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
                ),
                unit="percentunit",
                width=8,
            ),
            Panel(
                "Bytes in and out per broker (JMX)",
                (
                    q(
                        f"broker:kafka_server_brokertopicmetrics_bytesin:rate5m{{{CB}}}",
                        "in {{broker}}",
                    ),
                    q(
                        f"broker:kafka_server_brokertopicmetrics_bytesout:rate5m{{{CB}}}",
                        "out {{broker}}",
                    ),
                ),
                unit="Bps",
                width=8,
            ),
        ),
    )
    disk = Row(
        "Disk",
        (
            Panel(
                "Log dir size per broker",
                (q(f"broker:kafka_broker_log_dir_size_bytes:sum{{{CB}}}", "broker {{broker}}"),),
                unit="bytes",
                width=12,
            ),
            Panel(
                "Volume used",
                (
                    q(
                        f"broker_log_dir:kafka_broker_log_dir_used:ratio{{{CB}}}",
                        "{{broker}} {{log_dir}}",
                    ),
                ),
                unit="percentunit",
                width=12,
                thresholds=((0.8, "orange"), (0.9, "red")),
            ),
        ),
    )
    exporter = Row(
        "Exporter",
        (
            Panel(
                "Last collection complete",
                (q(f"min(vigia_exporter_up{{{C}}})", "complete"),),
                kind="stat",
                width=8,
                mappings=[
                    {
                        "type": "value",
                        "options": {
                            "0": {"text": "PARTIAL", "color": "orange", "index": 0},
                            "1": {"text": "COMPLETE", "color": "green", "index": 1},
                        },
                    }
                ],
            ),
            Panel(
                "Age of the last collection",
                (
                    q(
                        f"time() - max(vigia_exporter_last_collection_timestamp_seconds{{{C}}})",
                        "age",
                    ),
                ),
                unit="s",
                width=8,
                thresholds=((120, "red"),),
            ),
            Panel(
                "Probe running",
                (q(f"min(vigia_probe_up{{{C}}})", "probe"),),
                kind="stat",
                width=8,
                description="0 when the probe is disabled (--no-probe) or cannot run "
                "(the exporter log says why): replication latency and probe panels go blank.",
                mappings=[
                    {
                        "type": "value",
                        "options": {
                            "0": {"text": "OFF", "color": "orange", "index": 0},
                            "1": {"text": "RUNNING", "color": "green", "index": 1},
                        },
                    }
                ],
            ),
            Panel(
                "Collection errors by phase",
                (
                    q(
                        "sum by (phase) (increase(vigia_exporter_collection_errors_total"
                        f"{{{C}}}[$__rate_interval]))",
                        "{{phase}}",
                    ),
                ),
                width=8,
                description="Which calls to Kafka failed (VigiaExporterPartial).",
            ),
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
    rates = Row(
        "Throughput",
        (
            Panel(
                "Messages in per topic (offsets)",
                (q(f"topic:kafka_topic_partition_current_offset:rate5m{{{CT}}}", "{{topic}}"),),
                unit="ops",
                width=12,
            ),
            Panel(
                "Messages in per topic (exporter, between collections)",
                (q(f"topic:kafka_topic_messages_in_per_second:avg5m{{{CT}}}", "{{topic}}"),),
                unit="ops",
                width=12,
            ),
            Panel(
                "Messages in per broker and topic (exporter)",
                (
                    q(
                        f"broker_topic:kafka_broker_topic_messages_in_per_second:avg5m{{{CBT}}}",
                        "{{broker}} {{topic}}",
                    ),
                ),
                unit="ops",
                width=12,
                description="Attributed to each partition's leader.",
            ),
            Panel(
                "Messages in per broker and topic (JMX)",
                (
                    q(
                        f"broker_topic:kafka_server_brokertopicmetrics_messagesin:rate5m{{{CBT}}}",
                        "{{broker}} {{topic}}",
                    ),
                ),
                unit="ops",
                width=12,
            ),
            Panel(
                "Bytes in and out per topic (JMX)",
                (
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
                ),
                unit="Bps",
                width=24,
            ),
        ),
    )
    sizes = Row(
        "Size and retention",
        (
            Panel(
                "Topic size (all replicas)",
                (q(f"max by (topic) (kafka_topic_size_bytes{{{CT}}})", "{{topic}}"),),
                unit="bytes",
                width=12,
            ),
            Panel(
                "Topic size (leaders only)",
                (q(f"max by (topic) (kafka_topic_leader_size_bytes{{{CT}}})", "{{topic}}"),),
                unit="bytes",
                width=12,
            ),
            Panel(
                "Average partition size (leader replicas)",
                (
                    q(
                        f"topk(10, max by (topic) (kafka_topic_leader_size_bytes{{{CT}}}) "
                        f"/ max by (topic) (kafka_topic_partitions{{{CT}}}))",
                        "{{topic}}",
                    ),
                ),
                unit="bytes",
                width=12,
            ),
            Panel(
                "Retained messages per topic",
                (
                    q(
                        "sum by (topic) (max by (topic, partition) "
                        f"(kafka_topic_partition_current_offset{{{CT}}})"
                        " - max by (topic, partition) "
                        f"(kafka_topic_partition_oldest_offset{{{CT}}}))",
                        "{{topic}}",
                    ),
                ),
                width=12,
            ),
        ),
    )
    layout = Row(
        "Layout",
        (
            Panel(
                "Partitions per topic",
                (q(f"max by (topic) (kafka_topic_partitions{{{CT}}})", "{{topic}}", instant=True),),
                kind="bargauge",
                width=8,
            ),
            Panel(
                "Replication factor per topic",
                (
                    q(
                        f"max by (topic) (kafka_topic_replication_factor{{{CT}}})",
                        "{{topic}}",
                        instant=True,
                    ),
                ),
                kind="bargauge",
                width=8,
            ),
            Panel(
                "Partitions led per topic and broker",
                (
                    q(
                        f"max by (topic, broker) (kafka_topic_broker_leader_partitions{{{CBT}}})",
                        instant=True,
                    ),
                ),
                kind="table",
                width=8,
            ),
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
    flow = Row(
        "Produced vs consumed",
        (
            Panel(
                "Produced and consumed messages per topic",
                (
                    q(
                        f"topic:kafka_topic_partition_current_offset:rate5m{{{CT}}}",
                        "produced {{topic}}",
                    ),
                    q(
                        f"consumergroup_topic:kafka_consumergroup_current_offset:rate5m{{{CGT}}}",
                        "consumed {{consumergroup}} {{topic}}",
                    ),
                ),
                unit="ops",
                width=12,
            ),
            Panel(
                "Consumed messages (exporter, between collections)",
                (
                    q(
                        "max by (consumergroup, topic) "
                        f"(kafka_consumergroup_messages_consumed_per_second{{{CGT}}})",
                        "{{consumergroup}} {{topic}}",
                    ),
                ),
                unit="ops",
                width=12,
            ),
        ),
    )
    lag = Row(
        "Lag",
        (
            Panel(
                "Lag in messages",
                (
                    q(
                        f"max by (consumergroup, topic) (kafka_consumergroup_lag_sum{{{CGT}}})",
                        "{{consumergroup}} {{topic}}",
                    ),
                ),
                width=12,
            ),
            Panel(
                "Lag in seconds (oldest unconsumed message)",
                (
                    q(
                        "max by (consumergroup, topic) "
                        f"(kafka_consumergroup_max_lag_seconds{{{CGT}}})",
                        "{{consumergroup}} {{topic}}",
                    ),
                ),
                unit="s",
                width=12,
            ),
            Panel(
                "Time to catch up",
                (
                    q(
                        "max by (consumergroup, topic) "
                        f"(kafka_consumergroup_catchup_seconds{{{CGT}}})",
                        "{{consumergroup}} {{topic}}",
                    ),
                ),
                unit="s",
                width=12,
                description="Backlog ÷ how fast it shrank over the exporter's catch-up window; "
                "no value while the backlog holds or grows (docs/lag.md#retention).",
            ),
            Panel(
                "Retention margin",
                (
                    q(
                        "min by (consumergroup, topic) "
                        f"(kafka_consumergroup_min_retention_margin_seconds{{{CGT}}})",
                        "{{consumergroup}} {{topic}}",
                    ),
                ),
                unit="s",
                width=12,
                description="Seconds until Kafka may delete the group's oldest unread message "
                "(a lower bound). A group is at risk when catching up takes longer.",
            ),
            Panel(
                "Lag per partition (messages)",
                (
                    q(
                        "max by (consumergroup, topic, partition) "
                        f"(kafka_consumergroup_lag{{{CGT}}})",
                        "{{consumergroup}} {{topic}}-{{partition}}",
                    ),
                ),
                width=8,
            ),
            Panel(
                # Per partition with --group-lag-granularity=partition, else per topic.
                "Lag per partition or topic (seconds)",
                (
                    q(
                        "max by (consumergroup, topic, partition) "
                        f"(kafka_consumergroup_lag_seconds{{{CGT}}}) or on (consumergroup, topic) "
                        "max by (consumergroup, topic) "
                        f"(kafka_consumergroup_max_lag_seconds{{{CGT}}})",
                        "{{consumergroup}} {{topic}} {{partition}}",
                    ),
                ),
                unit="s",
                width=8,
            ),
            Panel(
                "Lag trend (messages/s, > 0 = falling behind)",
                (
                    q(
                        f"consumergroup_topic:kafka_consumergroup_lag:deriv10m{{{CGT}}}",
                        "{{consumergroup}} {{topic}}",
                    ),
                ),
                unit="ops",
                width=8,
            ),
        ),
    )
    status = Row(
        "Status",
        (
            Panel(
                "Group status",
                (
                    q(
                        f"max by (consumergroup) (kafka_consumergroup_status{{{CG}}})",
                        "{{consumergroup}}",
                    ),
                ),
                kind="stat",
                width=8,
                mappings=STATUS_MAPPINGS,
                thresholds=((2, "yellow"), (3, "red")),
            ),
            Panel(
                # Per partition with --group-lag-granularity=partition, else per topic.
                "Partition or topic status",
                (
                    q(
                        "max by (consumergroup, topic, partition) "
                        f"(kafka_consumergroup_partition_status{{{CGT}}}) or on (consumergroup, "
                        "topic) max by (consumergroup, topic) "
                        f"(kafka_consumergroup_topic_status{{{CGT}}})",
                        instant=True,
                    ),
                ),
                kind="table",
                width=8,
                mappings=PARTITION_STATUS_MAPPINGS,
            ),
            Panel(
                "Members and state",
                (
                    q(
                        f"max by (consumergroup) (kafka_consumergroup_members{{{CG}}})",
                        "{{consumergroup}}",
                    ),
                    q(
                        "max by (consumergroup, state, protocol) "
                        f"(kafka_consumergroup_info{{{CG}}})",
                        "{{consumergroup}} {{state}} {{protocol}}",
                    ),
                ),
                width=8,
            ),
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
    health = Row(
        "Health",
        (
            Panel(
                "Query",
                (q(f"max by (query) (vigia_ingest_query_active{{{CQ}}})", "{{query}}"),),
                kind="stat",
                width=6,
                height=4,
                mappings=[
                    {
                        "type": "value",
                        "options": {
                            "0": {"text": "STOPPED", "color": "red", "index": 0},
                            "1": {"text": "RUNNING", "color": "green", "index": 1},
                        },
                    }
                ],
            ),
            Panel(
                "Newest stored measure age",
                (q(f"query:vigia_ingest_newest_measure_age_seconds:max{{{CQ}}}", "{{query}}"),),
                kind="stat",
                unit="s",
                width=6,
                height=4,
                thresholds=((1800, "orange"), (3600, "red")),
            ),
            Panel(
                "Last progress age",
                (q(f"query:vigia_ingest_last_progress_age_seconds:max{{{CQ}}}", "{{query}}"),),
                kind="stat",
                unit="s",
                width=6,
                height=4,
                thresholds=((120, "orange"), (300, "red")),
            ),
            Panel(
                "Backlog (vigia-ingest, oldest unconsumed message)",
                (q(f"max(kafka_consumergroup_max_lag_seconds{{{INGEST_GROUP}}})", "lag"),),
                kind="stat",
                unit="s",
                width=6,
                height=4,
                thresholds=((300, "orange"), (900, "red")),
            ),
        ),
    )
    flow = Row(
        "Batches and rows",
        (
            Panel(
                "Batches per minute",
                (
                    q(
                        "sum by (query) "
                        f"(rate(vigia_ingest_batches_total{{{CQ}}}[$__rate_interval])) * 60",
                        "{{query}}",
                    ),
                ),
                width=8,
            ),
            Panel(
                "Input and processed rows/s (last progress)",
                (
                    q(
                        f"max by (query) (vigia_ingest_input_rows_per_second{{{CQ}}})",
                        "input {{query}}",
                    ),
                    q(
                        f"max by (query) (vigia_ingest_processed_rows_per_second{{{CQ}}})",
                        "processed {{query}}",
                    ),
                ),
                unit="ops",
                width=8,
            ),
            Panel(
                "Rows written and quarantined",
                (
                    q(
                        "sum by (query) "
                        f"(rate(vigia_ingest_valid_rows_total{{{CQ}}}[$__rate_interval]))",
                        "written {{query}}",
                    ),
                    q(
                        "sum by (query) "
                        f"(rate(vigia_ingest_invalid_rows_total{{{CQ}}}[$__rate_interval]))",
                        "quarantined {{query}}",
                    ),
                ),
                unit="ops",
                width=8,
            ),
            Panel(
                "Quarantined rows by reason",
                (
                    q(
                        f"query_reason:vigia_ingest_invalid_rows:rate5m{{{CQ}}}",
                        "{{reason}}",
                    ),
                ),
                unit="ops",
                width=8,
                stack=True,
            ),
            Panel(
                "Quarantine ratio (15m)",
                (q(f"query:vigia_ingest_invalid_rows:ratio_rate15m{{{CQ}}}", "{{query}}"),),
                unit="percentunit",
                width=8,
                thresholds=((0.02, "red"),),
            ),
            Panel(
                "Rows in the last batch",
                (q(f"max by (query) (vigia_ingest_batch_input_rows{{{CQ}}})", "{{query}}"),),
                width=8,
            ),
        ),
    )
    durations = Row(
        "Durations and backlog",
        (
            Panel(
                "Batch duration p95",
                (q(f"query:vigia_ingest_batch_duration_seconds:p95_5m{{{CQ}}}", "{{query}}"),),
                unit="s",
                width=8,
            ),
            Panel(
                "Last batch by phase",
                (
                    q(
                        f"max by (query, phase) (vigia_ingest_phase_duration_seconds{{{CQ}}})",
                        "{{phase}}",
                    ),
                ),
                unit="s",
                width=8,
                stack=True,
            ),
            Panel(
                "Offsets behind latest",
                (
                    q(
                        f"max by (query, topic) (vigia_ingest_offsets_behind_latest{{{CQ}}})",
                        "{{topic}}",
                    ),
                ),
                width=8,
            ),
            Panel(
                "vigia-ingest consumer group lag",
                (
                    q(f"sum(kafka_consumergroup_lag_sum{{{INGEST_GROUP}}})", "messages"),
                    q(f"max(kafka_consumergroup_max_lag_seconds{{{INGEST_GROUP}}})", "seconds"),
                ),
                width=12,
            ),
            Panel(
                "Retention margin",
                (
                    q(
                        f"min(kafka_consumergroup_min_retention_margin_seconds{{{INGEST_GROUP}}})",
                        "retention margin",
                    ),
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
            Panel(
                "Backlog drain rate",
                (
                    q(
                        "sum(kafka_consumergroup_backlog_drain_messages_per_second"
                        f"{{{INGEST_GROUP}}})",
                        "drained per second",
                    ),
                ),
                unit="ops",
                width=6,
                description="Consumed minus produced over the exporter's catch-up window (5 "
                "minutes): negative while the backlog grows.",
            ),
            Panel(
                "Freshness: newest stored measure age",
                (q(f"query:vigia_ingest_newest_measure_age_seconds:max{{{CQ}}}", "{{query}}"),),
                unit="s",
                width=12,
                thresholds=((3600, "red"),),
            ),
        ),
    )
    days = Row(
        "Days",
        (
            Panel(
                "Measures stored per day",
                (
                    q(
                        f"max by (measure_date) (vigia_ingest_day_measures{{{C}}})",
                        "{{measure_date}}",
                        instant=True,
                    ),
                ),
                kind="bargauge",
                width=12,
            ),
            Panel(
                "Completeness per closed day",
                (
                    q(
                        f"min by (measure_date) (vigia_ingest_day_completeness_ratio{{{C}}})",
                        "{{measure_date}}",
                        instant=True,
                    ),
                ),
                kind="bargauge",
                unit="percentunit",
                width=12,
                thresholds=((0.99, "green"),),
            ),
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
    disk = Row(
        "Disk",
        (
            Panel(
                "Disk growth per broker (per day, 1h trend)",
                (
                    q(
                        "sum by (broker) "
                        f"(broker_log_dir:kafka_broker_log_dir_size_bytes:deriv1h{{{CB}}}) * 86400",
                        "broker {{broker}}",
                    ),
                ),
                unit="bytes",
                width=12,
            ),
            Panel(
                "Days until the log dir is full (6h trend)",
                (
                    q(
                        "min by (broker) "
                        f"(broker_log_dir:kafka_broker_log_dir_days_until_full:deriv6h{{{CB}}})",
                        "broker {{broker}}",
                    ),
                ),
                unit="d",
                width=12,
                description="Empty for a broker whose log dirs are not growing.",
            ),
            Panel(
                "Log dir size",
                (q(f"broker:kafka_broker_log_dir_size_bytes:sum{{{CB}}}", "broker {{broker}}"),),
                unit="bytes",
                width=8,
            ),
            Panel(
                "Free space on the volume",
                (
                    q(
                        f"max by (broker, log_dir) (kafka_broker_log_dir_usable_bytes{{{CB}}})",
                        "{{broker}} {{log_dir}}",
                    ),
                ),
                unit="bytes",
                width=8,
            ),
            Panel(
                "Outage budget per topic",
                (
                    q(
                        f"min by (topic) (kafka_topic_outage_budget_seconds{{{C}}})",
                        "{{topic}}",
                        instant=True,
                    ),
                ),
                kind="bargauge",
                unit="s",
                width=8,
                description=(
                    "How long a consumer that stopped now could stay stopped before the topic's "
                    "retention deletes a message it has not read, at today's production "
                    "(docs/lag.md#retention)."
                ),
            ),
            Panel(
                "Volume used",
                (
                    q(
                        f"broker_log_dir:kafka_broker_log_dir_used:ratio{{{CB}}}",
                        "{{broker}} {{log_dir}}",
                        instant=True,
                    ),
                ),
                kind="bargauge",
                unit="percentunit",
                width=8,
                thresholds=((0.8, "orange"), (0.9, "red")),
            ),
        ),
    )
    load = Row(
        "Partitions and load",
        (
            Panel(
                "Partition replicas per broker",
                (q(f"broker:kafka_broker_partition_replicas:sum{{{CB}}}", "broker {{broker}}"),),
                width=8,
            ),
            Panel(
                "Leader partitions per broker",
                (
                    q(
                        f"max by (broker) (kafka_broker_leader_partitions{{{CB}}})",
                        "broker {{broker}}",
                    ),
                ),
                width=8,
            ),
            Panel(
                "JVM heap used / max",
                (
                    q(
                        f'max by (broker) (jvm_memory_bytes_used{{{CB}, area="heap"}}) / max by '
                        f'(broker) (jvm_memory_bytes_max{{{CB}, area="heap"}})',
                        "broker {{broker}}",
                    ),
                ),
                unit="percentunit",
                width=8,
            ),
            Panel(
                "Throughput trend, user topics (1h rate)",
                (q(f"cluster:kafka_topic_partition_current_offset:rate1h{{{C}}}", "{{cluster}}"),),
                unit="ops",
                width=12,
            ),
            Panel(
                "Messages per day per topic",
                (
                    q(
                        "sum by (topic) (increase(kafka_topic_partition_current_offset"
                        f'{{{C}, topic!~"__.*"}}[1d]))',
                        "{{topic}}",
                    ),
                ),
                width=12,
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
    hops = Row(
        "Hops: HES → Connect → Kafka → store",
        (
            Panel(
                "HES database",
                (q(f"max(vigia_hes_up{{{C}}})", "HES"),),
                kind="stat",
                width=4,
                height=4,
                mappings=UP_DOWN_MAPPINGS,
                description="Whether the exporter could read the HES (`--hes-dsn`).",
            ),
            Panel(
                "HES newest row age",
                (q(f"time() - max(vigia_hes_newest_row_timestamp_seconds{{{C}}})", "age"),),
                kind="stat",
                unit="s",
                width=4,
                height=4,
                thresholds=((1800, "orange"), (2700, "red")),
            ),
            Panel(
                "Connect workers",
                (q(f"min by (connect) (kafka_connect_worker_up{{{C}}})", "{{connect}}"),),
                kind="stat",
                width=4,
                height=4,
                mappings=UP_DOWN_MAPPINGS,
            ),
            Panel(
                "Failed tasks",
                (q(f'sum(kafka_connect_task_state{{{CN}, state="FAILED"}})', "failed"),),
                kind="stat",
                width=4,
                height=4,
                thresholds=((1, "red"),),
                description="A failed task stays failed until restarted through REST.",
            ),
            Panel(
                "HES → Kafka",
                (q(f'max(vigia_pipeline_hop_lag_seconds{{{C}, hop="hes_to_kafka"}})', "behind"),),
                kind="stat",
                unit="s",
                width=4,
                height=4,
                thresholds=((300, "orange"), (900, "red")),
            ),
            Panel(
                "Kafka → store",
                (
                    q(
                        f'max(vigia_pipeline_hop_lag_seconds{{{C}, hop="kafka_to_store"}})',
                        "behind",
                    ),
                ),
                kind="stat",
                unit="s",
                width=4,
                height=4,
                thresholds=((900, "orange"), (3600, "red")),
            ),
            Panel(
                "How far each hop is behind the one before",
                (q(f"max by (hop) (vigia_pipeline_hop_lag_seconds{{{C}}})", "{{hop}}"),),
                unit="s",
                width=12,
            ),
            Panel(
                "Rows per day: HES and stored",
                (
                    q(f"max by (measure_date) (vigia_hes_day_rows{{{C}}})", "HES {{measure_date}}"),
                    q(
                        f"max by (measure_date) (vigia_ingest_day_measures{{{C}}})",
                        "stored {{measure_date}}",
                    ),
                ),
                width=12,
                description="A closed day is complete when both lines meet (HesDayIncomplete).",
            ),
        ),
    )
    connect = Row(
        "Kafka Connect",
        (
            Panel(
                "Task states",
                (
                    q(
                        f"max by (connect, connector, task, state) "
                        f"(kafka_connect_task_state{{{CN}}}) == 1",
                        instant=True,
                    ),
                ),
                kind="table",
                width=12,
                description="Current state of every task (REST, through the exporter).",
            ),
            Panel(
                "Task restarts seen (1h)",
                (
                    q(
                        f"sum by (connector, task) "
                        f"(increase(kafka_connect_task_restarts_seen_total{{{CN}}}[1h]))",
                        "{{connector}}/{{task}}",
                    ),
                ),
                width=12,
            ),
            Panel(
                "Records polled and written per second",
                (
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
                ),
                unit="ops",
                width=12,
                description="Counters restart at every task restart; rate() ignores the drop.",
            ),
            Panel(
                "Offset commit failures",
                (
                    q(
                        "max by (connector, task) "
                        f"(kafka_connect_task_offset_commit_failure_percentage{{{CN}}})",
                        "{{connector}}/{{task}}",
                    ),
                ),
                unit="percentunit",
                width=12,
            ),
        ),
    )
    debezium = Row(
        "Debezium (the worker's JMX agent)",
        (
            Panel(
                "Connected to the HES binlog",
                (q(f"max by (server) (debezium_mysql_connected{{{DBZ}}})", "{{server}}"),),
                width=8,
                mappings=UP_DOWN_MAPPINGS,
                description="No line at all while the task is FAILED: its metrics disappear.",
            ),
            Panel(
                "Time behind source",
                (
                    q(
                        f"max by (server) (debezium_mysql_milli_seconds_behind_source{{{DBZ}}}) "
                        "/ 1000",
                        "{{server}}",
                    ),
                ),
                unit="s",
                width=8,
                description="Frozen at its last value while disconnected.",
            ),
            Panel(
                "Time since last event",
                (
                    q(
                        "max by (server) "
                        f"(debezium_mysql_milli_seconds_since_last_event{{{DBZ}}}) / 1000",
                        "{{server}}",
                    ),
                ),
                unit="s",
                width=8,
            ),
            Panel(
                "Rows streamed per second",
                (
                    q(
                        "sum by (server) (rate(debezium_mysql_total_number_of_create_events_seen"
                        f"{{{DBZ}}}[$__rate_interval]))",
                        "{{server}}",
                    ),
                ),
                unit="ops",
                width=12,
                description="Create events: rows. Debezium's events-seen counts binlog events.",
            ),
            Panel(
                "HES database load (mysqld_exporter)",
                (
                    q(
                        f"sum(rate(mysql_global_status_queries{{{C}}}[$__rate_interval]))",
                        "queries/s",
                    ),
                    q(f"max(mysql_global_status_threads_connected{{{C}}})", "connections"),
                ),
                width=12,
                description="CDC reads the binlog: it adds one connection, not polling queries.",
            ),
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


def _thresholds(steps: tuple[tuple[float, str], ...]) -> dict[str, Any]:
    return {
        "mode": "absolute",
        "steps": [{"color": "green", "value": None}]
        + [{"color": colour, "value": value} for value, colour in steps],
    }


def _target(query: Query, ref: str, kind: str) -> dict[str, Any]:
    target: dict[str, Any] = {
        "datasource": DATASOURCE,
        "refId": ref,
        "expr": query.expr,
        "legendFormat": query.legend or "__auto",
        "range": not query.instant,
        "instant": query.instant,
    }
    if kind == "table":
        target["format"] = "table"
    return target


def _panel(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    custom: dict[str, Any] = {}
    if panel.kind == "timeseries":
        custom = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 10 if panel.stack else 0,
            "showPoints": "never",
            "spanNulls": False,
            "stacking": {"mode": "normal" if panel.stack else "none", "group": "A"},
        }
    options: dict[str, Any] = {}
    if panel.kind == "timeseries":
        options = {
            "legend": {
                "displayMode": "table",
                "placement": "bottom",
                "calcs": ["lastNotNull", "max"],
            },
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    elif panel.kind in ("stat", "bargauge"):
        options = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "horizontal" if panel.kind == "bargauge" else "auto",
        }
        if panel.kind == "stat":
            options["colorMode"] = "value"
            options["textMode"] = "name" if panel.title == "Active controller" else "value_and_name"
    elif panel.kind == "table":
        options = {"showHeader": True}
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
        "fieldConfig": {
            "defaults": {
                "unit": panel.unit,
                "custom": custom,
                "mappings": panel.mappings,
                "thresholds": _thresholds(panel.thresholds),
                "color": {"mode": "thresholds" if panel.thresholds else "palette-classic"},
            },
            "overrides": [],
        },
        "options": options,
        "targets": [
            _target(query, chr(ord("A") + i), panel.kind) for i, query in enumerate(panel.queries)
        ],
        "transformations": panel.transformations,
    }


def _variable(var: Variable) -> dict[str, Any]:
    return {
        "name": var.name,
        "label": var.label,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": var.query, "refId": f"{var.name}-values"},
        "definition": var.query,
        "refresh": 2,
        "sort": 1,
        "multi": var.multi,
        "includeAll": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "hide": 0,
    }


def render(board: Board) -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    panel_id, y = 1, 0
    for row in board.rows:
        panels.append(
            {
                "id": panel_id,
                "type": "row",
                "title": row.title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": y},
                "panels": [],
            }
        )
        panel_id, y = panel_id + 1, y + 1
        x, line_height = 0, 0
        for panel in row.panels:
            if x + panel.width > GRID_WIDTH:
                x, y, line_height = 0, y + line_height, 0
            panels.append(_panel(panel, panel_id, x, y))
            panel_id += 1
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return {
        "uid": board.uid,
        "title": board.title,
        "description": board.description,
        "tags": ["vigia", "kafka"],
        "timezone": "browser",
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "links": [
            {
                "type": "dashboards",
                "tags": ["vigia"],
                "asDropdown": False,
                "includeVars": True,
                "keepTime": True,
                "title": "Vigía boards",
            }
        ],
        "annotations": {"list": []},
        "templating": {"list": [_variable(v) for v in board.variables]},
        "panels": panels,
    }


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
