"""Fake admin clients that answer like confluent-kafka and kafka-python from a `ClusterSnapshot`.

They return the client libraries' own result types (futures, TopicPartition, ConfigEntry,
ConsumerGroupDescription, ...), count every call, and can fail or hang per call, so the adapter
can be tested against a recorded cluster, with faults, without a broker.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    Node,
    TopicPartition,
)
from confluent_kafka.admin import (
    BrokerMetadata,
    ClusterMetadata,
    ConfigEntry,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ListConsumerGroupsResult,
    ListOffsetsResultInfo,
    MemberAssignment,
    MemberDescription,
    PartitionMetadata,
    ResourceType,
    TopicMetadata,
)
from kafka import errors as kafka_errors
from kafka.protocol.metadata import CoordinatorType
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTopicPartition

from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters
from vigia.exporter.model.snapshot import ClusterSnapshot


def done(value: Any) -> Future[Any]:
    f: Future[Any] = Future()
    f.set_result(value)
    return f


def failed(exc: BaseException) -> Future[Any]:
    f: Future[Any] = Future()
    f.set_exception(exc)
    return f


def kafka_exception(code: int, message: str) -> KafkaException:
    return KafkaException(KafkaError(code, message))


@dataclass
class Faults:
    """What to break. Offsets/describe faults are keyed by what they affect."""

    metadata: BaseException | None = None
    log_dirs_brokers: Mapping[int, BaseException] = field(default_factory=dict)
    offsets_leader_down: int | None = None  # partitions led by this broker fail ListOffsets
    # Partitions led by this broker answer UNKNOWN_LEADER_EPOCH: it is behind on the metadata.
    offsets_leader_behind: int | None = None
    describe_groups: BaseException | None = None
    describe_groups_spared: frozenset[str] = frozenset()  # groups the describe_groups fault spares
    list_groups: BaseException | None = None
    hang: set[str] = field(default_factory=set)  # method names whose futures never complete
    legacy_bootstrap: BaseException | None = None
    legacy_bootstrap_seconds: float = 0.0  # how long kafka-python takes to connect
    # Method names the cluster does not support, answered the way each client reports it.
    unsupported: set[str] = field(default_factory=set)
    slow_log_dirs_brokers: set[int] = field(default_factory=set)  # answer once `released` is set
    cut_broker_configs: set[int] = field(default_factory=set)  # connection closed under the request


def unsupported_feature() -> KafkaException:
    """What librdkafka answers when the broker's ApiVersions lack the API (as the mock does)."""
    return kafka_exception(KafkaError._UNSUPPORTED_FEATURE, "Required feature not supported")


class FakeCluster:
    """Both fake clients over one (mutable) snapshot; `calls` counts every admin call."""

    def __init__(self, snapshot: ClusterSnapshot, faults: Faults | None = None) -> None:
        self.snapshot = snapshot
        self.faults = faults or Faults()
        self.calls: Counter[str] = Counter()
        self.released = threading.Event()  # set it to let hung calls finish
        # ListGroups answers each group's state and type, as ListGroups v5 does (else UNKNOWN,
        # as librdkafka's mock cluster does).
        self.listed_states = False

    # -- adapter wiring ----------------------------------------------------------------------

    def adapter(
        self, filters: Filters | None = None, slow_phase_interval: float = 0.0
    ) -> KafkaAdapter:
        return KafkaAdapter(
            "fake:9092",
            {},
            filters or Filters(),
            admin_factory=lambda config: FakeAdmin(self),
            legacy_admin_factory=self._legacy,
            slow_phase_interval=slow_phase_interval,
        )

    def _legacy(self, config: Mapping[str, Any]) -> FakeLegacyAdmin:
        self.calls["kafka_python_bootstrap"] += 1
        time.sleep(self.faults.legacy_bootstrap_seconds)
        if self.faults.legacy_bootstrap is not None:
            raise self.faults.legacy_bootstrap
        return FakeLegacyAdmin(self)

    def future(self, method: str, make: Callable[[], Future[Any]]) -> Future[Any]:
        if method in self.faults.hang:
            return Future()  # never completes
        return make()


