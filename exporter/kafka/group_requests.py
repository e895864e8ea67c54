"""Consumer-group requests of one collection: batched per coordinator, answered on one queue.

At 2,000 groups a collection used to hold two futures per group (DescribeGroups and OffsetFetch)
and scan them all on every wake-up (34,000 `Future.done()` calls per collection,
docs/performance.md). Here kafka-python asks each coordinator once for all its groups
(`describe_groups`: DescribeGroups, `list_group_offsets`: OffsetFetch v8, KIP-709), each call
reports all its groups' outcomes at once on `GroupAnswers`' queue, and the collection waits on that
queue: one wake-up per answer, whatever the number of groups. librdkafka's per-group futures
(ConsumerGroupDescribe for consumer-protocol groups, which kafka-python 3.0 cannot send) report on
the same queue through a done-callback.
"""

from __future__ import annotations

import queue
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from kafka import errors as kafka_errors
from kafka.protocol.metadata import CoordinatorType

from vigia.exporter.model.snapshot import GroupMember, TopicPartitionRef

DESCRIBE, OFFSETS = "describe", "offsets"
# An outcome is what a group's request answered: its value, or the exception it failed with.
Outcome = Any
# kafka-python's DescribeGroups errors come as text, "[Error 16] NotCoordinatorError: ...".
_ERROR_TEXT = re.compile(r"\[Error (-?\d+)\] \w+: ?(.*)", re.DOTALL)
# DescribeGroups' state strings (Kafka's) in the names confluent-kafka's enum gives them, which
# the metrics and the API show.
_STATES = {
    "Stable": "STABLE",
    "Empty": "EMPTY",
    "PreparingRebalance": "PREPARING_REBALANCING",
    "CompletingRebalance": "COMPLETING_REBALANCING",
    "Dead": "DEAD",
}


# A group's state and type as ListGroups (v5) names them, each None where the broker does not say.
Listed = tuple[str | None, str | None]


@dataclass(frozen=True, slots=True)
class DescribePlan:
    """Which groups a collection describes, and how."""

    # Listed EMPTY: no member to describe. (type, assignor): a classic group's is "" (Kafka clears
    # it when the group empties), a consumer-protocol group's is its last description's.
    empty: Mapping[str, tuple[str, str]]
    classic: list[str]  # kafka-python's DescribeGroups, one request per coordinator
    other: list[str]  # librdkafka: ConsumerGroupDescribe, and DescribeGroups where that fails


def plan_describes(
    group_ids: Iterable[str],
    listed: Mapping[str, Listed],
    assignors: Mapping[str, str],
    kafka_python: bool,
) -> DescribePlan:
    """Groups ListGroups lists as EMPTY are not described (an empty consumer-protocol group only
    once, for its assignor); classic groups go through kafka-python when it is connected, all the
    others (consumer-protocol groups, groups of unknown type or state) through librdkafka."""
    empty: dict[str, tuple[str, str]] = {}
    classic: list[str] = []
    other: list[str] = []
    for group_id in group_ids:
        state, group_type = listed.get(group_id, (None, None))
        if not kafka_python:
            other.append(group_id)
        elif state == "EMPTY" and group_type == "CLASSIC":
            empty[group_id] = (group_type, "")
        elif state == "EMPTY" and group_type == "CONSUMER" and group_id in assignors:
            empty[group_id] = (group_type, assignors[group_id])
        elif group_type == "CLASSIC":
            classic.append(group_id)
        else:
            other.append(group_id)
    return DescribePlan(empty, classic, other)


@dataclass(frozen=True, slots=True)
class Described:
    """A group's description, whichever client or request it came from."""

    state: str | None
    type: str | None
    protocol: str | None
    coordinator: int | None
    members: tuple[GroupMember, ...]


