"""The typed result of one collection: what the Kafka adapter (or a recording) saw, nothing derived.

Everything after this point (state, metrics, JSON) is pure and works from these dataclasses only.
Lists are tuples sorted the way docs/api.md sorts them, so two snapshots of the same cluster compare
equal and the JSON is stable.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from vigia.common.kafka_errors import ACCESS_KINDS, AUTHORIZATION, kind_of

# Collection phases, in the order the adapter runs them. Each one fails on its own: its data is
# missing from the snapshot and its error is listed in `ClusterSnapshot.errors`.
PHASES = ("metadata", "cluster", "configs", "offsets", "log_dirs", "groups", "group_offsets")
# A collection that did not finish within its timeout is reported under this phase.
COLLECTION_PHASE = "collection"
PERMISSION_PHASES = frozenset({"groups", "group_offsets"})
GROUP_COORDINATOR_PHASE = "group_coordinator"
"""Groups whose coordinator is moving (a broker stopped or came back): their description or
offsets are missing from one collection, which still succeeds (see `ClusterSnapshot.ok`)."""
"""Phases whose authorization failures do not make a collection fail (see `ClusterSnapshot.ok`)."""

# Optional Kafka APIs: a cluster that does not support one (librdkafka's mock, some managed
# Kafka-compatible services) is reported as lacking that capability, not as a failed phase.
CAPABILITIES = (
    "describe_cluster",  # racks
    "describe_quorum",  # the KRaft quorum leader (the real controller), voters
    "describe_configs",  # min.insync.replicas, topic configs
    "describe_log_dirs",  # sizes
    "list_groups",  # which consumer groups exist
    "describe_groups",  # group state, members, assignments
)

ControllerSource = Literal["quorum", "describe_cluster", "metadata"]


def _no_configs() -> Mapping[str, str]:
    return MappingProxyType({})


def _no_durations() -> Mapping[str, float]:
    return MappingProxyType({})


def _no_capabilities() -> Mapping[str, bool]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class Partition:
    partition: int
    leader: int  # -1 when the partition has no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    earliest_offset: int | None = None  # None when the offsets phase failed for this partition
    latest_offset: int | None = None  # high watermark


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    internal: bool
    partitions: tuple[Partition, ...]
    # DescribeConfigs values as strings, as Kafka returns them; empty when that phase failed.
    configs: Mapping[str, str] = field(default_factory=_no_configs)


@dataclass(frozen=True, slots=True)
class LogDirPartition:
    topic: str
    partition: int
    size_bytes: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDir:
    path: str
    error: str | None
    total_bytes: int | None
    usable_bytes: int | None
    partitions: tuple[LogDirPartition, ...]


@dataclass(frozen=True, slots=True)
class BrokerLogDirs:
    broker: int
    error: str | None  # the whole DescribeLogDirs call to this broker failed
    log_dirs: tuple[LogDir, ...]


@dataclass(frozen=True, slots=True)
class TopicPartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartitionRef, ...]


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class ConsumerGroup:
    group_id: str
    # None when DescribeConsumerGroups failed for this group (committed offsets may still be known).
    state: str | None
    type: str | None
    protocol: str | None
    coordinator: int | None
    members: tuple[GroupMember, ...] | None
    # None when the committed offsets could not be read; only offsets >= 0 otherwise.
    committed: tuple[CommittedOffset, ...] | None
    # The PERMISSION_PHASES whose call an ACL refused for this group (its fields above are then
    # None), in PHASES order; empty when the exporter may see it.
    denied: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RecordTime:
    """The first record read at or after a committed `offset` (exporter/model/record_time.py)."""

    topic: str
    partition: int
    offset: int  # the committed offset asked for
    record_offset: int  # ≥ offset: records before it are control markers, aborted or compacted
    timestamp_ms: int | None  # None when the record carries no timestamp (-1)


@dataclass(frozen=True, slots=True)
class QuorumReplica:
    id: int
    log_end_offset: int | None
    last_fetch_timestamp_ms: int | None
    last_caught_up_timestamp_ms: int | None


@dataclass(frozen=True, slots=True)
class Quorum:
    leader_id: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]


@dataclass(frozen=True, slots=True)
class PhaseError:
    phase: str
    message: str


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    collected_at: float  # unix seconds, taken before the first call
    cluster_id: str | None
    controller_id: int | None
    controller_source: ControllerSource | None
    brokers: tuple[Broker, ...]
    topics: tuple[Topic, ...]
    log_dirs: tuple[BrokerLogDirs, ...]
    groups: tuple[ConsumerGroup, ...]
    quorum: Quorum | None = None
    # Broker-wide min.insync.replicas, for topics whose own value is unknown.
    broker_min_insync_replicas: int | None = None
    errors: tuple[PhaseError, ...] = ()
    # Seconds per phase plus "total"; empty for recordings, which carry no timings.
    durations: Mapping[str, float] = field(default_factory=_no_durations)
    # Records read at committed offsets by the record-times step (not a phase: reading fewer
    # falls back to the offset history, docs/lag.md); empty for recordings that have none.
    record_times: tuple[RecordTime, ...] = ()
    # Capability -> True (the cluster answered it) or False (it said it does not support it);
    # absent while unknown. A capability that is off leaves its families out without an error.
    capabilities: Mapping[str, bool] = field(default_factory=_no_capabilities)
    # (topic, partition) whose leader still answered, at the collection's deadline, that the
    # leadership or its epoch is moving (UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER…): a broker
    # behind on the cluster's metadata while leaders move, which this collection's metadata, read
    # before the move, may not show.
    leaders_moving: frozenset[tuple[str, int]] = frozenset()

    @property
    def failed_phases(self) -> frozenset[str]:
        return frozenset(e.phase for e in self.errors)

    @property
    def broker_failures(self) -> dict[tuple[int, str], str]:
        """(broker, phase) -> error, for the per-broker answers that could not be had."""
        return {(b.broker, "log_dirs"): b.error for b in self.log_dirs if b.error is not None}

    @property
    def has_metadata(self) -> bool:
        """Brokers and topics were read (an empty list then really means none)."""
        return not self.failed_phases & {"metadata", COLLECTION_PHASE}

    @property
    def ok(self) -> bool:
        """Every phase succeeded, but for groups the exporter is not authorized to see: those are
        facts about its permissions (listed in `errors`), not a failure to do its job."""
        return all(_excused(e) for e in self.errors)

    @property
    def ok_but_for_moving_brokers(self) -> bool:
        """`ok`, or every other error is of the kind a broker that stops, is away or comes back
        causes elsewhere in the collection: a request that waited for it until the deadline, a
        leader or coordinator moving off or back onto it. Never an access error."""
        return self.has_metadata and all(
            _excused(e)
            or (kind_of(e.message) not in ACCESS_KINDS and _BROKER_MOTION.search(e.message))
            for e in self.errors
        )


# "Broker handle destroyed": librdkafka retired the handle of a broker that left the metadata and
# failed the requests queued on it (_DESTROY_BROKER). "Broker transport failure" (_TRANSPORT): the
# connection to a broker in its controlled shutdown closed under a request (a real cluster's
# rolling restart, one collection before the broker left the metadata).
_BROKER_MOTION = re.compile(
    r"timed?[ _]?out|not ?ready|connection|coordinator|leader|broker handle destroyed"
    r"|broker transport failure",
    re.I,
)


def _excused(error: PhaseError) -> bool:
    return (
        error.phase in PERMISSION_PHASES and kind_of(error.message) == AUTHORIZATION
    ) or error.phase == GROUP_COORDINATOR_PHASE


def min_insync_replicas(topic: Topic, broker_default: int | None) -> int | None:
    """The topic's own min.insync.replicas, else the broker-wide default, else unknown."""
    value = topic.configs.get("min.insync.replicas")
    if value is not None:
        try:
            return int(value)
        except ValueError:
            pass
    return broker_default


def resolve_controller(
    quorum: Quorum | None,
    reported_id: int | None,
    reported_source: ControllerSource,
    brokers: Collection[int],
) -> tuple[int | None, ControllerSource | None]:
    """The KRaft quorum leader when known: brokers report a random live broker as "controller"
    in DescribeCluster/Metadata under KRaft (fixtures README, gotcha 1). A reported controller
    that is none of the `brokers` is no answer: Kafka reports a live broker or -1, but clusters
    without a controller fill in 0 (librdkafka's mock cluster, whose brokers are 1..n)."""
    if quorum is not None and quorum.leader_id >= 0:
        return quorum.leader_id, "quorum"
    if reported_id is not None and reported_id in brokers:
        return reported_id, reported_source
    return None, None


def empty_snapshot(collected_at: float, errors: tuple[PhaseError, ...]) -> ClusterSnapshot:
    """A collection that produced no cluster data at all (e.g. it timed out)."""
    return ClusterSnapshot(
        collected_at=collected_at,
        cluster_id=None,
        controller_id=None,
        controller_source=None,
        brokers=(),
        topics=(),
        log_dirs=(),
        groups=(),
        errors=errors,
    )
