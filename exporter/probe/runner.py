"""The probe's Kafka adapter: probe topic upkeep, two producers, one consumer, background threads.

    runner = ProbeRunner({"bootstrap.servers": ...}, ProbeSettings(topic="vigia-probe"))
    runner.start()            # returns at once; all Kafka work happens in background threads
    runner.stats()            # ProbeStats for ProbeCollector (None when probing is disabled)
    runner.status             # "disabled" | "starting" | "running" | "off: <reason>"
    runner.stop()

Every `reconcile_interval_seconds` (and at start) the runner reads the cluster metadata and applies
`plan_probe_topic`: CreateTopics with an explicit replica assignment when the topic is missing,
CreatePartitions for brokers that lead none of its partitions. Only the probe topic is ever
created or altered.

When the topic cannot be created (no CreateTopics permission, a policy, librdkafka's mock cluster
which has no controller) and does not exist, probing is off: the log says why at WARNING and the
runner retries at the next reconcile; the rest of the exporter is unaffected. When the topic exists
but cannot be altered (no Alter permission, created by someone else with other partitions, a
broker was added), the runner probes the partitions that exist and attributes each one to the broker
leading it at send time: brokers leading no probe partition then have no probe series, and a broker
leading several has their messages combined. The log says so at WARNING.

Every `interval_seconds` the runner refreshes the leaders of the probe partitions (one Metadata
request for the probe topic) and sends one small message per partition through each producer
(`acks=all` and `acks=1`, `linger.ms=0`, no idempotence so acks=1 is allowed). Produce latency is
librdkafka's own measure from produce() to the acknowledgement. The same refresh records which
brokers lead a probe partition (`coverage`) and, when a partition's preferred leader is back in its
ISR but leads no probe partition (leadership drifts with every broker restart), asks for a
preferred-leader election of that partition, at most once per reconcile interval (Alter on the
cluster; denied, a WARNING says which brokers go unprobed). The consumer is assigned all probe
partitions at their high watermarks (no group membership, no commits); it only counts messages of
this runner instance. Producers' `message.timeout.ms` equals the lost deadline: a message that
cannot be written gets its failure report at about the deadline and counts as `failed`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from confluent_kafka import (
    OFFSET_END,
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # OffsetSpec: not in an __all__
    AdminClient,
    OffsetSpec,
)
from confluent_kafka.cimpl import NewPartitions, NewTopic

from vigia.common.kafka_diagnostics import KafkaDiagnostics, KafkaUnavailable, wait_for_metadata
from vigia.exporter.probe.planner import (
    ProbePartition,
    ProbeTopicPlan,
    coverage,
    plan_probe_topic,
    preferred_elections,
)
from vigia.exporter.probe.tracker import LatencyTracker, ProbeStats

logger = logging.getLogger(__name__)

DEFAULT_TOPIC = "vigia-probe"
RUNNING = "running"
DISABLED = "disabled"
GROUP_PREFIX = "vigia-probe-"
"""The probe consumer's group.id: this prefix and a random instance id (ACL: a prefixed grant)."""
# Kafka's answer when the preferred leader already leads: not a failure.
_ELECTION_NOT_NEEDED = 84
# Probe messages only need to live until they are consumed.
PROBE_TOPIC_CONFIG = {"retention.ms": "3600000", "segment.ms": "3600000"}
_POLL_SECONDS = 0.5
"""The probe thread's pace between rounds: it hands delivery reports over and counts overdue
messages as lost. Latencies are librdkafka's and the consumer's own, so the pace does not change
them; at 0.05 s, this loop was 45 % of an idle exporter's CPU."""


@dataclass(frozen=True, slots=True)
class ProbeSettings:
    enabled: bool = True
    topic: str = DEFAULT_TOPIC
    interval_seconds: float = 5.0
    deadline_seconds: float = 10.0
    """A message not consumed this long after it was sent counts as lost."""
    reconcile_interval_seconds: float = 60.0
    request_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        if not self.topic:
            raise ValueError("probe topic name must not be empty")
        for name in (
            "interval_seconds",
            "deadline_seconds",
            "reconcile_interval_seconds",
            "request_timeout_seconds",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"probe {name} must be > 0, got {getattr(self, name)}")


