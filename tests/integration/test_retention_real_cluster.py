"""Issue 22 §6 on the real stack: a group stopped with a backlog on a topic that keeps its records
three minutes (the harness's brokers check retention every 5 s), or 1 MiB a partition. The
exporter's retention margin counts down, the group is at risk before Kafka deletes anything, and
once the log start passes the committed offsets, the records counted lost are the offsets actually
deleted: log start offsets read before and after the collection that is checked. By time, the same
drill carries the page itself: a real Prometheus evaluating the repository's rules fires
IngestRetentionAtRisk (after its `for:`) before Kafka deletes the first unread record, and raises
IngestMeasuresLost after.

Written for the shared, busy harness cluster: a topic and group of its own, the exporter filtered
to them, every wait with a deadline. The timeline is printed (pytest -s shows it) for the note.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.exporter.exposition import value
from tests.exporter.live import Running, exporter_process, wait_for
from tests.monitoring.servers import RULE_FILES, PromAPI, derived_prometheus_config
from tests.realstack.topics import create_topic
from tests.servers import PROMETHEUS, start_prometheus, wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 2
PER_SECOND = 20


@dataclass(frozen=True)
class Kind:
    """One way Kafka deletes: the topic's settings and what each message weighs."""

    limit: str
    config: dict[str, str]
    payload: int  # bytes of padding per message
    group: str | None = None  # the stopped group, when a rule names it; else the topic's name


# 1 MiB per partition (Kafka 4's smallest segment): at 20 messages of 8 kB a second, 10 per
# partition, a partition fills its retention in ≈ 13 s and deletes its first segment ≈ 13 s later.
SIZE = Kind("size", {"retention.bytes": str(1 << 20), "segment.bytes": str(1 << 20)}, 8_000)
# The real rules page for the ingest job's group only, IngestRetentionAtRisk after 2 minutes at
# risk (its `for:`). Three minutes of records leave the page its 2 minutes, and the exporter and
# Prometheus the seconds they take to start and see the group at risk.
ALERT_RETENTION_MS = 180_000
ALERT = Kind(
    "time",
    {"retention.ms": str(ALERT_RETENTION_MS), "segment.ms": "5000"},
    0,
    group="vigia-ingest",
)


@dataclass
class Drill:
    bootstrap: str
    name: str  # the topic
    group: str
    kind: Kind
    committed: dict[int, int] = field(default_factory=dict)
    committed_at: float = 0.0
    timeline: list[tuple[float, str]] = field(default_factory=list)

    def mark(self, what: str) -> None:
        self.timeline.append((time.time(), what))

    @functools.cached_property
    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def log_start(self) -> dict[int, int]:
        asked = {TopicPartition(self.name, p): OffsetSpec.earliest() for p in range(PARTITIONS)}
        answers = self.admin.list_offsets(asked, request_timeout=10)
        return {tp.partition: f.result(timeout=15).offset for tp, f in answers.items()}


def _produce_until(stop: threading.Event, bootstrap: str, name: str, payload: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    n = 0
    padding = b"x" * payload
    while not stop.is_set():
        producer.produce(name, value=b'{"n": %d}' % n + padding, partition=n % PARTITIONS)
        producer.poll(0)
        n += 1
        time.sleep(1 / PER_SECOND)
    producer.flush(30)


@pytest.fixture
def drill(request: pytest.FixtureRequest, real_kafka_bootstrap: str) -> Iterator[Drill]:
    """A topic that keeps 1 MiB a partition, or three minutes' records (the alert drill), written
    to for the whole test, and a group that committed its offsets once, a
    few seconds in, and never again."""
    kind: Kind = request.param
    name = f"vigia-it-retention-{kind.limit}-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka_bootstrap, name, PARTITIONS, config=kind.config)
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap})
    stop = threading.Event()
    producer = threading.Thread(
        target=_produce_until, args=(stop, real_kafka_bootstrap, name, kind.payload), daemon=True
    )
    producer.start()
    group = kind.group or name
    found = Drill(real_kafka_bootstrap, name, group, kind)
    try:
        time.sleep(3)
        latest = {
            tp.partition: f.result(timeout=15).offset
            for tp, f in admin.list_offsets(
                {TopicPartition(name, p): OffsetSpec.latest() for p in range(PARTITIONS)},
                request_timeout=10,
            ).items()
        }
        assert all(latest.values()), f"nothing produced in 3 s: {latest}"
        consumer = Consumer({"bootstrap.servers": real_kafka_bootstrap, "group.id": group})
        try:
            consumer.commit(
                offsets=[TopicPartition(name, p, o) for p, o in latest.items()], asynchronous=False
            )
        finally:
            consumer.close()
        found.committed, found.committed_at = latest, time.time()
        found.mark(f"group committed {latest} and stopped; the producer goes on")
        yield found
    finally:
        stop.set()
        producer.join(60)
        admin.delete_topics([name], request_timeout=30)[name].result(timeout=60)
        for future in admin.delete_consumer_groups([group], request_timeout=30).values():
            with contextlib.suppress(KafkaException):
                future.result(timeout=30)
        for at, what in found.timeline:
            print(f"{at - found.committed_at:7.1f} s  {what}")