class GroupAnswers:
    """Each group's outcome per kind, as the answers come. Only the collecting thread calls
    `expect`, `watch` and `wait`; `report` is called from any thread."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[str, Mapping[str, Outcome], int]] = queue.SimpleQueue()
        self._outstanding = 0
        self.asked: dict[str, set[str]] = {DESCRIBE: set(), OFFSETS: set()}
        self.outcomes: dict[str, dict[str, Outcome]] = {DESCRIBE: {}, OFFSETS: {}}

    @property
    def waiting(self) -> bool:
        return self._outstanding > 0

    def expect(self, kind: str, group_ids: Iterable[str], reports: int = 1) -> None:
        """`reports` answers will come for these groups (through `report`)."""
        self.asked[kind].update(group_ids)
        self._outstanding += reports

    def report(self, kind: str, outcomes: Mapping[str, Outcome], more: int = 0) -> None:
        """One expected answer; `more` announces that many further ones (a batch that failed
        and is asked again group by group)."""
        self._queue.put((kind, outcomes, more))

    def watch(self, kind: str, futures: Mapping[str, Future[Any]]) -> None:
        """Per-group futures (librdkafka's), each reporting when done."""
        self.expect(kind, futures, len(futures))
        for group_id, future in futures.items():
            future.add_done_callback(self._reporter(kind, group_id))

    def _reporter(self, kind: str, group_id: str) -> Callable[[Future[Any]], None]:
        def report(future: Future[Any]) -> None:
            self._queue.put((kind, {group_id: _outcome(future)}, 0))

        return report

    def wait(self, timeout: float) -> dict[str, dict[str, Outcome]] | None:
        """The outcomes that arrived (at least one answer, waiting up to `timeout`), or None."""
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        arrived: dict[str, dict[str, Outcome]] = {DESCRIBE: {}, OFFSETS: {}}
        item: tuple[str, Mapping[str, Outcome], int] | None = first
        while item is not None:
            kind, outcomes, more = item
            self._outstanding += more - 1
            arrived[kind].update(outcomes)
            self.outcomes[kind].update(outcomes)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                item = None
        return arrived


def _outcome(future: Future[Any]) -> Outcome:
    if future.cancelled():
        return CancelledError()
    return future.exception() or future.result()


class LegacyGroups:
    """Group requests through kafka-python: one call for all the groups (kafka-python sends one
    request per coordinator), and, when that call fails (kafka-python fails it whole for one
    coordinator's or group's error), one per group so that each failure stays with its group."""

    def __init__(self, client: Any, pool: ThreadPoolExecutor, answers: GroupAnswers) -> None:
        self._client = client
        self._pool = pool
        self._answers = answers

    def offsets(self, group_ids: list[str]) -> None:
        self._ask(OFFSETS, group_ids, self._offsets)

    def describe(self, group_ids: list[str]) -> None:
        self._ask(DESCRIBE, group_ids, self._describe)

    def _ask(
        self, kind: str, group_ids: list[str], call: Callable[[list[str]], dict[str, Outcome]]
    ) -> None:
        if group_ids:
            self._answers.expect(kind, group_ids)
            self._pool.submit(self._all, kind, group_ids, call)

    def _all(
        self, kind: str, group_ids: list[str], call: Callable[[list[str]], dict[str, Outcome]]
    ) -> None:
        try:
            answered = call(group_ids)
        except Exception:
            self._answers.report(kind, {}, more=len(group_ids))
            for group_id in group_ids:
                self._pool.submit(self._one, kind, group_id, call)
            return
        self._answers.report(kind, {g: self._settled(kind, g, answered) for g in group_ids})

    def _one(
        self, kind: str, group_id: str, call: Callable[[list[str]], dict[str, Outcome]]
    ) -> None:
        try:
            answered = call([group_id])
        except Exception as exc:
            if isinstance(exc, _COORDINATOR_GONE):
                forget_coordinator(self._client, group_id)
            self._answers.report(kind, {group_id: exc})
            return
        self._answers.report(kind, {group_id: self._settled(kind, group_id, answered)})

    def _settled(self, kind: str, group_id: str, answered: Mapping[str, Outcome]) -> Outcome:
        outcome = answered.get(group_id)
        if outcome is None:
            return RuntimeError(f"{_REQUEST[kind]}: no answer for group {group_id}")
        if isinstance(outcome, _COORDINATOR_GONE):
            forget_coordinator(self._client, group_id)
        return outcome

    def _offsets(self, group_ids: list[str]) -> dict[str, Outcome]:
        answered = self._client.list_group_offsets(group_ids)
        return {g: _committed(g, offsets) for g, offsets in answered.items()}

    def _describe(self, group_ids: list[str]) -> dict[str, Outcome]:
        answered = self._client.describe_groups(group_ids)
        return {
            g: from_kafka_python(g, found, coordinator_of(self._client, g))
            for g, found in answered.items()
        }


_REQUEST = {DESCRIBE: "DescribeGroups", OFFSETS: "OffsetFetch"}

# A cached coordinator that is no longer (or not yet) the group's, or whose broker is down: while
# broker 3 was stopped, 206 of 314 groups failed every collection with NodeNotReadyError: 3,
# asking the stopped broker again and again, until a collection overran its timeout.
_COORDINATOR_GONE = (
    kafka_errors.NotCoordinatorError,
    kafka_errors.CoordinatorNotAvailableError,
    kafka_errors.NodeNotReadyError,
    kafka_errors.KafkaConnectionError,
    kafka_errors.UnknownBrokerIdError,
)


def _cached_coordinators(client: Any) -> dict[Any, Any] | None:
    cluster = getattr(getattr(client, "_manager", None), "cluster", None)
    cached = getattr(cluster, "_coordinators", None)
    return cached if isinstance(cached, dict) else None


def forget_coordinator(client: Any, group_id: str) -> None:
    """kafka-python 3.0's admin client caches each group's coordinator for its whole life and
    never drops it, not even when that broker answers NOT_COORDINATOR or is down: once a
    coordinator moved (a broker restarted, leaders went back to their preferred replicas), the
    group's committed offsets were never read again (seen on the real stack: 70 s of
    NotCoordinatorError until the exporter stopped). Dropping the entry makes its next call find
    the coordinator again."""
    cached = _cached_coordinators(client)
    if cached is not None:
        # list(): a C-level copy, safe while kafka-python's IO thread adds entries.
        for key in list(cached):
            if isinstance(key, tuple) and key[-1] == group_id:
                cached.pop(key, None)


def forget_gone_groups(client: Any, listed: Iterable[str]) -> None:
    """Drop the cached coordinators of groups that are no longer listed: kafka-python keeps one
    for every group it was ever asked about, so a cluster whose groups come and go would grow the
    cache, and the exporter's memory, without bound."""
    cached = _cached_coordinators(client)
    if cached is None:
        return
    keep = set(listed)
    for key in list(cached):
        if isinstance(key, tuple) and key[0] == CoordinatorType.GROUP and key[-1] not in keep:
            cached.pop(key, None)


def coordinator_of(client: Any, group_id: str) -> int | None:
    """The group's coordinator as kafka-python last found it (its OffsetFetch and DescribeGroups
    look it up), or None."""
    cached = _cached_coordinators(client)
    found = None if cached is None else cached.get((CoordinatorType.GROUP, group_id))
    return found if isinstance(found, int) else None


def _committed(group_id: str, offsets: Mapping[Any, Any]) -> ConsumerGroupTopicPartitions:
    """kafka-python's {TopicPartition: OffsetAndMetadata} in confluent-kafka's form."""
    return ConsumerGroupTopicPartitions(
        group_id, [TopicPartition(tp.topic, tp.partition, om.offset) for tp, om in offsets.items()]
    )


def from_kafka_python(group_id: str, found: Mapping[str, Any], coordinator: int | None) -> Outcome:
    """kafka-python's DescribeGroups dict as a `Described`, or its group error as the exception
    kafka-python would raise for it (so that retriable and authorization errors read as such)."""
    error = found.get("error")
    if error:
        match = _ERROR_TEXT.fullmatch(str(error))
        if match is None:
            return RuntimeError(f"DescribeGroups {group_id}: {error}")
        error_class = kafka_errors.for_code(int(match.group(1)))
        return error_class(match.group(2) or f"DescribeGroups failed for group '{group_id}'")
    members = []
    for m in found.get("members") or ():
        assignment = m.get("member_assignment")
        # kafka-python leaves bytes it cannot decode (another protocol than "consumer") as is.
        assigned = assignment.get("assigned_partitions") if isinstance(assignment, dict) else None
        members.append(
            GroupMember(
                member_id=m["member_id"],
                client_id=m["client_id"],
                host=m["client_host"],
                assignment=tuple(
                    sorted(
                        (
                            TopicPartitionRef(t["topic"], p)
                            for t in assigned or ()
                            for p in t["partitions"]
                        ),
                        key=_ref_order,
                    )
                ),
            )
        )
    return Described(
        state=_STATES.get(found.get("group_state") or "", "UNKNOWN"),
        type="CLASSIC",
        protocol=found.get("protocol_data"),
        coordinator=coordinator,
        members=tuple(members),
    )


def from_librdkafka(description: Any) -> Described:
    """confluent-kafka's ConsumerGroupDescription as a `Described`."""
    coordinator = getattr(description, "coordinator", None)
    return Described(
        state=enum_name(description.state),
        type=enum_name(getattr(description, "type", None)),
        protocol=description.partition_assignor,
        coordinator=coordinator.id if coordinator is not None else None,
        members=tuple(
            GroupMember(
                member_id=m.member_id,
                client_id=m.client_id,
                host=m.host,
                assignment=tuple(
                    sorted(
                        (
                            TopicPartitionRef(tp.topic, tp.partition)
                            for tp in (m.assignment.topic_partitions if m.assignment else None)
                            or ()
                        ),
                        key=_ref_order,
                    )
                ),
            )
            for m in description.members
        ),
    )


def _ref_order(ref: TopicPartitionRef) -> tuple[str, int]:
    return ref.topic, ref.partition


def enum_name(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "name", value))
