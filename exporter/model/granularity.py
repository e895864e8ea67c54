"""The series budget: at which granularity each family group is served (docs/metrics.md,
"Series budget"). Modelled on kminion's granularity settings.

Topic-level families (counts, sums, maxima per topic or per group and topic) are always served, so
alerts, recording rules and boards that read them work at every setting; these settings only add
or remove the per-partition and per-replica detail. /api/v1/cluster always keeps full detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Level(StrEnum):
    PARTITION = "partition"  # one series per partition (or group-partition): the detail
    TOPIC = "topic"  # only the per-topic (or per group and topic) families


class Replicas(StrEnum):
    ALL = "all"  # one series per replica
    OUT_OF_SYNC = "out-of-sync"  # only replicas outside their partition's ISR
    OFF = "off"  # none


@dataclass(frozen=True, slots=True)
class Granularity:
    """Defaults serve no more series than kafka_exporter on the same cluster, per group too
    (docs/metrics.md, "Series budget")."""

    # kafka_topic_partition_current_offset, kafka_topic_partition_oldest_offset
    topic_offsets: Level = Level.PARTITION
    # kafka_topic_partition_{leader,replicas,in_sync_replica,leader_is_preferred,
    # under_replicated_partition,under_min_isr,offline}
    partition_state: Level = Level.TOPIC
    # kafka_consumergroup_current_offset, kafka_consumergroup_lag: kafka_exporter's 2 series per
    # group-partition, on request. At `partition`, a group on one 6-partition topic costs 12 of
    # them beside the 15 per-topic and per-group series the alerts and boards read, against
    # kafka_exporter's 15 in all (issue 24).
    group_offsets: Level = Level.TOPIC
    # kafka_consumergroup_lag_seconds, kafka_consumergroup_partition_status
    group_lag: Level = Level.TOPIC
    # kafka_partition_replica_{in_sync,size_bytes,out_of_sync_seconds}
    replicas: Replicas = Replicas.OUT_OF_SYNC


DEFAULT = Granularity()
# Every series the exporter can serve: what the tests that check per-partition values read.
FULL = Granularity(
    topic_offsets=Level.PARTITION,
    partition_state=Level.PARTITION,
    group_offsets=Level.PARTITION,
    group_lag=Level.PARTITION,
    replicas=Replicas.ALL,
)
