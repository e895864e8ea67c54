"""Slow-changing phases (log dirs, configs, quorum and racks) reused for --slow-phase-interval, and
asked again at once when what they depend on changes or they failed (issue 24)."""

from __future__ import annotations

from dataclasses import replace

from kafka import errors as kafka_errors

from tests.exporter.fake_kafka import FakeCluster, Faults
from tests.exporter.recorded import snapshot
from vigia.exporter.kafka.slow_phases import SlowPhases

SLOW = ("describe_log_dirs", "describe_configs", "describe_metadata_quorum", "describe_cluster")


def test_an_answer_is_reused_until_it_is_old_or_its_key_changes() -> None:
    now = [100.0]
    phases = SlowPhases(60.0, clock=lambda: now[0])
    phases.keep("log_dirs", "k", "answer", 0.5, complete=True)
    assert phases.reusable("log_dirs", "k") is not None
    assert phases.reusable("log_dirs", "other key") is None
    now[0] = 159.0
    assert phases.reusable("log_dirs", "k") is not None  # asked at 99.5: 59.5 s old
    now[0] = 159.5
    assert phases.reusable("log_dirs", "k") is None
    phases.keep("log_dirs", "k", "partial", 0.5, complete=False)
    now[0] = 159.6
    assert phases.reusable("log_dirs", "k") is None  # an incomplete answer is never reused
    assert SlowPhases(0.0).reusable("log_dirs", "k") is None


def _slow_calls(fake: FakeCluster) -> dict[str, int]:
    return {name: fake.calls[name] for name in SLOW}


def test_slow_phases_are_reused_and_the_snapshot_is_the_same() -> None:
    recorded = snapshot("healthy")
    fake = FakeCluster(recorded)
    adapter = fake.adapter(slow_phase_interval=60.0)
    try:
        first = adapter.collect(timeout=5)
        fake.calls.clear()
        second = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert _slow_calls(fake) == dict.fromkeys(SLOW, 0)
    assert fake.calls["list_topics"] == 1 and fake.calls["list_group_offsets"] == 1
    assert second.ok
    same = ("log_dirs", "topics", "quorum", "brokers", "broker_min_insync_replicas")
    assert all(getattr(second, field) == getattr(first, field) for field in same)
    assert second.durations["log_dirs"] == first.durations["log_dirs"]


def test_a_broker_that_stops_is_down_at_once_and_the_slow_phases_asked_again() -> None:
    recorded, down = snapshot("healthy"), snapshot("broker-down")
    fake = FakeCluster(recorded)
    adapter = fake.adapter(slow_phase_interval=60.0)
    try:
        adapter.collect(timeout=5)
        fake.snapshot = down
        fake.calls.clear()
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert [b.id for b in collected.brokers] == [b.id for b in down.brokers]
    assert {b.broker for b in collected.log_dirs} == {b.broker for b in down.log_dirs}
    assert fake.calls["describe_log_dirs"] == len(down.brokers)
    assert fake.calls["describe_metadata_quorum"] == 1 and fake.calls["describe_configs"] == 2


def test_a_new_topic_is_sized_and_configured_at_once() -> None:
    recorded = snapshot("healthy")
    fake = FakeCluster(recorded)
    adapter = fake.adapter(slow_phase_interval=60.0)
    try:
        adapter.collect(timeout=5)
        events = next(t for t in recorded.topics if t.name == "events")
        fake.snapshot = replace(recorded, topics=(*recorded.topics, replace(events, name="new")))
        fake.calls.clear()
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert fake.calls["describe_configs"] == 2
    assert fake.calls["describe_log_dirs"] == len(recorded.brokers)
    assert fake.calls["describe_metadata_quorum"] == 0  # the brokers did not change
    assert next(t for t in collected.topics if t.name == "new").configs == events.configs


def test_a_broker_that_did_not_answer_is_asked_again_at_the_next_collection() -> None:
    recorded = snapshot("healthy")
    error = kafka_errors.KafkaTimeoutError("slow")
    fake = FakeCluster(recorded, Faults(log_dirs_brokers={2: error}))
    adapter = fake.adapter(slow_phase_interval=60.0)
    try:
        adapter.collect(timeout=5)
        fake.faults = Faults()
        fake.calls.clear()
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert fake.calls["describe_log_dirs"] == len(recorded.brokers)
    assert all(b.error is None for b in collected.log_dirs)
    assert fake.calls["describe_configs"] == 0  # complete: reused


def test_sizes_are_asked_every_collection_while_a_topic_has_a_size_limit() -> None:
    """Its retention margin is the unread share of the partition's size: a size a minute old
    beside offsets read now would put the loss later than it is."""
    recorded = snapshot("healthy")
    events = next(t for t in recorded.topics if t.name == "events")
    limited = replace(events, configs={**events.configs, "retention.bytes": str(1 << 30)})
    fake = FakeCluster(
        replace(recorded, topics=tuple(limited if t is events else t for t in recorded.topics))
    )
    adapter = fake.adapter(slow_phase_interval=60.0)
    try:
        adapter.collect(timeout=5)
        fake.calls.clear()
        adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert fake.calls["describe_log_dirs"] == len(recorded.brokers)
    assert fake.calls["describe_configs"] == 0 and fake.calls["describe_metadata_quorum"] == 0
