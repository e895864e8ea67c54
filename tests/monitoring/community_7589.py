"""The queries of Grafana's community board 7589 "Kafka Exporter Overview" (made for
danielqsj/kafka_exporter), as published on grafana.com (uid jwPKIsniz); read from a provisioned
copy, the public file jdc-projects/homelab terraform/posthog/dashboards/kafka-exporter.json
("gnetId": 7589). Only the queries are kept: they must work unchanged against Vigía's exporter."""

from __future__ import annotations

# Template variables, in the order Grafana resolves them.
VARIABLES = {
    "job": "label_values(kafka_consumergroup_current_offset, job)",
    "instance": 'label_values(kafka_consumergroup_current_offset{job=~"$job"}, instance)',
    "topic": "label_values(kafka_topic_partition_current_offset{instance='$instance',"
    "topic!='__consumer_offsets',topic!='--kafka'}, topic)",
}

# Panel title -> query.
QUERIES = {
    "Message in per second": 'sum(rate(kafka_topic_partition_current_offset{instance="$instance", '
    'topic=~"$topic"}[1m])) by (topic)',
    "Lag by  Consumer Group": 'sum(kafka_consumergroup_lag{instance="$instance",topic=~"$topic"}) '
    "by (consumergroup, topic) ",
    "Message in per minute": "sum(delta(kafka_topic_partition_current_offset"
    "{instance=~'$instance', "
    'topic=~"$topic"}[5m])/5) by (topic)',
    "Message consume per minute": "sum(delta(kafka_consumergroup_current_offset"
    "{instance=~'$instance',"
    'topic=~"$topic"}[5m])/5) by (consumergroup, topic)',
    "Partitions per Topic": 'sum by(topic) (kafka_topic_partitions{instance="$instance",'
    'topic=~"$topic"})',
}