class ProbeRunner:
    def __init__(
        self,
        kafka_config: Mapping[str, Any],
        settings: ProbeSettings | None = None,
    ) -> None:
        self.settings = settings or ProbeSettings()
        self._kafka_config = dict(kafka_config)
        self._clock = time.monotonic
        self._instance = uuid.uuid4().hex[:16]
        self._tracker = LatencyTracker(self.settings.deadline_seconds)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._status = DISABLED if not self.settings.enabled else "starting"
        self._partitions: dict[int, int] = {}
        self._assigned: frozenset[int] = frozenset()
        self._new_assignment: list[TopicPartition] | None = None
        self._round = 0
        self._admin: AdminClient | None = None
        self._producers: dict[str, Producer] = {}
        self._consumer: Consumer | None = None
        self._diagnostics = KafkaDiagnostics(
            {k: str(v) for k, v in kafka_config.items()}, "vigia.exporter.probe.librdkafka"
        )
        self._coverage: dict[int, bool] = {}
        self._next_election = 0.0
        self._election_failure: str | None = None

    @property
    def status(self) -> str:
        return self._status

    @property
    def partitions(self) -> dict[int, int]:
        """Probe partition → broker its messages are attributed to (leader at the last refresh)."""
        with self._lock:
            return dict(self._partitions)

    def coverage(self) -> dict[int, bool]:
        """Broker → whether it leads a probe partition (at the last refresh of the leaders)."""
        with self._lock:
            return dict(self._coverage)

    def stats(self) -> ProbeStats | None:
        if not self.settings.enabled:
            return None
        with self._lock:
            return self._tracker.stats()

    def start(self) -> None:
        if not self.settings.enabled:
            logger.info("end-to-end probe disabled by configuration (--no-probe)")
            return
        if self._threads:
            raise RuntimeError("probe runner already started")
        logger.info(
            "starting end-to-end probe on topic %r every %.1f s (lost after %.1f s)",
            self.settings.topic,
            self.settings.interval_seconds,
            self.settings.deadline_seconds,
        )
        try:
            self._create_clients()
        except KafkaException as exc:  # e.g. a --kafka-option only producers or consumers refuse
            self._off(f"cannot create its Kafka clients ({_reason(exc)})")
            return
        self._threads = [
            threading.Thread(target=self._probe_loop, name="vigia-probe", daemon=True),
            threading.Thread(target=self._consume_loop, name="vigia-probe-consumer", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        for producer in self._producers.values():
            producer.flush(0)
        self._producers.clear()
        self._admin = None

    # --- clients -----------------------------------------------------------------------------

    def _create_clients(self) -> None:
        deadline_ms = int(self.settings.deadline_seconds * 1000)
        common = {
            **self._kafka_config,
            "allow.auto.create.topics": False,
            **self._diagnostics.client_config(),
        }
        self._admin = AdminClient({**common, "client.id": "vigia-probe-admin"})
        for acks in ("all", "1"):
            self._producers[acks] = Producer(
                {
                    **common,
                    "client.id": f"vigia-probe-acks-{acks}",
                    "acks": acks,
                    "linger.ms": 0,
                    "enable.idempotence": False,
                    "message.timeout.ms": deadline_ms,
                    "request.timeout.ms": min(30_000, deadline_ms),
                }
            )
        self._consumer = Consumer(
            {
                **common,
                "client.id": "vigia-probe-consumer",
                # Required by the client, never used: the consumer is assigned, never subscribes.
                "group.id": f"{GROUP_PREFIX}{self._instance}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "latest",
            }
        )

    # --- background loops --------------------------------------------------------------------

    def _probe_loop(self) -> None:
        next_reconcile = next_round = self._clock()
        while not self._stop.is_set():
            try:
                now = self._clock()
                if now >= next_reconcile:
                    self._reconcile()
                    next_reconcile = self._clock() + self.settings.reconcile_interval_seconds
                if self._status == RUNNING and self._clock() >= next_round:
                    next_round = self._clock() + self.settings.interval_seconds
                    self._send_round()
                for producer in self._producers.values():
                    producer.poll(0)
                if self._admin is not None:
                    self._admin.poll(0)
                with self._lock:
                    self._tracker.expire(self._clock())
            except Exception:
                logger.exception("end-to-end probe round failed; next try in one interval")
                self._stop.wait(self.settings.interval_seconds)
            pause = _POLL_SECONDS
            if self._status == RUNNING:
                pause = min(pause, max(0.0, next_round - self._clock()))
            self._stop.wait(pause)

    def _consume_loop(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while not self._stop.is_set():
            with self._lock:
                assignment, self._new_assignment = self._new_assignment, None
            try:
                if assignment is not None:
                    consumer.assign(assignment)
                    logger.debug("probe consumer assigned %s", assignment)
                message = consumer.poll(_POLL_SECONDS)
            except (KafkaException, RuntimeError) as exc:
                logger.debug("probe consumer poll failed: %s", exc)
                self._stop.wait(0.2)
                continue
            if message is None:
                continue
            at = self._clock()
            if message.error() is not None:
                logger.debug("probe consumer: %s", message.error())
                continue
            message_id = self._own_message_id(message.value())
            if message_id is not None:
                with self._lock:
                    self._tracker.received(message_id, at=at)

    # --- topic upkeep ------------------------------------------------------------------------

    def _reconcile(self) -> None:
        admin = self._admin
        assert admin is not None
        timeout = self.settings.request_timeout_seconds
        topic = self.settings.topic
        try:
            metadata = wait_for_metadata(admin, self._diagnostics, timeout)
        except KafkaUnavailable as exc:
            reason = exc.cause
            if self._status == RUNNING:
                # An unreachable cluster is what the probe must keep measuring (as failed/lost).
                logger.warning("probe topic upkeep skipped: %s", reason)
            else:
                self._off(f"cannot read cluster metadata ({reason}); retrying")
            return
        topics = {
            name: {p.id: list(p.replicas) for p in t.partitions.values()}
            for name, t in metadata.topics.items()
            if t.error is None
        }
        try:
            plan = plan_probe_topic(topic, metadata.brokers.keys(), topics)
        except ValueError as exc:
            self._off(str(exc))
            return
        if plan.create_topic is not None:
            error = self._create_topic(plan)
            if error is not None:
                self._off(
                    f"cannot create probe topic {topic!r} ({error}); grant CreateTopics, create it "
                    f"with one partition led by each broker, or disable the probe (--no-probe)"
                )
                return
        elif plan.new_partitions:
            error = self._add_partitions(plan)
            if error is not None:
                logger.warning(
                    "cannot add probe partitions led by brokers %s to %r (%s): probing the %d "
                    "existing partitions, each attributed to the broker leading it",
                    [replicas[0] for replicas in plan.new_partitions],
                    topic,
                    error,
                    plan.total_partitions - len(plan.new_partitions),
                )
        if not self._refresh_partitions(wait=timeout):
            if self._status != RUNNING:
                self._off(f"probe topic {topic!r} has no partitions in the metadata yet; retrying")
            return
        if self._status != RUNNING:
            logger.info(
                "end-to-end probe running on %r: partition → leader %s", topic, self.partitions
            )
            self._status = RUNNING

    def _create_topic(self, plan: ProbeTopicPlan) -> str | None:
        assert self._admin is not None and plan.create_topic is not None
        timeout = self.settings.request_timeout_seconds
        new_topic = NewTopic(
            plan.topic,
            num_partitions=len(plan.create_topic),
            replica_assignment=[list(r) for r in plan.create_topic],
            config=PROBE_TOPIC_CONFIG,
        )
        futures = self._admin.create_topics(
            [new_topic], request_timeout=timeout, operation_timeout=timeout
        )
        try:
            futures[plan.topic].result(timeout=timeout + 1)
        except KafkaException as exc:
            if _code(exc) == KafkaError.TOPIC_ALREADY_EXISTS:
                return None
            return _reason(exc)
        assignment = [list(r) for r in plan.create_topic]
        logger.info("created probe topic %r with replica assignment %s", plan.topic, assignment)
        return None

    def _add_partitions(self, plan: ProbeTopicPlan) -> str | None:
        assert self._admin is not None
        timeout = self.settings.request_timeout_seconds
        request = NewPartitions(
            plan.topic,
            plan.total_partitions,
            replica_assignment=[list(r) for r in plan.new_partitions],
        )
        futures = self._admin.create_partitions(
            [request], request_timeout=timeout, operation_timeout=timeout
        )
        try:
            futures[plan.topic].result(timeout=timeout + 1)
        except KafkaException as exc:
            return _reason(exc)
        added = [list(r) for r in plan.new_partitions]
        logger.info("added probe partitions %s to %r", added, plan.topic)
        return None

    def _refresh_partitions(self, wait: float) -> bool:
        """Leaders of the probe partitions; retried until `wait` runs out (new topics propagate)."""
        assert self._admin is not None
        give_up = self._clock() + wait
        while True:
            try:
                metadata = self._admin.list_topics(topic=self.settings.topic, timeout=wait)
                description = metadata.topics.get(self.settings.topic)
                if description is not None and description.error is None and description.partitions:
                    break
            except KafkaException as exc:
                logger.debug("probe topic metadata: %s", _reason(exc))
            if self._clock() >= give_up or self._stop.wait(0.2):
                return False
        leaders = {
            p.id: p.leader if p.leader >= 0 else (p.replicas[0] if p.replicas else -1)
            for p in description.partitions.values()
        }
        partitions = [
            ProbePartition(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for p in description.partitions.values()
        ]
        brokers = [b for b in metadata.brokers if b >= 0]
        covered = coverage(brokers, partitions)
        with self._lock:
            self._partitions = leaders
            changed, self._coverage = covered != self._coverage, covered
        if changed:
            logger.info("probe covers brokers %s", _covered_text(covered))
        if frozenset(leaders) != self._assigned:
            self._assign(sorted(leaders))
        self._elect(preferred_elections(brokers, partitions), partitions)
        return True

    def _elect(self, elections: tuple[int, ...], partitions: list[ProbePartition]) -> None:
        """Preferred-leader election for probe partitions whose preferred leader is back and in
        sync but leads none (needs Alter on the cluster); at most once per reconcile interval.
        Never waits: the answer is logged from the future's callback."""
        if not elections or self._clock() < self._next_election:
            return
        assert self._admin is not None
        self._next_election = self._clock() + self.settings.reconcile_interval_seconds
        preferred = {p.partition: p.replicas[0] for p in partitions if p.partition in elections}
        request = [TopicPartition(self.settings.topic, p) for p in elections]
        try:
            # No timeout arguments: confluent-kafka 2.16's elect_leaders rejects them
            # ("more argument specifiers than keyword list entries"); librdkafka's default applies.
            future = self._admin.elect_leaders(ElectionType.PREFERRED, request)
        except (KafkaException, TypeError, ValueError, SystemError) as exc:
            self._election_failed(preferred, str(exc))
            return
        future.add_done_callback(partial(self._elected, preferred))

    def _elected(self, preferred: dict[int, int], future: Any) -> None:
        try:
            results = future.result()
        except Exception as exc:  # the whole request failed: KafkaException, timeout
            reason = _reason(exc) if isinstance(exc, KafkaException) else repr(exc)
            self._election_failed(preferred, reason)
            return
        failures = []
        for tp, error in results.items():
            kafka_error = (
                error.args[0] if isinstance(error, KafkaException) and error.args else None
            )
            if kafka_error is not None and kafka_error.code() != _ELECTION_NOT_NEEDED:
                failures.append(f"partition {tp.partition}: {kafka_error.str()}")
        if failures:
            self._election_failed(preferred, "; ".join(failures))
            return
        self._election_failure = None
        logger.info(
            "probe partitions %s handed back to their preferred leaders %s",
            sorted(preferred),
            [preferred[p] for p in sorted(preferred)],
        )

    def _election_failed(self, preferred: dict[int, int], reason: str) -> None:
        if reason != self._election_failure:
            logger.warning(
                "cannot hand probe partitions %s back to their preferred leaders %s (%s): those "
                "brokers lead no probe partition and are not probed; grant Alter on the cluster "
                "to the exporter's principal (README, ACLs), or run kafka-leader-election.sh",
                sorted(preferred),
                [preferred[p] for p in sorted(preferred)],
                reason,
            )
        self._election_failure = reason

    def _assign(self, partitions: list[int]) -> None:
        """Assign the consumer at the current high watermarks: it sees every probe sent after."""
        assert self._admin is not None
        topic, timeout = self.settings.topic, self.settings.request_timeout_seconds
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # unannotated upstream
        request = {TopicPartition(topic, p): latest for p in partitions}
        positions = dict.fromkeys(partitions, OFFSET_END)
        futures = self._admin.list_offsets(request, request_timeout=timeout)
        for tp, future in futures.items():
            try:
                positions[tp.partition] = future.result(timeout=timeout + 1).offset
            except KafkaException as exc:
                # From the end: probes sent before the position resolves may count as lost.
                logger.debug("probe partition %d high watermark: %s", tp.partition, _reason(exc))
        # librdkafka's assign() blocks while another thread polls: the consumer thread applies it.
        with self._lock:
            self._new_assignment = [TopicPartition(topic, p, positions[p]) for p in partitions]
        self._assigned = frozenset(partitions)

    # --- sending -----------------------------------------------------------------------------

    def _send_round(self) -> None:
        refresh = min(self.settings.request_timeout_seconds, self.settings.interval_seconds / 2)
        self._refresh_partitions(wait=refresh)  # on failure, the last known leaders are used
        self._round += 1
        for partition, broker in sorted(self.partitions.items()):
            for acks, producer in self._producers.items():
                message_id = f"{self._instance}:{self._round}:{partition}:{acks}"
                payload = json.dumps(
                    {"probe": self._instance, "id": message_id, "sent_at": time.time()}
                ).encode()
                with self._lock:
                    self._tracker.sent(
                        message_id,
                        partition=partition,
                        broker=broker,
                        acks=acks,
                        round_id=self._round,
                        at=self._clock(),
                    )
                try:
                    producer.produce(
                        self.settings.topic,
                        payload,
                        partition=partition,
                        on_delivery=partial(self._on_delivery, message_id),
                    )
                except (BufferError, KafkaException) as exc:
                    logger.debug("probe produce to partition %d failed: %s", partition, exc)
                    with self._lock:
                        self._tracker.delivered(message_id, at=self._clock(), error=True)

    def _on_delivery(self, message_id: str, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            logger.debug("probe %s not delivered: %s", message_id, error.str())
        latency = message.latency() if error is None else None
        with self._lock:
            self._tracker.delivered(
                message_id, at=self._clock(), latency=latency, error=error is not None
            )

    def _own_message_id(self, value: bytes | None) -> str | None:
        try:
            body = json.loads(value or b"")
        except ValueError:
            return None
        if not isinstance(body, dict) or body.get("probe") != self._instance:
            return None  # another exporter's probe, or not a probe at all
        message_id = body.get("id")
        return message_id if isinstance(message_id, str) else None

    def _off(self, reason: str) -> None:
        if self._status != f"off: {reason}":
            logger.warning("end-to-end probe off: %s", reason)
        self._status = f"off: {reason}"


def _covered_text(covered: dict[int, bool]) -> str:
    missing = [b for b, ok in covered.items() if not ok]
    leading = [b for b, ok in covered.items() if ok]
    return f"{leading}" + (f"; brokers {missing} lead no probe partition" if missing else "")


def _code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _reason(exc: KafkaException) -> str:
    error = exc.args[0] if exc.args else None
    return (error.str() if isinstance(error, KafkaError) else str(exc)).strip()
