"""The "Vigía / Consumers" board, row by row."""

from __future__ import annotations

from generator.labels import CG, CGT, CLUSTER_VAR, CT, GROUP_VAR, TOPIC_VAR
from generator.panels import Board, q, row, stat, table, timeseries, value_texts

STATUS_MAPPINGS = value_texts((1, "OK", "green"), (2, "WARN", "yellow"), (3, "ERR", "red"))
PARTITION_STATUS_MAPPINGS = value_texts(
    (1, "OK", "green"),
    (2, "WARN", "yellow"),
    (3, "STOP", "red"),
    (4, "STALL", "red"),
    (5, "REWIND", "orange"),
)


FLOW = row(
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


LAG = row(
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
    # Per partition with --group-offsets-granularity=partition, else per topic.
    timeseries(
        "Lag per partition or topic (messages)",
        q(
            "max by (consumergroup, topic, partition) "
            f"(kafka_consumergroup_lag{{{CGT}}}) or on (consumergroup, topic) "
            f"max by (consumergroup, topic) (kafka_consumergroup_lag_sum{{{CGT}}})",
            "{{consumergroup}} {{topic}} {{partition}}",
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


STATUS = row(
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


BOARD = Board(
    uid="vigia-consumers",
    title="Vigía / Consumers",
    description="Produced vs consumed per group and topic, lag (messages, seconds), status.",
    variables=(CLUSTER_VAR, GROUP_VAR, TOPIC_VAR),
    rows=(FLOW, LAG, STATUS),
)