def _group_topic(exporter: Running, name: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    doc = exporter.get("/api/v1/cluster").json()
    for group in doc.get("groups", ()):
        if group["group_id"] == name and group["topics"]:
            return doc, group
    return None


def _exporter_args(drill: Drill) -> tuple[str, ...]:
    only = ("--topic-include", f"^{drill.name}$", "--group-include", f"^{drill.group}$")
    every = ("--collection-interval", "2", "--collection-timeout", "10", "--catchup-window", "10")
    return ("--bootstrap-servers", drill.bootstrap, "--no-probe", *only, *every)


def _margins_count_down_and_the_group_is_at_risk_before_a_deletion(
    exporter: Running, drill: Drill
) -> None:
    name, group, committed = drill.name, drill.group, drill.committed

    # 1. The margin: the retention less the oldest unread record's age, read from the record.
    def margins() -> tuple[float, dict[int, dict[str, Any]]] | None:
        found = _group_topic(exporter, group)
        if found is None:
            return None
        doc, described = found
        by_partition = {p["partition"]: p["retention_margin"] for p in described["partitions"]}
        if len(by_partition) == PARTITIONS and all(by_partition.values()):
            return doc["collected_at"], by_partition
        return None

    found = wait_for(margins, 60, "a retention margin for every partition")
    assert isinstance(found, tuple)
    first_at, first = found
    drill.mark(f"first margins {[round(m['seconds'], 1) for m in first.values()]} s")
    size = drill.kind is SIZE
    for margin in first.values():
        assert (margin["limit"], margin["method"]) == (
            ("size", "rate") if size else ("time", "record")
        ), margin
        if not size:
            # The record at the committed offset was written just before the commit.
            retention = int(drill.kind.config["retention.ms"]) / 1000
            expected = retention - (first_at - drill.committed_at)
            assert margin["seconds"] == pytest.approx(expected, abs=5.0), margin

    # 2. It counts down: by the time between collections (a record's timestamp never moves),
    # or for size, as the unread bytes grow towards the limit.
    def six_seconds_later() -> tuple[float, dict[int, dict[str, Any]]] | None:
        found = margins()
        return found if found is not None and found[0] >= first_at + 6 else None

    later = wait_for(six_seconds_later, 30, "margins collected 6 s later")
    assert isinstance(later, tuple)
    later_at, now = later
    for p, margin in now.items():
        elapsed = later_at - first_at
        if size:
            assert margin["seconds"] < first[p]["seconds"] or margin["seconds"] == 0, (first, now)
        else:
            assert first[p]["seconds"] - margin["seconds"] == pytest.approx(elapsed, abs=0.5)
    drill.mark(f"margins {[round(m['seconds'], 1) for m in now.values()]} s")

    # 3. At risk (the backlog grows, the margin is under the 6 h floor) before any deletion.
    def at_risk() -> float | None:
        found = _group_topic(exporter, group)
        if found is not None and found[1]["topics"][0]["retention_at_risk"]:
            return float(found[0]["collected_at"])
        return None

    risk_at = wait_for(at_risk, 60, "the group at risk")
    start = drill.log_start()
    assert all(start[p] <= committed[p] for p in committed), (start, committed)
    risk_after = float(risk_at) - drill.committed_at  # type: ignore[arg-type]
    drill.mark(f"at risk (collection at {risk_after:.1f} s); log start {start}")
    metrics = exporter.metrics()
    labels = {"consumergroup": group, "topic": name}
    assert value(metrics, "kafka_consumergroup_retention_at_risk", **labels) == 1
    assert value(metrics, "kafka_consumergroup_catchup_state", **labels) == 3  # growing


def _the_loss_counted_is_what_was_deleted(exporter: Running, drill: Drill) -> None:
    """Log start offsets read before and after one collection bound its lost count, per
    partition; the counter counted each deleted offset once."""
    group, committed = drill.group, drill.committed

    def checked() -> tuple[dict[int, int], dict[int, int], dict[str, Any], Any] | None:
        before, asked_at = drill.log_start(), time.time()
        wait_for(
            lambda: exporter.get("/api/v1/cluster").json()["collected_at"] > asked_at,
            30,
            "a collection after the log start was read",
        )
        # The API between two scrapes of one collection: both say the same collection's counts
        # (at a 2-s interval, retention moving the log start between two collections).
        metrics = exporter.metrics()
        found = _group_topic(exporter, group)
        again = exporter.metrics()
        after = drill.log_start()
        last = "vigia_exporter_last_collection_timestamp_seconds"
        if found is None or found[0]["collected_at"] <= asked_at:
            return None
        if value(metrics, last) != value(again, last):
            return None
        return before, after, found[1], metrics

    result = wait_for(checked, 60, "a collection bounded by log start reads")
    assert isinstance(result, tuple)
    before, after, described, metrics = result
    lost = {p["partition"]: p["lost_messages"] for p in described["partitions"]}
    for p in committed:
        low, high = max(0, before[p] - committed[p]), max(0, after[p] - committed[p])
        assert low <= lost[p] <= high, (p, before, after, committed, lost)
    total = sum(lost.values())
    assert total > 0
    labels = {"consumergroup": group, "topic": drill.name}
    assert value(metrics, "kafka_consumergroup_lost_messages_sum", **labels) == total
    # The exporter saw every deletion happen: it counted each deleted offset once.
    assert value(metrics, "kafka_consumergroup_lost_messages_detected_total", **labels) == total
    assert described["topics"][0]["retention_margin"]["method"] == "deleted"
    drill.mark(f"lost {lost} (log start before {before}, after {after}), counted {total}")


@pytest.mark.parametrize("drill", [SIZE], indirect=True, ids=["size"])
def test_the_margin_counts_down_the_risk_comes_before_the_deletion_and_the_loss_is_counted(
    drill: Drill, tmp_path: Path
) -> None:
    """By size; by time, the alert drill below checks the same on its way to the page."""
    committed = drill.committed
    with exporter_process(tmp_path / "exporter.log", *_exporter_args(drill)) as exporter:
        _margins_count_down_and_the_group_is_at_risk_before_a_deletion(exporter, drill)

        # 4. Kafka deletes past the committed offsets: the oldest segment goes.
        def deleted() -> dict[int, int] | None:
            start = drill.log_start()
            return start if any(start[p] > committed[p] for p in committed) else None

        first_deletion = wait_for(deleted, 150, "retention to delete past a committed offset")
        drill.mark(f"log start passed a committed offset: {first_deletion}")
        _the_loss_counted_is_what_was_deleted(exporter, drill)


def _alert(api: PromAPI, name: str, labels: dict[str, str]) -> dict[str, Any] | None:
    for alert in api.client.get("/api/v1/alerts").json()["data"]["alerts"]:
        if alert["labels"]["alertname"] == name and labels.items() <= alert["labels"].items():
            return dict(alert)
    return None


@pytest.mark.prometheus
@pytest.mark.parametrize("drill", [ALERT], indirect=True, ids=["alert"])
def test_the_real_rules_page_before_retention_deletes_and_page_the_loss_after(
    drill: Drill, tmp_path: Path
) -> None:
    """Debian's Prometheus scrapes the exporter every 2 s and evaluates the repository's rule
    files as they are: IngestRetentionAtRisk fires while the log start offsets, read after it was
    seen firing, are still at or below the group's committed offsets; IngestMeasuresLost is raised
    once they passed them."""
    if PROMETHEUS is None:
        pytest.skip("not installed: prometheus (Debian package prometheus)")
    topic, group, committed = drill.name, drill.group, drill.committed
    with exporter_process(tmp_path / "exporter.log", *_exporter_args(drill)) as exporter:
        config = derived_prometheus_config(
            tmp_path,
            {"vigia-exporter": [exporter.url.removeprefix("http://")]},
            RULE_FILES,
            interval="2s",
        )
        prometheus = start_prometheus(config, tmp_path / "data", tmp_path / "prometheus.log")
        try:
            api = PromAPI(prometheus.url)
            labels = {"cluster": "smartmeter", "consumergroup": group, "topic": topic}
            drill.mark("exporter and Prometheus started")
            # The exporter's verdict first (the time drill), while the rule's 2 minutes run.
            _margins_count_down_and_the_group_is_at_risk_before_a_deletion(exporter, drill)

            def not_deleted_yet() -> float:
                """When the log start offsets were read, all still at or below the committed."""
                asked_at, start = time.time(), drill.log_start()
                assert all(start[p] <= committed[p] for p in committed), (
                    f"retention deleted past the committed offsets {committed} (log start "
                    f"{start}) before IngestRetentionAtRisk fired"
                )
                return asked_at

            # 1. Pending, then firing after the rule's 2 minutes. Every look at the alert is
            # followed by a read of the log start offsets, which must not have passed the group's.
            def seen(state: str) -> tuple[float, dict[str, Any]] | None:
                alert = _alert(api, "IngestRetentionAtRisk", labels)
                seen_at = time.time()
                not_deleted_yet()
                return (seen_at, alert) if alert is not None and alert["state"] == state else None

            _, pending = wait_until(
                lambda: seen("pending") or seen("firing"), 60, "the alert pending", interval=1
            )
            drill.mark(
                f"IngestRetentionAtRisk {pending['state']}, margin {float(pending['value']):.0f} s"
            )
            fired_at, page = wait_until(
                lambda: seen("firing"), ALERT_RETENTION_MS / 1000, "the page", interval=1
            )
            whole_at = not_deleted_yet()
            drill.mark(
                f"IngestRetentionAtRisk firing, margin {float(page['value']):.0f} s: "
                f"{page['annotations']['summary']!r}"
            )
            assert page["labels"]["severity"] == "critical"
            # A stopped group's backlog grows: no catch-up time, and the page says so.
            assert "forever at this pace" in page["annotations"]["description"], page

            # 2. Kafka deletes past the committed offsets once the segment holding the first
            # unread record is older than the retention.
            def deleted() -> tuple[float, dict[int, int]] | None:
                nonlocal whole_at
                asked_at, start = time.time(), drill.log_start()
                if any(start[p] > committed[p] for p in committed):
                    return asked_at, start
                whole_at = asked_at
                return None

            deleted_at, first_deletion = wait_until(
                deleted, 90, "retention to delete past a committed offset", interval=1
            )
            assert fired_at < whole_at < deleted_at
            drill.mark(f"log start passed a committed offset: {first_deletion}")
            drill.mark(
                f"the page came {whole_at - fired_at:.1f} to {deleted_at - fired_at:.1f} s "
                "before the first deletion"
            )

            # 3. The loss alert is raised (pending: its `for: 1m`, which promtool's tests cover,
            # would add a minute of CI and prove nothing more about Kafka).
            def loss_raised() -> dict[str, Any] | None:
                return _alert(api, "IngestMeasuresLost", labels)

            loss = wait_until(loss_raised, 60, "IngestMeasuresLost raised", interval=1)
            after = drill.log_start()
            deleted_unread = sum(max(0, after[p] - committed[p]) for p in committed)
            assert 0 < float(loss["value"]) <= deleted_unread, (loss, after, committed)
            drill.mark(
                f"IngestMeasuresLost {loss['state']}: {float(loss['value']):.0f} lost "
                f"(then {deleted_unread} deleted unread, log start {after})"
            )
            _the_loss_counted_is_what_was_deleted(exporter, drill)
        finally:
            prometheus.stop()