class FakeAdmin:
    """confluent_kafka.admin.AdminClient, as far as the adapter uses it."""

    def __init__(self, cluster: FakeCluster) -> None:
        self._c = cluster

    def poll(self, timeout: float) -> int:
        return 0

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        self._c.calls["list_topics"] += 1
        if self._c.faults.metadata is not None:
            raise self._c.faults.metadata
        snap = self._c.snapshot
        md = ClusterMetadata()
        md.cluster_id = snap.cluster_id
        md.controller_id = 3  # what a KRaft broker reports: some live broker, not the quorum leader
        for b in snap.brokers:
            bm = BrokerMetadata()
            bm.id, bm.host, bm.port = b.id, b.host, b.port
            md.brokers[b.id] = bm
        for t in snap.topics:
            tm = TopicMetadata()
            tm.topic = t.name
            for p in t.partitions:
                pm = PartitionMetadata()
                pm.id, pm.leader, pm.replicas, pm.isrs = (
                    p.partition,
                    p.leader,
                    list(p.replicas),
                    list(p.isr),
                )
                tm.partitions[p.partition] = pm
            md.topics[t.name] = tm
        return md

    def describe_configs(
        self, resources: list[Any], request_timeout: float
    ) -> dict[Any, Future[Any]]:
        self._c.calls["describe_configs"] += 1
        if "describe_configs" in self._c.faults.unsupported:
            return {r: failed(unsupported_feature()) for r in resources}
        configs = {t.name: t.configs for t in self._c.snapshot.topics}
        result = {}
        for r in resources:
            if (
                r.restype == ResourceType.BROKER
                and int(r.name) in self._c.faults.cut_broker_configs
            ):
                cut = kafka_exception(KafkaError._TRANSPORT, "Local: Broker transport failure")
                result[r] = failed(cut)
                continue
            if r.restype == ResourceType.BROKER:
                values: Mapping[str, str] = {"min.insync.replicas": "2"}
            else:
                values = configs[r.name]
            result[r] = self._c.future(
                "describe_configs",
                lambda v=values: done({k: ConfigEntry(k, x) for k, x in v.items()}),
            )
        return result

    def list_offsets(
        self, requests: Mapping[TopicPartition, Any], request_timeout: float
    ) -> dict[Any, Future[Any]]:
        self._c.calls["list_offsets"] += 1
        parts = {(t.name, p.partition): p for t in self._c.snapshot.topics for p in t.partitions}
        result = {}
        for tp, spec in requests.items():
            p = parts[(tp.topic, tp.partition)]
            earliest = type(spec).__name__ == "EarliestSpec"
            offset = p.earliest_offset if earliest else p.latest_offset
            if p.leader == self._c.faults.offsets_leader_down:
                result[tp] = failed(kafka_exception(KafkaError._TRANSPORT, "leader unreachable"))
            elif p.leader == self._c.faults.offsets_leader_behind:
                result[tp] = failed(
                    kafka_exception(
                        KafkaError.UNKNOWN_LEADER_EPOCH, "Leader epoch is newer than broker epoch"
                    )
                )
            else:
                result[tp] = self._c.future(
                    "list_offsets", lambda o=offset: done(ListOffsetsResultInfo(o, -1, 0))
                )
        return result

    def list_consumer_groups(self, request_timeout: float) -> Future[Any]:
        self._c.calls["list_consumer_groups"] += 1
        if self._c.faults.list_groups is not None:
            return failed(self._c.faults.list_groups)
        if "list_consumer_groups" in self._c.faults.unsupported:  # one error per broker
            errors = [unsupported_feature().args[0] for _ in self._c.snapshot.brokers]
            return done(ListConsumerGroupsResult([], errors))
        listings = [
            ConsumerGroupListing(
                g.group_id,
                False,
                ConsumerGroupState[g.state or "UNKNOWN"]
                if self._c.listed_states
                else ConsumerGroupState.UNKNOWN,
                ConsumerGroupType[g.type or "UNKNOWN"]
                if self._c.listed_states
                else ConsumerGroupType.UNKNOWN,
            )
            for g in self._c.snapshot.groups
        ]
        return self._c.future(
            "list_consumer_groups", lambda: done(ListConsumerGroupsResult(listings, []))
        )

    def describe_consumer_groups(
        self, group_ids: list[str], request_timeout: float
    ) -> dict[str, Future[Any]]:
        self._c.calls["describe_consumer_groups"] += 1
        groups = {g.group_id: g for g in self._c.snapshot.groups}
        result = {}
        for gid in group_ids:
            if "describe_consumer_groups" in self._c.faults.unsupported:
                result[gid] = failed(unsupported_feature())
                continue
            faults = self._c.faults
            if faults.describe_groups is not None and gid not in faults.describe_groups_spared:
                result[gid] = failed(self._c.faults.describe_groups)
                continue
            g = groups[gid]
            members = [
                MemberDescription(
                    m.member_id,
                    m.client_id,
                    m.host,
                    MemberAssignment([TopicPartition(a.topic, a.partition) for a in m.assignment]),
                )
                for m in g.members or ()
            ]
            desc = ConsumerGroupDescription(
                gid,
                False,
                members,
                g.protocol or "",
                ConsumerGroupState[g.state or "UNKNOWN"],
                Node(g.coordinator or 0, "127.0.0.1", 9092),
                type=ConsumerGroupType[g.type or "UNKNOWN"],
            )
            result[gid] = self._c.future("describe_consumer_groups", lambda d=desc: done(d))
        return result

    def list_consumer_group_offsets(
        self, requests: list[ConsumerGroupTopicPartitions], request_timeout: float
    ) -> dict[str, Future[Any]]:
        self._c.calls["list_consumer_group_offsets"] += 1
        assert len(requests) == 1, "confluent-kafka accepts one group per call"
        gid = requests[0].group_id
        group = next(g for g in self._c.snapshot.groups if g.group_id == gid)
        tps = [TopicPartition(c.topic, c.partition, c.offset) for c in group.committed or ()]
        return {
            gid: self._c.future(
                "list_consumer_group_offsets", lambda: done(ConsumerGroupTopicPartitions(gid, tps))
            )
        }


