"""The label filters every query carries, and the board variables that fill them in."""

from __future__ import annotations

from dataclasses import dataclass

# `$topic` etc. are multi-value variables whose "All" is `.*`.
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


@dataclass(frozen=True)
class Variable:
    name: str
    label: str
    query: str  # label_values(...)


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
