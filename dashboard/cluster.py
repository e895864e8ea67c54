"""The exporter's /api/v1/cluster JSON (docs/api.md) as typed, read-only objects.

Parsing is lenient: fields that later exporter work fills (lag seconds, status, out-of-sync time)
may be null or missing and become None, so the dashboard shows "no data" rather than failing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

# `type(v) in` rather than isinstance: it is faster (1,000 partitions are parsed on every refresh)
# and rejects bools, which JSON decoding never mixes with numbers anyway.
_NUMBER = (int, float)


def _int(value: Any) -> int | None:
    return int(value) if type(value) in _NUMBER else None


def _float(value: Any) -> float | None:
    return float(value) if type(value) in _NUMBER else None


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(map(int, values or ()))


def _per_broker(mapping: Any) -> dict[int, float | None]:
    # JSON numbers or nulls already; checking each of the ~6 values per partition costs more
    # than everything else in parsing
    return {int(k): v for k, v in (mapping or {}).items()}


@dataclass(frozen=True)
class LogDir:
    broker: int
    path: str
    error: str | None
    size_bytes: int | None
    total_bytes: int | None
    usable_bytes: int | None


@dataclass(frozen=True)
class Broker:
    id: int
    host: str | None
    port: int | None
    rack: str | None
    is_controller: bool
    leader_partitions: int
    follower_partitions: int
    preferred_leader_partitions: int
    log_dirs_error: str | None
    log_dirs: tuple[LogDir, ...]
    up: bool  # False for brokers that hold replicas but are missing from the metadata


class Partition(NamedTuple):
    # NamedTuple rather than a frozen dataclass: ~3× cheaper to build, and there are thousands.
    topic: str
    partition: int
    leader: int | None  # None when offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    earliest_offset: int | None
    latest_offset: int | None
    under_replicated: bool
    under_min_isr: bool
    offline: bool
    leader_is_preferred: bool
    replica_size_bytes: Mapping[int, float | None]
    out_of_sync_seconds: Mapping[int, float | None]

    @property
    def size_bytes(self) -> int | None:
        """Logical size: the leader replica's size, else the largest replica's."""
        sizes = self.replica_size_bytes
        if self.leader is not None and sizes.get(self.leader) is not None:
            return int(sizes[self.leader] or 0)
        known = [v for v in sizes.values() if v is not None]
        return int(max(known)) if known else None

    @property
    def out_of_sync(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.isr)

    @property
    def messages(self) -> int | None:
        if self.earliest_offset is None or self.latest_offset is None:
            return None
        return self.latest_offset - self.earliest_offset


@dataclass(frozen=True)
class Topic:
    name: str
    internal: bool
    min_insync_replicas: int | None
    size_bytes: int | None
    leader_size_bytes: int | None
    messages_in_per_second: float | None
    retention_ms: int | None  # None when Kafka deletes nothing by age (or unknown)
    partitions: tuple[Partition, ...]
    # How long a consumer that stopped now could stay stopped before losing a record, and the
    # limit that binds (docs/lag.md#retention); None for topics without deletion by retention.
    outage_budget_seconds: float | None = None
    outage_budget_limit: str | None = None

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True)
class GroupTopic:
    topic: str
    lag: int | None
    committed_offset_sum: int | None
    max_lag_seconds: float | None
    messages_consumed_per_second: float | None
    # Seconds until retention may delete the oldest unread record (docs/lag.md#retention); None
    # for topics Kafka deletes nothing from by retention, or while unknown.
    retention_margin_seconds: float | None = None
    retention_at_risk: bool | None = None


class GroupPartition(NamedTuple):
    topic: str
    partition: int
    committed_offset: int | None
    latest_offset: int | None
    lag: int | None
    lag_seconds: float | None
    status: str | None
    status_window_complete: bool | None
    status_window_completeness: float | None  # share of the window observed (exporter extra)


@dataclass(frozen=True)
class Group:
    group_id: str
    state: str | None
    type: str | None
    protocol: str | None
    coordinator: int | None
    status: str | None
    member_count: int | None  # None when the members are unknown (no DescribeGroups)
    client_ids: tuple[str, ...]
    topics: tuple[GroupTopic, ...]
    partitions: tuple[GroupPartition, ...]

    @property
    def lag(self) -> int | None:
        lags = [t.lag for t in self.topics if t.lag is not None]
        return sum(lags) if lags else None

    @property
    def max_lag_seconds(self) -> float | None:
        values = [t.max_lag_seconds for t in self.topics if t.max_lag_seconds is not None]
        return max(values) if values else None

    @property
    def retention_margin_seconds(self) -> float | None:
        values = [t.retention_margin_seconds for t in self.topics]
        return min((v for v in values if v is not None), default=None)

    @property
    def retention_at_risk(self) -> bool:
        return any(t.retention_at_risk for t in self.topics)


@dataclass(frozen=True)
class BrokerTopicRate:
    broker: int
    topic: str
    messages_in_per_second: float | None


@dataclass(frozen=True)
class Cluster:
    collected_at: float | None
    collection_duration_seconds: float | None
    up: bool
    errors: tuple[str, ...]
    cluster_id: str | None
    controller_id: int | None
    controller_source: str | None
    brokers: tuple[Broker, ...]  # metadata brokers plus brokers holding replicas but offline
    topics: tuple[Topic, ...]
    broker_topic_rates: tuple[BrokerTopicRate, ...]
    groups: tuple[Group, ...]
    # Optional APIs the exporter found the cluster answers (True) or lacks (False); absent: unknown.
    capabilities: Mapping[str, bool] = field(default_factory=dict)
    name: str | None = None  # the exporter's --cluster, when it reports one

    def lacks(self, capability: str) -> bool:
        """True when the cluster said it does not support this API (docs/metrics.md)."""
        return self.capabilities.get(capability) is False

    @cached_property
    def partitions(self) -> tuple[Partition, ...]:
        return tuple(p for t in self.topics for p in t.partitions)

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers)

    @property
    def down_broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers if not b.up)


def _log_dir(broker: int, raw: Mapping[str, Any]) -> LogDir:
    return LogDir(
        broker=broker,
        path=str(raw.get("path", "")),
        error=raw.get("error"),
        size_bytes=_int(raw.get("size_bytes")),
        total_bytes=_int(raw.get("total_bytes")),
        usable_bytes=_int(raw.get("usable_bytes")),
    )


def _partition(topic: str, raw: Mapping[str, Any]) -> Partition:
    leader = _int(raw.get("leader"))
    replicas = _ints(raw.get("replicas"))
    isr = _ints(raw.get("isr"))
    return Partition(
        topic=topic,
        partition=int(raw["partition"]),
        leader=leader if leader is not None and leader >= 0 else None,
        replicas=replicas,
        isr=isr,
        offline_replicas=_ints(raw.get("offline_replicas")),
        earliest_offset=_int(raw.get("earliest_offset")),
        latest_offset=_int(raw.get("latest_offset")),
        under_replicated=bool(raw.get("under_replicated", len(isr) < len(replicas))),
        under_min_isr=bool(raw.get("under_min_isr", False)),
        offline=bool(raw.get("offline", leader is None or leader < 0)),
        leader_is_preferred=bool(
            raw.get("leader_is_preferred", bool(replicas) and replicas[0] == leader)
        ),
        replica_size_bytes=_per_broker(raw.get("replica_size_bytes")),
        out_of_sync_seconds=_per_broker(raw.get("out_of_sync_seconds")),
    )


def _topic(raw: Mapping[str, Any]) -> Topic:
    name = str(raw["name"])
    retention = (raw.get("retention") or {}).get("ms")
    try:
        retention_ms = int(retention) if retention is not None else None
    except (TypeError, ValueError):
        retention_ms = None
    budget = raw.get("outage_budget") or {}
    return Topic(
        name=name,
        internal=bool(raw.get("internal", False)),
        min_insync_replicas=_int(raw.get("min_insync_replicas")),
        size_bytes=_int(raw.get("size_bytes")),
        leader_size_bytes=_int(raw.get("leader_size_bytes")),
        messages_in_per_second=_float(raw.get("messages_in_per_second")),
        retention_ms=retention_ms if retention_ms is None or retention_ms > 0 else None,
        partitions=tuple(_partition(name, p) for p in raw.get("partitions", ())),
        outage_budget_seconds=_float(budget.get("seconds")),
        outage_budget_limit=budget.get("limit"),
    )


def _group(raw: Mapping[str, Any]) -> Group:
    members = raw.get("members") or ()
    return Group(
        group_id=str(raw["group_id"]),
        state=raw.get("state"),
        type=raw.get("type"),
        protocol=raw.get("protocol"),
        coordinator=_int(raw.get("coordinator")),
        status=raw.get("status"),
        member_count=None if raw.get("members") is None else len(members),
        client_ids=tuple(str(m.get("client_id", "")) for m in members),
        topics=tuple(
            GroupTopic(
                topic=str(t["topic"]),
                lag=_int(t.get("lag")),
                committed_offset_sum=_int(t.get("committed_offset_sum")),
                max_lag_seconds=_float(t.get("max_lag_seconds")),
                messages_consumed_per_second=_float(t.get("messages_consumed_per_second")),
                retention_margin_seconds=_float((t.get("retention_margin") or {}).get("seconds")),
                retention_at_risk=t.get("retention_at_risk"),
            )
            for t in raw.get("topics") or ()
        ),
        partitions=tuple(
            GroupPartition(
                topic=str(p["topic"]),
                partition=int(p["partition"]),
                committed_offset=_int(p.get("committed_offset")),
                latest_offset=_int(p.get("latest_offset")),
                lag=_int(p.get("lag")),
                lag_seconds=_float(p.get("lag_seconds")),
                status=p.get("status"),
                status_window_complete=p.get("status_window_complete"),
                status_window_completeness=_float(p.get("status_window_completeness")),
            )
            for p in raw.get("partitions") or ()
        ),
    )


def _broker(raw: Mapping[str, Any]) -> Broker:
    broker_id = int(raw["id"])
    return Broker(
        id=broker_id,
        host=raw.get("host"),
        port=_int(raw.get("port")),
        rack=raw.get("rack"),
        is_controller=bool(raw.get("is_controller", False)),
        leader_partitions=_int(raw.get("leader_partitions")) or 0,
        follower_partitions=_int(raw.get("follower_partitions")) or 0,
        preferred_leader_partitions=_int(raw.get("preferred_leader_partitions")) or 0,
        log_dirs_error=raw.get("log_dirs_error"),
        log_dirs=tuple(_log_dir(broker_id, d) for d in raw.get("log_dirs") or ()),
        up=bool(raw.get("online", True)),
    )


def _error_text(raw: Any) -> str:
    if isinstance(raw, Mapping):
        phase = raw.get("phase")
        return f"{phase}: {raw.get('message', '')}" if phase else str(raw.get("message", raw))
    return str(raw)


def parse_cluster(raw: Mapping[str, Any]) -> Cluster:
    """Typed view of /api/v1/cluster. Brokers named only in replica lists are added as down."""
    topics = tuple(_topic(t) for t in raw.get("topics") or ())
    brokers = {b.id: b for b in (_broker(r) for r in raw.get("brokers") or ())}
    replica_ids: set[int] = {r for t in topics for p in t.partitions for r in p.replicas}
    for missing in sorted(replica_ids - brokers.keys()):
        brokers[missing] = Broker(missing, None, None, None, False, 0, 0, 0, None, (), up=False)
    info = raw.get("cluster") or {}
    controller = _int(info.get("controller_id"))
    return Cluster(
        collected_at=_float(raw.get("collected_at")),
        collection_duration_seconds=_float(raw.get("collection_duration_seconds")),
        up=bool(raw.get("up", False)),
        errors=tuple(_error_text(e) for e in raw.get("errors") or ()),
        cluster_id=info.get("cluster_id"),
        controller_id=controller if controller is not None and controller >= 0 else None,
        controller_source=info.get("controller_source"),
        brokers=tuple(brokers[i] for i in sorted(brokers)),
        topics=topics,
        broker_topic_rates=tuple(
            BrokerTopicRate(
                broker=int(r["broker"]),
                topic=str(r["topic"]),
                messages_in_per_second=_float(r.get("messages_in_per_second")),
            )
            for r in raw.get("broker_topic_rates") or ()
        ),
        groups=tuple(_group(g) for g in raw.get("groups") or ()),
        capabilities={str(k): bool(v) for k, v in (raw.get("capabilities") or {}).items()},
        name=info.get("name"),
    )


def filter_topics(topics: Sequence[Topic], selected: Sequence[str]) -> tuple[Topic, ...]:
    """The selected topics, or all of them when nothing is selected."""
    if not selected:
        return tuple(topics)
    wanted = set(selected)
    return tuple(t for t in topics if t.name in wanted)