class FakeLegacyAdmin:
    """kafka.admin.KafkaAdminClient (kafka-python 3.x), as far as the adapter uses it."""

    def __init__(self, cluster: FakeCluster) -> None:
        self._c = cluster
        # Where kafka-python caches the coordinators its group requests found.
        coordinators = {
            (CoordinatorType.GROUP, g.group_id): g.coordinator for g in cluster.snapshot.groups
        }
        brokers = [SimpleNamespace(node_id=b.id) for b in cluster.snapshot.brokers]
        self._manager = SimpleNamespace(
            cluster=SimpleNamespace(_coordinators=coordinators, brokers=lambda: brokers)
        )

    def close(self) -> None:
        pass

    def describe_groups(self, group_ids: list[str]) -> dict[str, dict[str, Any]]:
        """DescribeGroups, one request per coordinator, in kafka-python's dict form."""
        self._c.calls["describe_groups"] += 1
        by_id = {g.group_id: g for g in self._c.snapshot.groups}
        states = {"STABLE": "Stable", "EMPTY": "Empty", "DEAD": "Dead"}
        return {
            gid: {
                "error": None,
                "group_id": gid,
                "group_state": states[by_id[gid].state or "DEAD"],
                "protocol_type": "consumer",
                "protocol_data": by_id[gid].protocol,
                "members": [
                    {
                        "member_id": m.member_id,
                        "client_id": m.client_id,
                        "client_host": m.host,
                        "member_assignment": {
                            "assigned_partitions": [
                                {"topic": a.topic, "partitions": [a.partition]}
                                for a in m.assignment
                            ]
                        },
                    }
                    for m in by_id[gid].members or ()
                ],
            }
            for gid in group_ids
        }

    def describe_metadata_quorum(self) -> dict[str, Any]:
        self._c.calls["describe_metadata_quorum"] += 1
        q = self._c.snapshot.quorum
        if q is None or "describe_metadata_quorum" in self._c.faults.unsupported:
            raise kafka_errors.IncompatibleBrokerVersion("DescribeQuorum")

        def replica(r: Any) -> dict[str, Any]:
            return {
                "replica_id": r.id,
                "log_end_offset": r.log_end_offset,
                "last_fetch_timestamp": r.last_fetch_timestamp_ms or -1,
                "last_caught_up_timestamp": r.last_caught_up_timestamp_ms or -1,
            }

        partition = {
            "partition_index": 0,
            "error": None,
            "leader_id": q.leader_id,
            "leader_epoch": 12,
            "high_watermark": 100,
            "current_voters": [replica(r) for r in q.voters],
            "observers": [replica(r) for r in q.observers],
        }
        return {"topics": [{"topic_name": "__cluster_metadata", "partitions": [partition]}]}

    def describe_cluster(self) -> dict[str, Any]:
        self._c.calls["describe_cluster"] += 1
        if "describe_cluster" in self._c.faults.unsupported:
            raise kafka_errors.IncompatibleBrokerVersion("DescribeClusterRequest")
        return {
            "cluster_id": self._c.snapshot.cluster_id,
            "controller_id": 3,
            "brokers": [
                {"broker_id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in self._c.snapshot.brokers
            ],
        }

    def list_group_offsets(self, group_ids: list[str]) -> dict[str, dict[Any, Any]]:
        """One OffsetFetch per coordinator for all its groups (the recordings have one)."""
        self._c.calls["list_group_offsets"] += 1
        if "list_group_offsets" in self._c.faults.hang:
            self._c.released.wait()
        by_id = {g.group_id: g for g in self._c.snapshot.groups}
        return {
            gid: {
                KafkaTopicPartition(c.topic, c.partition): OffsetAndMetadata(c.offset, "", -1)
                for c in by_id[gid].committed or ()
            }
            for gid in group_ids
        }

    def describe_log_dirs(
        self, topic_partitions: Mapping[str, list[int]] | None, brokers: list[int]
    ) -> list[dict[str, Any]]:
        self._c.calls["describe_log_dirs"] += 1
        # None ("all topics") makes kafka-python read the whole cluster's metadata first.
        assert isinstance(topic_partitions, dict), "describe_log_dirs without its partitions"
        (broker,) = brokers
        if "describe_log_dirs" in self._c.faults.hang:
            self._c.released.wait()
        if "describe_log_dirs" in self._c.faults.unsupported:
            raise kafka_errors.IncompatibleBrokerVersion("DescribeLogDirsRequest")
        if broker in self._c.faults.slow_log_dirs_brokers:
            self._c.released.wait()
        if broker in self._c.faults.log_dirs_brokers:
            raise self._c.faults.log_dirs_brokers[broker]
        found = next((b for b in self._c.snapshot.log_dirs if b.broker == broker), None)
        if found is None or found.error is not None:
            raise kafka_errors.UnknownBrokerIdError(broker)
        log_dirs = []
        for d in found.log_dirs:
            topics: dict[str, list[dict[str, Any]]] = {}
            for p in d.partitions:
                topics.setdefault(p.topic, []).append(
                    {
                        "partition_index": p.partition,
                        "partition_size": p.size_bytes,
                        "offset_lag": p.offset_lag,
                        "is_future_key": p.is_future,
                    }
                )
            log_dirs.append(
                {
                    "error_code": 0,
                    "log_dir": d.path,
                    "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
                    "total_bytes": d.total_bytes if d.total_bytes is not None else -1,
                    "usable_bytes": d.usable_bytes if d.usable_bytes is not None else -1,
                }
            )
        return [{"broker": broker, "log_dirs": log_dirs}]
