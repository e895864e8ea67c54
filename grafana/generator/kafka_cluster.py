"""The "Vigía / Kafka cluster" board, row by row."""

from __future__ import annotations

from generator.labels import BROKER_VAR, CB, CBT, CLUSTER_VAR, CT, TOPIC_VAR, C
from generator.panels import Board, q, row, stat, table, timeseries, value_texts

OVERVIEW = row(
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


PARTITIONS = row(
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


REPLICATION = row(
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


RESOURCES = row(
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
            f"sum by (broker, gc) (rate(jvm_gc_collection_seconds_sum{{{CB}}}[$__rate_interval]))",
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
            f"max by (broker) (kafka_network_socketserver_networkprocessoravgidle_percent{{{CB}}})",
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


DISK = row(
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


EXPORTER = row(
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


BOARD = Board(
    uid="vigia-kafka-cluster",
    title="Vigía / Kafka cluster",
    description="Brokers, controller, partition leadership, replication, broker JVMs, disk.",
    variables=(CLUSTER_VAR, BROKER_VAR, TOPIC_VAR),
    rows=(OVERVIEW, PARTITIONS, REPLICATION, RESOURCES, DISK, EXPORTER),
)
