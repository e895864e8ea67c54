"""The only module that talks to Kafka: one collection → one `ClusterSnapshot`.

Requests per collection grow with brokers and groups, never with partitions:
- confluent-kafka AdminClient: one Metadata (`list_topics`), one DescribeConfigs for all topics and
  one for a broker's defaults, one ListOffsets call for the earliest and one for the latest offsets
  of every partition (librdkafka sends one request per leader broker), ListGroups, and a describe
  per consumer-protocol group (from a client of its own, exporter.kafka.coordinator_requests);
- kafka-python KafkaAdminClient (confluent-kafka lacks these): DescribeLogDirs once per broker in
  the metadata, so one failing or slow broker hides nothing else (a broker absent from the
  metadata is down: it is not asked), and DescribeQuorum for the real KRaft controller plus
  DescribeCluster for racks, and per coordinator for all its groups one OffsetFetch and one
  DescribeGroups of the classic groups that have members (librdkafka's admin OffsetFetch segfaults
  when the coordinator moved, see `_ask_groups`; exporter.kafka.group_requests).
Log dirs, configs, quorum and racks are reused from a recent complete answer while the brokers and
topics stay the same (exporter.kafka.slow_phases).
Phases run concurrently after the metadata call and each failure stays in its phase: its data is
missing from the snapshot and its error is listed. Every wait is bounded by the collection deadline.
An API the cluster does not support is a capability it lacks (exporter.kafka.capabilities), not
an error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypeVar, cast

from confluent_kafka import (
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # documented path, no __all__
    AdminClient,
    ConfigResource,
    OffsetSpec,
    ResourceType,
)
from confluent_kafka.cimpl import _AdminClientImpl

# kafka-python is imported here, once, on the importing thread. Imported lazily inside the
# functions below, which run concurrently on the collection pool, its package imports raced and
# Python's import lock raised `_DeadlockError: deadlock detected by _ModuleLock('kafka.admin')`.
from kafka import errors as kafka_errors
from kafka.admin import KafkaAdminClient

from vigia.common.kafka_config import to_kafka_python
from vigia.common.kafka_diagnostics import KafkaDiagnostics, KafkaUnavailable, wait_for_metadata
from vigia.common.kafka_errors import ACCESS_KINDS, AUTHORIZATION, kind_of
from vigia.exporter.kafka.capabilities import CapabilityTracker, is_unsupported
from vigia.exporter.kafka.coordinator_requests import CoordinatorRequests, StillWaiting
from vigia.exporter.kafka.group_requests import (
    DESCRIBE,
    OFFSETS,
    Described,
    DescribePlan,
    GroupAnswers,
    LegacyGroups,
    Listed,
    Outcome,
    coordinator_of,
    enum_name,
    forget_gone_groups,
    from_librdkafka,
    plan_describes,
)
from vigia.exporter.kafka.kafka_python_log import quiet_kafka_python
from vigia.exporter.kafka.slow_phases import SlowPhases
from vigia.exporter.model.filters import Filters
from vigia.exporter.model.retention import Retention, topic_retention
from vigia.exporter.model.snapshot import (
    GROUP_COORDINATOR_PHASE,
    Broker,
    BrokerLogDirs,
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    LogDir,
    LogDirPartition,
    Partition,
    PhaseError,
    Quorum,
    QuorumReplica,
    Topic,
    empty_snapshot,
    resolve_controller,
)

log = logging.getLogger(__name__)


CLIENT_ID = "vigia-exporter"
# Kafka's own list (org.apache.kafka.common.internals.Topic): the Metadata API flags these, but
# librdkafka's list_topics does not pass the flag on.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
# The topic configs kept in the snapshot (the same five the fixtures recorded).
TOPIC_CONFIG_KEYS = (
    "retention.ms",
    "retention.bytes",
    "min.insync.replicas",
    "cleanup.policy",
    "segment.bytes",
)
T = TypeVar("T")
OFFSETS_PER_CALL = 500
PER_BROKER_RESERVE_SECONDS = 0.25
# The capabilities served through kafka-python's client.
LEGACY_CAPABILITIES = ("describe_cluster", "describe_quorum", "describe_log_dirs")
# Consecutive collections in which kafka-python cannot bootstrap while librdkafka reads the
# metadata before its APIs count as unavailable (librdkafka's mock answers kafka-python's
# ApiVersions request in a form it cannot decode): once could be a blip.
LEGACY_BOOTSTRAP_FAILURES_BEFORE_OFF = 2
# A partition's leader saying its leadership or leader epoch is moving, or that a new leader
# does not know its offsets yet (OFFSET_NOT_AVAILABLE, KIP-207).
LEADER_MOTION = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.OFFSET_NOT_AVAILABLE,
    }
)
# Answers that are right again a moment later; librdkafka does not flag all of them retriable.
RETRIABLE = LEADER_MOTION | {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.REPLICA_NOT_AVAILABLE,
    KafkaError.REQUEST_TIMED_OUT,
}
RETRY_BACKOFF_SECONDS = 0.25


def error_text(exc: object) -> str:
    """`Class: message`, the form the fixtures record (kafka-python's str() already has it)."""
    kafka_error = _unwrapped(exc)
    if isinstance(kafka_error, KafkaError):
        return f"KafkaError {kafka_error.name()}: {kafka_error.str()}"
    name, text = type(exc).__name__, str(exc)
    if not text:
        return "timed out" if isinstance(exc, TimeoutError) else name
    return text if text.startswith(f"{name}:") else f"{name}: {text}"


def _retriable(exc: object) -> bool:
    """An answer worth asking again for within the collection: a leader or coordinator that is
    moving, loading or not yet known (every broker restart and controller failover)."""
    if isinstance(exc, kafka_errors.KafkaError):  # kafka-python's own flag
        return bool(exc.retriable)
    error = _unwrapped(exc)
    return isinstance(error, KafkaError) and (error.retriable() or error.code() in RETRIABLE)


def _leader_motion(answer: object) -> bool:
    """A partition's answer saying its leadership or leader epoch is moving."""
    error = _unwrapped(answer)
    return isinstance(error, KafkaError) and error.code() in LEADER_MOTION


def _unwrapped(exc: object) -> object:
    """The KafkaError a confluent-kafka KafkaException carries, else `exc` itself."""
    return exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self, reserve: float = 0.0) -> float:
        """Seconds left (minus `reserve`), never zero: a call with no time left fails fast
        instead of blocking."""
        return max(0.05, self._end - time.monotonic() - reserve)

    def passed(self, reserve: float = 0.0) -> bool:
        return time.monotonic() >= self._end - reserve


