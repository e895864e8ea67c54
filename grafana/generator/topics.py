"""The "Vigía / Topics" board, row by row."""

from __future__ import annotations

from generator.labels import BROKER_VAR, CBT, CLUSTER_VAR, CT, TOPIC_VAR
from generator.panels import Board, bargauge, q, row, table, timeseries

RATES = row(
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


SIZES = row(
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


LAYOUT = row(
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


BOARD = Board(
    uid="vigia-topics",
    title="Vigía / Topics",
    description="Messages per second per topic and per broker, sizes, retained messages.",
    variables=(CLUSTER_VAR, TOPIC_VAR, BROKER_VAR),
    rows=(RATES, SIZES, LAYOUT),
)
