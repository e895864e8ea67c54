"""The "Vigía / Capacity" board, row by row."""

from __future__ import annotations

from generator.labels import BROKER_VAR, CB, CLUSTER_VAR, C
from generator.panels import Board, bargauge, q, row, stat, timeseries
from generator.promises import SLOS, budget_spent, compliance

DISK = row(
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


LEG = row(
    "The leg's outage budget: how long each reader may stay down",
    bargauge(
        "Outage budget per hop",
        q(f"min(vigia_hes_binlog_expire_seconds{{{C}}})", "Connect (HES binlog)"),
        q(
            f'min(kafka_topic_outage_budget_seconds{{{C}, topic="measure"}})',
            "ingest job (Kafka measure)",
        ),
        unit="s",
        width=12,
        description=(
            "How long Connect, and the ingest job, may stay down, starting caught up, at today's "
            "write rate before a measure is lost: the HES's binlog expiry (a lower bound: a file "
            "expires that long after it is closed), and topic measure's outage budget "
            "(retention.ms, or the first partition to fill retention.bytes). The Capacity page "
            "of the Dash app gives the settings a target budget needs."
        ),
    ),
    stat(
        "Binlog written per day",
        q(f"max(rate(vigia_hes_binlog_written_bytes_total{{{C}}}[1h])) * 86400", "binlog"),
        unit="bytes",
        width=6,
        description=(
            "Each day of binlog_expire_logs_seconds costs this much disk on the HES, at today's "
            "write rate."
        ),
    ),
    stat(
        "measure written per day",
        q(f'sum(kafka_topic_messages_in_per_second{{{C}, topic="measure"}}) * 86400', "messages"),
        width=6,
        description=(
            "Messages a day of retention.ms keeps (× bytes per message × replication factor: "
            "the disk it costs on the brokers)."
        ),
    ),
)

LOAD = row(
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


# The capacity review's SLO month at a glance; the detail is on the Promises board.
PROMISES = row(
    "Promises (SLOs)",
    *(p for slo in SLOS for p in (compliance(slo), budget_spent(slo))),
)


BOARD = Board(
    uid="vigia-capacity",
    title="Vigía / Capacity",
    description=(
        "The SLOs' window at a glance, disk growth and days to full, partitions per broker, "
        "throughput trend."
    ),
    variables=(CLUSTER_VAR, BROKER_VAR),
    rows=(PROMISES, DISK, LEG, LOAD),
)