@dataclass
class _Phases:
    """Errors and timings of the phases of one collection."""

    errors: list[PhaseError] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    leaders_moving: set[tuple[str, int]] = field(default_factory=set)

    def fail(self, phase: str, message: str) -> None:
        log.debug("phase %s failed: %s", phase, message)
        self.errors.append(PhaseError(phase, message))

    def timed(self, phase: str, started: float) -> None:
        self.durations[phase] = time.monotonic() - started

    def timed_call(self, phase: str, started: float, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        finally:
            self.timed(phase, started)


def _default_admin(config: Mapping[str, Any]) -> Any:
    return AdminClient(dict(config))


def _default_legacy_admin(config: Mapping[str, Any]) -> Any:
    client = KafkaAdminClient.__new__(KafkaAdminClient)
    try:
        client.__init__(**config)
    except Exception:
        # kafka-python 3.0 starts its IO thread before bootstrapping and leaves it running when
        # bootstrap fails: without this, every failed attempt would leak a thread.
        if hasattr(client, "_client"):
            client._client.close()
        if hasattr(client, "_net"):
            client._net.stop()
        raise
    return client


class KafkaAdapter:
    """Collects snapshots; keeps its clients between collections (they reconnect by themselves)."""

    def __init__(
        self,
        bootstrap_servers: str,
        options: Mapping[str, str],
        filters: Filters,
        *,
        admin_factory: Callable[[Mapping[str, Any]], Any] = _default_admin,
        legacy_admin_factory: Callable[[Mapping[str, Any]], Any] = _default_legacy_admin,
        named_groups: Mapping[str, str] | None = None,
        slow_phase_interval: float = 0.0,
        assumed_configs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._filters = filters
        # Topic configs taken as given where the cluster answers none (--assumed-topic-config).
        self._assumed_configs = {t: dict(c) for t, c in (assumed_configs or {}).items()}
        # Log dirs, configs, quorum and racks: reused from a recent complete answer (slow_phases).
        self._slow_phases = SlowPhases(slow_phase_interval)
        # Whether the last configs gave a collected topic a size limit: its retention margin is
        # the unread share of the partition's size, so the sizes must be as fresh as the offsets.
        self._size_limited = True
        # Group -> its topic: reported even when ListGroups does not list it (a cluster without
        # ListGroups, such as librdkafka's mock), with offsets asked for that topic's partitions
        # (the mock answers an OffsetFetch of "all topics" with none).
        self._named_groups = dict(named_groups or {})
        quiet_kafka_python()
        # librdkafka's own log lines go through Python logging like everything else, and name
        # authentication and TLS failures (see common.kafka_diagnostics).
        self._diagnostics = KafkaDiagnostics(options, "exporter.librdkafka")
        admin_config = {
            "client.id": CLIENT_ID,
            **self._diagnostics.client_config(),
            **options,
            "bootstrap.servers": bootstrap_servers,
        }
        self._admin = admin_factory(admin_config)
        # A client of their own: it is replaced when its requests stay out too long.
        self._coordinator = CoordinatorRequests(lambda: admin_factory(admin_config))
        self._legacy_config: dict[str, Any] = {
            "client_id": CLIENT_ID,
            **to_kafka_python(options),
            "bootstrap_servers": bootstrap_servers.split(","),
        }
        self._legacy_factory = legacy_admin_factory
        self._legacy: Any = None
        self._legacy_lock = threading.Lock()
        self._legacy_failures = 0
        self._capabilities = CapabilityTracker()
        # A consumer-protocol group's assignor from its last description, shown while it is EMPTY
        # and not described again.
        self._assignors: dict[str, str] = {}
        # Blocking kafka-python calls (one per broker for log dirs) and the group chain run here,
        # concurrently with the confluent-kafka futures. Threads are started only when needed.
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="vigia-kafka")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._coordinator.close()
        if self._legacy is not None:
            try:
                self._legacy.close()
            except Exception as exc:  # closing is best effort
                log.debug("closing kafka-python admin client: %s", error_text(exc))

    def collect(self, timeout: float) -> ClusterSnapshot:
        try:
            return self._collect(timeout)
        finally:
            self._admin.poll(0)  # hands librdkafka's queued log lines to the Python logger

    def _collect(self, timeout: float) -> ClusterSnapshot:
        collected_at = time.time()
        started = time.monotonic()
        deadline = Deadline(timeout)
        phases = _Phases()
        try:
            metadata = wait_for_metadata(self._admin, self._diagnostics, deadline.remaining())
        except KafkaUnavailable as exc:
            # An authentication or TLS failure ended the wait: its summary is the message.
            text = (
                exc.cause if exc.error is None else self._diagnostics.explain(error_text(exc.error))
            )
            phases.fail("metadata", text)
            metadata = None
        except Exception as exc:
            phases.fail("metadata", error_text(exc))
            metadata = None
        phases.timed("metadata", started)
        if metadata is None:
            phases.durations["total"] = time.monotonic() - started
            return replace(
                empty_snapshot(collected_at, tuple(phases.errors)),
                durations=MappingProxyType(dict(phases.durations)),
            )

        brokers = {
            b.id: Broker(b.id, b.host, b.port) for b in metadata.brokers.values() if b.id >= 0
        }
        topics = self._topics(metadata, set(brokers))
        launched = time.monotonic()
        # What each slow phase's answer depends on (see exporter.kafka.slow_phases).
        live = frozenset(brokers)
        # Every partition of every topic, the filtered-out ones too (log dirs hold them all).
        everything = {
            name: {p.id: tuple(p.replicas) for p in meta.partitions.values()}
            for name, meta in metadata.topics.items()
            if meta.partitions
        }
        layout = tuple(sorted((name, tuple(sorted(ps.items()))) for name, ps in everything.items()))
        legacy = self._pool.submit(self._legacy_admin, deadline)
        cluster = self._pool.submit(
            self._slow_phase,
            "cluster",
            live,
            phases,
            lambda: phases.timed_call(
                "cluster", launched, self._cluster_info, legacy, deadline, phases
            ),
        )
        log_dirs = self._pool.submit(
            self._slow_phase,
            "log_dirs",
            (live, layout),
            phases,
            lambda: phases.timed_call(
                "log_dirs",
                launched,
                self._log_dirs,
                legacy,
                sorted(brokers),
                {name: sorted(ps) for name, ps in everything.items()},
                deadline,
            ),
            lambda dirs: all(d.error is None for d in dirs),
            self._size_limited,
        )
        groups = self._pool.submit(self._groups, topics, legacy, deadline, phases)
        configs = self._slow_phase(
            "configs",
            (live, tuple(t.name for t in topics)),
            phases,
            lambda: self._configs(topics, sorted(brokers), deadline, phases),
        )
        offsets = self._offsets(topics, deadline, phases)

        quorum, racks = _result(cluster, deadline, phases, "cluster", (None, {}), launched)
        broker_dirs = _result(log_dirs, deadline, phases, "log_dirs", (), launched)
        group_list = _result(groups, deadline, phases, "groups", (), launched)

        broker_default, answered = configs
        topic_configs = {**self._assumed_configs, **answered}
        # Without configs (failed, or not supported) no limit is known: sizes are kept fresh.
        self._size_limited = not topic_configs or any(
            _size_limit(c) for c in topic_configs.values()
        )
        topics = [_with_configs_and_offsets(t, topic_configs, offsets) for t in topics]
        controller_id, controller_source = resolve_controller(
            quorum, metadata.controller_id, "metadata", brokers
        )
        phases.durations["total"] = time.monotonic() - started
        return ClusterSnapshot(
            collected_at=collected_at,
            cluster_id=metadata.cluster_id,
            controller_id=controller_id,
            controller_source=controller_source,
            brokers=tuple(replace(b, rack=racks.get(b.id)) for _, b in sorted(brokers.items())),
            topics=tuple(topics),
            log_dirs=broker_dirs,
            groups=group_list,
            quorum=quorum,
            broker_min_insync_replicas=broker_default,
            errors=tuple(sorted(phases.errors, key=lambda e: e.phase)),
            durations=MappingProxyType(dict(phases.durations)),
            capabilities=self._capabilities.snapshot(),
            leaders_moving=frozenset(phases.leaders_moving),
        )

    def _slow_phase(
        self,
        phase: str,
        key: Hashable,
        phases: _Phases,
        ask: Callable[[], T],
        complete: Callable[[T], bool] = lambda _: True,
        fresh: bool = False,
    ) -> T:
        """A recent complete answer of the phase for the same `key`, or a fresh one (kept for the
        next collections when complete: no error in its phase, and `complete(value)`); always a
        fresh one when `fresh`."""
        answer = None if fresh else self._slow_phases.reusable(phase, key)
        if answer is not None:
            phases.durations[phase] = answer.duration
            return cast(T, answer.value)
        try:
            value = ask()
        except BaseException:
            self._slow_phases.keep(phase, key, None, 0.0, complete=False)
            raise
        failed = any(e.phase == phase for e in list(phases.errors))
        duration = phases.durations.get(phase, 0.0)
        self._slow_phases.keep(phase, key, value, duration, not failed and complete(value))
        return value

    def _unsupported(self, capability: str, exc: object) -> bool:
        """Records the capability as off when `exc` says the cluster lacks it."""
        if not is_unsupported(exc):
            return False
        self._capabilities.unsupported(capability, error_text(exc))
        return True

    # -- metadata ---------------------------------------------------------------------------

    def _topics(self, metadata: Any, live_brokers: set[int]) -> list[Topic]:
        topics = []
        for name, meta in sorted(metadata.topics.items()):
            if not self._filters.topics.allows(name):
                continue
            if meta.error is not None and not meta.partitions:
                log.debug("topic %s left out: %s", name, meta.error)
                continue
            partitions = tuple(
                Partition(
                    p.id,
                    p.leader,
                    tuple(p.replicas),
                    tuple(p.isrs),
                    # confluent-kafka does not expose the field; a replica on a broker missing
                    # from metadata is what Kafka reports as offline in that case.
                    ()
                    if live_brokers.issuperset(p.replicas)
                    else tuple(r for r in p.replicas if r not in live_brokers),
                )
                for _, p in sorted(meta.partitions.items())
            )
            topics.append(Topic(name=name, internal=name in INTERNAL_TOPICS, partitions=partitions))
        return topics

    # -- configs ----------------------------------------------------------------------------

    def _configs(
        self, topics: list[Topic], broker_ids: list[int], deadline: Deadline, phases: _Phases
    ) -> tuple[int | None, dict[str, dict[str, str]]]:
        """Topic configs and the broker-wide min.insync.replicas (for topics that lack one)."""
        started = time.monotonic()
        futures: dict[Any, Future[Any]] = {}
        if not self._capabilities.should_ask("describe_configs"):
            phases.timed("configs", started)
            return None, {}
        try:
            if topics:
                resources = [ConfigResource(ResourceType.TOPIC, t.name) for t in topics]
                futures.update(
                    self._admin.describe_configs(resources, request_timeout=deadline.remaining())
                )
            if broker_ids:
                broker = [ConfigResource(ResourceType.BROKER, str(broker_ids[0]))]
                futures.update(
                    self._admin.describe_configs(broker, request_timeout=deadline.remaining())
                )
        except Exception as exc:
            if not self._unsupported("describe_configs", exc):
                phases.fail("configs", error_text(exc))
        wait(futures.values(), timeout=deadline.remaining())
        futures = self._broker_default_elsewhere(futures, broker_ids, deadline)
        topic_configs: dict[str, dict[str, str]] = {}
        broker_default = None
        failures: list[str] = []
        unsupported = False
        for resource, future in futures.items():
            try:
                entries = future.result(timeout=0)
            except Exception as exc:
                if self._unsupported("describe_configs", exc):
                    unsupported = True
                else:
                    failures.append(f"{resource.name}: {error_text(exc)}")
                continue
            self._capabilities.supported("describe_configs")
            if resource.restype == ResourceType.BROKER:
                value = entries.get("min.insync.replicas")
                broker_default = int(value.value) if value is not None and value.value else None
            else:
                topic_configs[resource.name] = {
                    k: entries[k].value
                    for k in TOPIC_CONFIG_KEYS
                    if k in entries and entries[k].value is not None
                }
        # The other resources of an unsupported call may just time out.
        if failures and not unsupported:
            phases.fail("configs", _summary(failures, len(futures), "resources"))
        phases.timed("configs", started)
        return broker_default, topic_configs

    def _broker_default_elsewhere(
        self, futures: dict[Any, Future[Any]], broker_ids: list[int], deadline: Deadline
    ) -> dict[Any, Future[Any]]:
        """The broker-wide configs asked again of the next broker when the first one's connection
        closed under the request: a broker stopping (the active controller) closes it before the
        metadata or any ISR shows it moving."""
        cut = [
            resource
            for resource, future in futures.items()
            if resource.restype == ResourceType.BROKER
            and future.done()
            and (error := future.exception()) is not None
            and _cut(error)
        ]
        if not cut or len(broker_ids) < 2:
            return futures
        resource = ConfigResource(ResourceType.BROKER, str(broker_ids[1]))
        try:
            again = self._admin.describe_configs([resource], request_timeout=deadline.remaining())
        except Exception:  # the first answer's failure stands
            return futures
        wait(again.values(), timeout=deadline.remaining())
        return {**{r: f for r, f in futures.items() if r not in cut}, **again}

    # -- offsets ----------------------------------------------------------------------------

    def _offsets(
        self, topics: list[Topic], deadline: Deadline, phases: _Phases
    ) -> dict[tuple[str, int], tuple[int | None, int | None]]:
        started = time.monotonic()
        tps = [TopicPartition(t.name, p.partition) for t in topics for p in t.partitions]
        if not tps:
            phases.timed("offsets", started)
            return {}
        results: dict[str, dict[tuple[str, int], int]] = {"earliest": {}, "latest": {}}
        failures: list[str] = []
        specs = {
            "earliest": OffsetSpec.earliest(),  # type: ignore[no-untyped-call]
            "latest": OffsetSpec.latest(),  # type: ignore[no-untyped-call]
        }
        asked = dict.fromkeys(specs, tps)
        while True:
            retry = self._offsets_round(asked, specs, deadline, results, failures)
            # A leader that is moving (UNKNOWN_LEADER_EPOCH, NOT_LEADER...) answers a moment
            # later: asked again within the collection, the rest reported.
            if not any(retry.values()) or deadline.passed(RETRY_BACKOFF_SECONDS):
                for kind, errors in retry.items():
                    for tp, error in errors.items():
                        failures.append(f"{kind} {tp.topic}-{tp.partition}: {error_text(error)}")
                        if _leader_motion(error):
                            phases.leaders_moving.add((tp.topic, tp.partition))
                break
            time.sleep(RETRY_BACKOFF_SECONDS)
            asked = {kind: list(errors) for kind, errors in retry.items()}
            # librdkafka sends the leader epoch it has cached: a Metadata request refreshes it.
            try:
                self._admin.list_topics(
                    timeout=deadline.remaining(reserve=RETRY_BACKOFF_SECONDS) / 2
                )
            except Exception as exc:  # the retry says what is wrong, if anything still is
                log.debug("metadata refresh before retrying offsets: %s", error_text(exc))
        for kind, found in results.items():
            if len(found) < len(tps):
                missing = len(tps) - len(found) - sum(f.startswith(kind) for f in failures)
                if missing > 0:
                    failures.append(f"{kind}: {missing} partitions not answered")
        if failures:
            phases.fail("offsets", _summary(failures, 2 * len(tps), "partition offsets"))
        phases.timed("offsets", started)
        return {
            key: (results["earliest"].get(key), results["latest"].get(key))
            for key in results["earliest"].keys() | results["latest"].keys()
        }

    def _offsets_round(
        self,
        asked: Mapping[str, list[TopicPartition]],
        specs: Mapping[str, OffsetSpec],
        deadline: Deadline,
        results: dict[str, dict[tuple[str, int], int]],
        failures: list[str],
    ) -> dict[str, dict[TopicPartition, object]]:
        """One ListOffsets call per kind and 500 partitions; answers go to `results`, failures
        to `failures`, and the partitions answered with a retriable error are returned with it."""
        futures: dict[tuple[str, int], Future[Mapping[Any, Any]]] = {}
        for kind, tps in asked.items():
            # librdkafka's ListOffsets costs more than linearly in the partitions of one call.
            for n in range(0, len(tps), OFFSETS_PER_CALL):
                chunk = tps[n : n + OFFSETS_PER_CALL]
                try:
                    futures[(kind, n)] = _list_offsets(
                        self._admin, chunk, specs[kind], deadline.remaining()
                    )
                except Exception as exc:
                    failures.append(f"{kind}: {error_text(exc)}")
        wait(futures.values(), timeout=deadline.remaining())
        retry: dict[str, dict[TopicPartition, object]] = {kind: {} for kind in asked}
        for (kind, _), future in futures.items():
            try:
                answers = future.result(timeout=0)
            except Exception as exc:
                failures.append(f"{kind}: {error_text(exc)}")
                continue
            found = results[kind]
            for tp, answer in answers.items():
                if _retriable(answer):
                    retry[kind][tp] = answer
                elif isinstance(answer, BaseException | KafkaError):
                    failures.append(f"{kind} {tp.topic}-{tp.partition}: {error_text(answer)}")
                else:
                    found[(tp.topic, tp.partition)] = answer.offset
        return retry

    # -- consumer groups (runs on the pool) -------------------------------------------------

    def _groups(
        self,
        topics: Sequence[Topic],
        legacy: Future[Any],
        deadline: Deadline,
        phases: _Phases,
    ) -> tuple[ConsumerGroup, ...]:
        started = time.monotonic()
        listed: dict[str, Listed] = {}
        try:
            if self._capabilities.should_ask("list_groups"):
                listed = self._list_groups(deadline, phases)
        except Exception as exc:
            if not self._unsupported("list_groups", exc):
                phases.fail("groups", f"ListGroups: {error_text(exc)}")
        named_ids = {g for g in self._named_groups if self._filters.groups.allows(g)}
        group_ids = sorted(listed.keys() | named_ids)
        if not group_ids:
            phases.timed("groups", started)
            return ()

        named = {
            group_id: [
                TopicPartition(t.name, p.partition)
                for t in topics
                for p in t.partitions
                if t.name == topic
            ]
            for group_id, topic in self._named_groups.items()
        }
        # Waited for as long as it takes (its bootstrap is bounded by the collection's deadline):
        # committed offsets never go through librdkafka's admin OffsetFetch while kafka-python
        # may still connect (see `_ask_groups`).
        unready: BaseException | None = None
        try:
            client = legacy.result(timeout=deadline.remaining())
        except Exception as exc:  # the cluster phase reports kafka-python's failure
            client, unready = None, exc
        self._assignors = {g: a for g, a in self._assignors.items() if g in listed}
        if client is not None and listed:
            forget_gone_groups(client, group_ids)
        plan = plan_describes(group_ids, listed, self._assignors, client is not None)
        answers = self._ask_groups(plan, group_ids, named, client, unready, deadline, phases)
        outcomes = {
            kind: {
                g: answers.outcomes[kind].get(g, TimeoutError())  # asked, unanswered: timed out
                for g in answers.asked[kind]
            }
            for kind in (DESCRIBE, OFFSETS)
        }
        moving = {g for found in outcomes.values() for g, o in found.items() if _moving(o)}
        unsupported = {
            g
            for g, o in outcomes[DESCRIBE].items()
            if isinstance(o, BaseException) and self._unsupported("describe_groups", o)
        }
        if len(unsupported) < len(outcomes[DESCRIBE]):
            self._capabilities.supported("describe_groups")

        groups = []
        describe_failures: dict[str, str] = {}
        offset_failures: dict[str, str] = {}
        by_phase = (("groups", describe_failures), ("group_offsets", offset_failures))
        for group_id in group_ids:
            description: Described | None = None
            if group_id in plan.empty:
                group_type, protocol = plan.empty[group_id]
                coordinator = coordinator_of(client, group_id)
                description = Described("EMPTY", group_type, protocol, coordinator, ())
            elif group_id not in unsupported:
                raw = _value(outcomes[DESCRIBE].get(group_id), group_id, describe_failures)
                description = (
                    raw if isinstance(raw, Described) or raw is None else from_librdkafka(raw)
                )
            if description is not None and description.type == "CONSUMER":
                self._assignors[group_id] = description.protocol or ""
            committed = _value(outcomes[OFFSETS].get(group_id), group_id, offset_failures)
            # Only a failure is classified: its regular expressions, asked of every group's
            # empty text, were a fifth of the requests' CPU at 10,000 groups.
            refused = tuple(
                phase
                for phase, failures in by_phase
                if group_id in failures and kind_of(failures[group_id]) == AUTHORIZATION
            )
            groups.append(_group(group_id, description, committed, self._filters, refused))
        # A group whose coordinator is moving (a broker stopped or came back) is a fact about
        # that group for this collection, like a broker that is down (GROUP_COORDINATOR_PHASE).
        moving &= describe_failures.keys() | offset_failures.keys()
        if moving:
            failures = {**describe_failures, **offset_failures}
            first = [f"{g}: {failures[g]}" for g in sorted(moving) if g in failures]
            phases.fail(
                GROUP_COORDINATOR_PHASE,
                _summary(first, len(group_ids), "groups whose coordinator is moving"),
            )
            describe_failures = {g: m for g, m in describe_failures.items() if g not in moving}
            offset_failures = {g: m for g, m in offset_failures.items() if g not in moving}
        # Groups the exporter may not see are a fact about its permissions, summarised apart so
        # that they never hide another failure (snapshot.PERMISSION_PHASES).
        for denied, failures_of in _by_permission(describe_failures):
            summary = _summary(failures_of, len(group_ids), "groups")
            phases.fail("groups", f"DescribeGroups {'denied, ' if denied else ''}{summary}")
        for denied, failures_of in _by_permission(offset_failures):
            summary = _summary(failures_of, len(group_ids), "groups")
            phases.fail("group_offsets", f"{'denied, ' if denied else ''}{summary}")
        phases.timed("groups", started)
        phases.timed("group_offsets", started)
        return tuple(groups)

    def _ask_groups(
        self,
        plan: DescribePlan,
        group_ids: list[str],
        named: Mapping[str, list[TopicPartition]],
        client: Any,
        unready: BaseException | None,
        deadline: Deadline,
        phases: _Phases,
    ) -> GroupAnswers:
        """Describes and committed offsets, answered or not when the deadline comes; a group
        answered with a retriable error (its coordinator moving or loading) is asked again while
        time is left.

        Both go through kafka-python (`client`) when it can connect, one request per coordinator
        for all its groups: librdkafka 2.16's admin OffsetFetch dereferences the consumer group of
        a client that has none when the answer is NOT_COORDINATOR or another coordinator error (a
        segfault in rdk:main, `rd_kafka_cgrp_op` from `rd_kafka_handle_OffsetFetch`;
        confluentinc/librdkafka#5040; tests/exporter/test_librdkafka_offset_fetch_crash.py),
        which every broker stop provokes, and its coordinator requests are freed twice when they
        time out while a coordinator is looked up (exporter.kafka.coordinator_requests).
        librdkafka describes only what kafka-python 3.0 cannot: consumer-protocol groups
        (ConsumerGroupDescribe, KIP-848) and groups whose type ListGroups did not say; it sends
        both kinds where kafka-python cannot connect (librdkafka's mock cluster: its capabilities
        are off). Where kafka-python may still connect but is not there this collection
        (`unready`: its bootstrap failed or outlasted the collection), librdkafka describes the
        groups and their committed offsets are missing from this collection: the exporter
        crashed on CI when its first collections, beside a slow bootstrap, fell back to
        librdkafka's OffsetFetch."""
        answers = GroupAnswers()
        legacy = None if client is None else LegacyGroups(client, self._pool, answers)
        classic = set(plan.classic)

        def ask(kind: str, ids: list[str]) -> None:
            if kind == OFFSETS:
                if unready is not None:
                    phases.fail(
                        "group_offsets",
                        f"not asked: kafka-python is not connected ({error_text(unready)})",
                    )
                elif legacy is None:
                    answers.watch(kind, self._coordinator.offsets(ids, named))
                else:
                    legacy.offsets(ids)
                return
            if not self._capabilities.should_ask("describe_groups"):
                return
            if legacy is not None:
                legacy.describe([g for g in ids if g in classic])
            try:
                other = [g for g in ids if g not in classic]
                if other:
                    answers.watch(kind, self._coordinator.describe(other))
            except Exception as exc:
                if not self._unsupported("describe_groups", exc):
                    phases.fail("groups", f"DescribeGroups: {error_text(exc)}")

        ask(DESCRIBE, plan.classic + plan.other)
        ask(OFFSETS, group_ids)
        retry: dict[str, list[str]] = {DESCRIBE: [], OFFSETS: []}
        # The phase returns a little before the collection deadline with what it has, so that
        # the groups that answered are kept and only the others are reported.
        while not deadline.passed(PER_BROKER_RESERVE_SECONDS):
            if any(retry.values()) and not deadline.passed(
                PER_BROKER_RESERVE_SECONDS + RETRY_BACKOFF_SECONDS
            ):
                time.sleep(RETRY_BACKOFF_SECONDS)
                for kind, ids in retry.items():
                    if ids:
                        ask(kind, ids)
                retry = {DESCRIBE: [], OFFSETS: []}
            elif answers.waiting:
                arrived = answers.wait(deadline.remaining(reserve=PER_BROKER_RESERVE_SECONDS))
                if arrived is None:
                    break
                for kind, found in arrived.items():
                    retry[kind].extend(g for g, o in found.items() if _retriable(o))
            else:
                break
        return answers

    def _list_groups(self, deadline: Deadline, phases: _Phases) -> dict[str, Listed]:
        """The groups every broker lists, with the state and type ListGroups gives (None where
        the broker does not say); a broker still loading its groups (it just came back or
        became a coordinator) is asked again while a third of the collection is left, and then
        its groups count as moving coordinators (GROUP_COORDINATOR_PHASE), not as a failure."""
        while True:
            # At most half of what is left: the groups found still need describing.
            timeout = deadline.remaining() / 2
            listing = self._admin.list_consumer_groups(request_timeout=timeout).result(
                timeout=timeout
            )
            # librdkafka asks every broker: one error per broker that could not answer.
            listed_errors = listing.errors or ()
            errors = [e for e in listed_errors if not self._unsupported("list_groups", e)]
            if not errors or not all(_retriable(e) for e in errors):
                break
            if deadline.remaining() < deadline.seconds / 3:
                phases.fail(GROUP_COORDINATOR_PHASE, f"ListGroups: {error_text(errors[0])}")
                errors = []
                break
            time.sleep(RETRY_BACKOFF_SECONDS)
        if len(errors) == len(listed_errors):
            self._capabilities.supported("list_groups")
        if errors:
            phases.fail("groups", f"ListGroups: {error_text(errors[0])}")
        return {
            g.group_id: (enum_name(getattr(g, "state", None)), enum_name(getattr(g, "type", None)))
            for g in listing.valid
            if self._filters.groups.allows(g.group_id)
        }

    # -- kafka-python: log dirs and quorum (run on the pool) --------------------------------

    def _legacy_admin(self, deadline: Deadline) -> Any:
        """The kafka-python client, created on first use (creation bootstraps, bounded); None
        when none of its capabilities is to be asked for."""
        if not any(self._capabilities.should_ask(c) for c in LEGACY_CAPABILITIES):
            return None
        with self._legacy_lock:  # an abandoned collection may still be creating one
            if self._legacy is None:
                # Leave time to report kafka-python's own error before the collection deadline.
                timeout_ms = int(deadline.remaining() * 800)
                try:
                    self._legacy = self._legacy_factory(
                        {
                            **self._legacy_config,
                            "bootstrap_timeout_ms": timeout_ms,
                            "request_timeout_ms": max(timeout_ms, 1000),
                        }
                    )
                except Exception as exc:
                    # Called after librdkafka read the metadata from the same servers.
                    self._legacy_failures += 1
                    if self._legacy_failures < LEGACY_BOOTSTRAP_FAILURES_BEFORE_OFF:
                        raise
                    reason = f"kafka-python cannot connect where librdkafka can: {error_text(exc)}"
                    for capability in LEGACY_CAPABILITIES:
                        self._capabilities.unsupported(capability, reason)
                    return None
                self._legacy_failures = 0
            return self._legacy

    def _cluster_info(
        self, legacy: Future[Any], deadline: Deadline, phases: _Phases
    ) -> tuple[Quorum | None, dict[int, str | None]]:
        """The KRaft quorum (for the controller) and the racks; each call fails on its own."""
        client = legacy.result(timeout=deadline.remaining())
        quorum = None
        racks: dict[int, str | None] = {}
        if client is None:
            return quorum, racks
        # Without DescribeQuorum (ZooKeeper mode) the Metadata controller is the real one.
        if self._capabilities.should_ask("describe_quorum"):
            try:
                quorum = _quorum(_retrying(client.describe_metadata_quorum, deadline))
                self._capabilities.supported("describe_quorum")
            except Exception as exc:
                if not self._unsupported("describe_quorum", exc):
                    phases.fail("cluster", f"DescribeQuorum: {error_text(exc)}")
        if self._capabilities.should_ask("describe_cluster"):
            try:
                described = _retrying(client.describe_cluster, deadline)
                racks = {int(b["broker_id"]): b.get("rack") or None for b in described["brokers"]}
                self._capabilities.supported("describe_cluster")
            except Exception as exc:
                if not self._unsupported("describe_cluster", exc):
                    phases.fail("cluster", f"DescribeCluster: {error_text(exc)}")
        return quorum, racks

    def _log_dirs(
        self,
        legacy: Future[Any],
        broker_ids: Iterable[int],
        partitions: Mapping[str, list[int]],
        deadline: Deadline,
    ) -> tuple[BrokerLogDirs, ...]:
        """Each broker's log dirs, for `partitions` (librdkafka's metadata): asked for "all
        topics", kafka-python first reads the whole cluster's metadata on its own, a full
        Metadata answer decoded in Python per broker and collection (0.33 CPU-s per collection at
        2,000 partitions under the profiler, docs/performance.md)."""
        client = legacy.result(timeout=deadline.remaining())
        if client is None or not self._capabilities.should_ask("describe_log_dirs"):
            return ()
        broker_ids = list(broker_ids)
        _align_legacy_metadata(client, broker_ids, deadline)
        calls = {
            b: self._pool.submit(
                client.describe_log_dirs, topic_partitions=dict(partitions), brokers=[b]
            )
            for b in broker_ids
        }
        # Stop waiting for slow brokers a little before the phase itself is given up, so that
        # the brokers that answered are kept and only the slow ones are reported.
        wait(calls.values(), timeout=deadline.remaining(reserve=PER_BROKER_RESERVE_SECONDS))
        results = []
        for broker, call in calls.items():
            try:
                responses = call.result(timeout=0)
                results.append(_broker_log_dirs(broker, responses))
                self._capabilities.supported("describe_log_dirs")
            except Exception as exc:
                if not self._unsupported("describe_log_dirs", exc):
                    results.append(BrokerLogDirs(broker, error_text(exc), ()))
        return tuple(results)


def _align_legacy_metadata(client: Any, broker_ids: list[int], deadline: Deadline) -> None:
    """kafka-python learns of a broker that came back only at its next metadata refresh (up to
    `metadata_max_age_ms`, 5 minutes), librdkafka at once; asked before that, the broker fails
    with UnknownBrokerIdError (issue 20 §1). So kafka-python refreshes whenever librdkafka's
    metadata has a broker it lacks, and the collection waits for that a bounded time."""
    cluster = getattr(getattr(client, "_manager", None), "cluster", None)
    if cluster is None:  # a test double, or another client version: asked as it is
        return
    known = {b.node_id for b in cluster.brokers()}
    if known.issuperset(broker_ids):
        return
    refreshed = threading.Event()
    cluster.request_update().add_both(lambda _: refreshed.set())
    refreshed.wait(deadline.remaining(reserve=2 * PER_BROKER_RESERVE_SECONDS))


def _list_offsets(
    admin: Any, tps: list[TopicPartition], spec: OffsetSpec, timeout: float
) -> Future[Mapping[TopicPartition, Any]]:
    """One ListOffsets call for all partitions, answered by one future: partition -> result (with
    `.offset`) or error.

    `AdminClient.list_offsets` turns the request-level answer of its C base class into a future,
    and so a `threading.Condition`, per partition (4,000 per collection at 2,000 partitions, most
    of the offsets phase's CPU time); the base class's call answers the same mapping at once.
    Any other admin (test doubles) goes through the public per-partition API.
    """
    if isinstance(admin, AdminClient):
        future: Future[Mapping[TopicPartition, Any]] = Future()
        future.set_running_or_notify_cancel()
        value = spec._value  # the ListOffsets code AdminClient.list_offsets sends the same way
        requests = [TopicPartition(tp.topic, tp.partition, value) for tp in tps]
        _AdminClientImpl.list_offsets(admin, requests, future, request_timeout=timeout)
        return future
    per_partition = admin.list_offsets({tp: spec for tp in tps}, request_timeout=timeout)
    combined: Future[Mapping[TopicPartition, Any]] = Future()
    wait(per_partition.values(), timeout=timeout)
    combined.set_result(
        {
            tp: f.exception(timeout=0) or f.result(timeout=0)
            for tp, f in per_partition.items()
            if f.done()
        }
    )
    return combined


def _with_configs_and_offsets(
    topic: Topic,
    configs: Mapping[str, Mapping[str, str]],
    offsets: Mapping[tuple[str, int], tuple[int | None, int | None]],
) -> Topic:
    none = (None, None)
    name = topic.name
    # Positional constructors: dataclasses.replace costs several times more, per partition.
    partitions = tuple(
        Partition(p.partition, p.leader, p.replicas, p.isr, p.offline_replicas, *found)
        for p in topic.partitions
        for found in (offsets.get((name, p.partition), none),)
    )
    configs_of = MappingProxyType(dict(configs.get(name, {})))
    return Topic(name, topic.internal, partitions, configs_of)


def _result(
    future: Future[T], deadline: Deadline, phases: _Phases, phase: str, default: T, started: float
) -> T:
    try:
        return future.result(timeout=deadline.remaining())
    except Exception as exc:
        phases.fail(phase, error_text(exc))
        phases.durations.setdefault(phase, time.monotonic() - started)
        return default


def _retrying(call: Callable[[], T], deadline: Deadline) -> T:
    """`call()`, again after a retriable error (a broker that just came back, a controller
    failing over) while the collection has time left."""
    while True:
        try:
            return call()
        except Exception as exc:
            if not _retriable(exc) or deadline.passed(
                PER_BROKER_RESERVE_SECONDS + RETRY_BACKOFF_SECONDS
            ):
                raise
        time.sleep(RETRY_BACKOFF_SECONDS)


def _moving(outcome: Outcome) -> bool:
    """Unanswered within the collection, still waiting for an earlier answer, answered with a
    coordinator error that a moment later is gone, or cut by the coordinator's connection
    closing (librdkafka's _TRANSPORT; kafka-python flags its KafkaConnectionError retriable)."""
    return isinstance(outcome, TimeoutError | StillWaiting) or (
        isinstance(outcome, BaseException) and (_retriable(outcome) or _cut(outcome))
    )


def _cut(exc: BaseException) -> bool:
    """The request's connection closed under it: the active controller, stopping, closed it
    before the cluster's metadata or ISRs showed any broker moving (CI run of 2026-11-29). An
    authentication or TLS failure, which librdkafka reports with the same code, never is."""
    error = _unwrapped(exc)
    return (
        isinstance(error, KafkaError)
        and error.code() == KafkaError._TRANSPORT
        and kind_of(error.str()) not in ACCESS_KINDS
    )


def _value(outcome: Outcome, key: str, failures: dict[str, str]) -> Any:
    if isinstance(outcome, BaseException):
        failures[key] = error_text(outcome)
        return None
    return outcome


def _by_permission(failures: Mapping[str, str]) -> list[tuple[bool, list[str]]]:
    """(denied, failures): authorization failures apart from the others, each group non-empty;
    `failures` maps a group to its error."""
    denied = [f"{g}: {m}" for g, m in failures.items() if kind_of(m) == AUTHORIZATION]
    other = [f"{g}: {m}" for g, m in failures.items() if kind_of(m) != AUTHORIZATION]
    return [(flag, group) for flag, group in ((True, denied), (False, other)) if group]


def _summary(failures: list[str], total: int, what: str) -> str:
    return f"{len(failures)} of {total} {what} failed, first: {failures[0]}"


def _group(
    group_id: str,
    description: Described | None,
    committed: Any,
    filters: Filters,
    denied: tuple[str, ...],
) -> ConsumerGroup:
    offsets = None
    if committed is not None:
        # Offsets on topics the topic filter excludes are left out like the topics themselves.
        offsets = tuple(
            sorted(
                (
                    CommittedOffset(tp.topic, tp.partition, tp.offset)
                    for tp in committed.topic_partitions
                    if tp.offset >= 0 and tp.error is None and filters.topics.allows(tp.topic)
                ),
                key=lambda c: (c.topic, c.partition),
            )
        )
    if description is None:
        return ConsumerGroup(group_id, None, None, None, None, None, offsets, denied)
    return ConsumerGroup(
        group_id=group_id,
        state=description.state,
        type=description.type,
        protocol=description.protocol,
        coordinator=description.coordinator,
        members=description.members,
        committed=offsets,
        denied=denied,
    )


def _size_limit(configs: Mapping[str, str]) -> bool:
    retention = topic_retention(configs)
    return isinstance(retention, Retention) and retention.bytes is not None


def _quorum(raw: Mapping[str, Any]) -> Quorum | None:
    for topic in raw.get("topics", []):
        for partition in topic.get("partitions", []):
            if partition.get("error"):
                raise RuntimeError(f"DescribeQuorum: {partition['error']}")

            def replica(r: Mapping[str, Any]) -> QuorumReplica:
                return QuorumReplica(
                    id=int(r["replica_id"]),
                    log_end_offset=_non_negative(r.get("log_end_offset")),
                    last_fetch_timestamp_ms=_non_negative(r.get("last_fetch_timestamp")),
                    last_caught_up_timestamp_ms=_non_negative(r.get("last_caught_up_timestamp")),
                )

            return Quorum(
                leader_id=int(partition["leader_id"]),
                voters=tuple(replica(r) for r in partition.get("current_voters", [])),
                observers=tuple(replica(r) for r in partition.get("observers", [])),
            )
    return None


def _non_negative(value: Any) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


def _broker_log_dirs(broker: int, responses: Sequence[Mapping[str, Any]]) -> BrokerLogDirs:
    dirs = []
    for response in responses:
        for d in response.get("log_dirs", []):
            code = int(d.get("error_code", 0))
            dirs.append(
                LogDir(
                    path=d["log_dir"],
                    error=None if code == 0 else kafka_errors.for_code(code).__name__,
                    total_bytes=_non_negative(d.get("total_bytes")),
                    usable_bytes=_non_negative(d.get("usable_bytes")),
                    partitions=tuple(
                        LogDirPartition(
                            topic=t["name"],
                            partition=int(p["partition_index"]),
                            size_bytes=int(p["partition_size"]),
                            offset_lag=int(p["offset_lag"]),
                            is_future=bool(p["is_future_key"]),
                        )
                        for t in d.get("topics", [])
                        for p in t.get("partitions", [])
                    ),
                )
            )
    return BrokerLogDirs(broker, None, tuple(sorted(dirs, key=lambda d: d.path)))
