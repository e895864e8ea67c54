"""The Kafka adapter against fake clients that answer with the recorded cluster's data."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace

import pytest
from confluent_kafka import KafkaError
from kafka import errors as kafka_errors

from benchmarks.exporter_snapshot import synthetic_snapshot
from tests.conftest import SCENARIOS
from tests.exporter.fake_kafka import FakeCluster, Faults, kafka_exception
from tests.exporter.recorded import snapshot
from vigia.exporter.kafka.adapter import OFFSETS_PER_CALL
from vigia.exporter.model.filters import Filters, NameFilter
from vigia.exporter.model.snapshot import GROUP_COORDINATOR_PHASE, ClusterSnapshot
from vigia.exporter.model.state import derive


def _comparable(collected: ClusterSnapshot, recorded: ClusterSnapshot) -> ClusterSnapshot:
    """The adapter's snapshot with the fields a recording cannot have set to the recording's."""
    assert collected.broker_min_insync_replicas == 2  # from the broker DescribeConfigs
    assert set(collected.durations) >= {"metadata", "configs", "offsets", "total"}
    return replace(
        collected,
        collected_at=recorded.collected_at,
        durations=recorded.durations,
        broker_min_insync_replicas=None,
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_adapter_rebuilds_the_recorded_snapshot(scenario: str) -> None:
    recorded = snapshot(scenario)
    adapter = FakeCluster(recorded).adapter()
    try:
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert _comparable(collected, recorded) == recorded
    # The controller comes from the quorum, not from the metadata's "controller" (3 in the fake).
    assert (collected.controller_id, collected.controller_source) == (2, "quorum")


def _collect_healthy(faults: Faults, timeout: float = 5) -> tuple[FakeCluster, ClusterSnapshot]:
    """One collection of the recorded healthy cluster under `faults`."""
    fake = FakeCluster(snapshot("healthy"), faults)
    adapter = fake.adapter()
    try:
        return fake, adapter.collect(timeout=timeout)
    finally:
        adapter.close()


def _calls_per_collection(cluster: ClusterSnapshot) -> dict[str, int]:
    fake = FakeCluster(cluster)
    adapter = fake.adapter()
    try:
        adapter.collect(timeout=5)
        fake.calls.clear()
        collected = adapter.collect(timeout=5)  # the steady state: clients already bootstrapped
    finally:
        adapter.close()
    assert collected.ok, collected.errors
    return dict(fake.calls)


def test_requests_grow_with_brokers_and_groups_and_offsets_with_partitions_per_500() -> None:
    def expected(brokers: int, groups: int, partitions: int) -> dict[str, int]:
        return {
            "list_topics": 1,  # one Metadata request
            "describe_configs": 2,  # all topics in one call, one broker's defaults
            # earliest and latest, OFFSETS_PER_CALL partitions per call (librdkafka's cost per
            # call grows faster than its partitions)
            "list_offsets": 2 * -(-partitions // OFFSETS_PER_CALL),
            "list_consumer_groups": 1,
            "describe_consumer_groups": 1,
            # kafka-python: one OffsetFetch per coordinator for all its groups (librdkafka's
            # admin OffsetFetch crashes on NOT_COORDINATOR, exporter/kafka/adapter.py)
            "list_group_offsets": 1,
            "describe_metadata_quorum": 1,
            "describe_cluster": 1,
            "describe_log_dirs": brokers,  # one per broker so that one failure hides nothing
        }

    recorded = snapshot("healthy")
    partitions = sum(len(t.partitions) for t in recorded.topics)
    assert _calls_per_collection(recorded) == expected(3, 5, partitions)
    assert _calls_per_collection(synthetic_snapshot(3, 60, 3, 5)) == expected(3, 5, 60)
    assert _calls_per_collection(synthetic_snapshot(3, 6000, 3, 5)) == expected(3, 5, 6000)
    assert _calls_per_collection(synthetic_snapshot(6, 60, 3, 20)) == expected(6, 20, 60)


def test_a_broker_absent_from_metadata_is_not_asked_and_is_no_error() -> None:
    recorded = snapshot("broker-down")
    fake = FakeCluster(recorded)
    adapter = fake.adapter()
    try:
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert collected.ok, collected.errors
    assert fake.calls["describe_log_dirs"] == 2  # brokers 2 and 3, not the stopped broker 1
    assert [(b.broker, b.error, len(b.log_dirs)) for b in collected.log_dirs] == [
        (2, None, 1),
        (3, None, 1),
    ]
    assert all(t.partitions[0].latest_offset is not None for t in collected.topics)
    assert len(collected.groups) == 5


def test_offsets_of_partitions_led_by_an_unreachable_broker_are_missing_the_rest_kept() -> None:
    _, collected = _collect_healthy(Faults(offsets_leader_down=2))
    ((phase, message),) = [(e.phase, e.message) for e in collected.errors]
    assert phase == "offsets"
    assert re.match(r"44 of 136 partition offsets failed, first: .*leader unreachable", message)
    for t in collected.topics:
        for p in t.partitions:
            assert (p.latest_offset is None) == (p.leader == 2)
    state = derive(None, collected)
    lags = {(i.group, i.partition): i.lag for i in state.group_lags if i.topic == "measure"}
    assert lags[("billing", 1)] is None  # measure-1 is led by broker 2
    assert lags[("billing", 0)] == 37_487 - 37_314  # measure-0 is led by broker 1


def test_partitions_whose_leader_says_its_epoch_moves_until_the_deadline_are_named() -> None:
    """Recorded on the real cluster (CI run of 2026-11-30): a broker behind on the metadata
    answered UNKNOWN_LEADER_EPOCH for 86 partitions it led until the collection's deadline; that
    collection's metadata, read before the leaders moved, showed no change."""
    _, collected = _collect_healthy(Faults(offsets_leader_behind=2), timeout=3)
    ((phase, message),) = [(e.phase, e.message) for e in collected.errors]
    assert phase == "offsets"
    assert "UNKNOWN_LEADER_EPOCH" in message
    led_by_2 = {
        (t.name, p.partition) for t in collected.topics for p in t.partitions if p.leader == 2
    }
    assert led_by_2 and collected.leaders_moving == led_by_2
    assert derive(None, collected).brokers_moved_at == {2: collected.collected_at}
    assert derive(None, collected).up


def test_partitions_whose_leader_is_unreachable_are_no_leader_motion() -> None:
    _, collected = _collect_healthy(Faults(offsets_leader_down=2), timeout=3)
    assert collected.errors and collected.leaders_moving == frozenset()
    assert not derive(None, collected).up


def test_metadata_failure_yields_no_cluster_data() -> None:
    error = kafka_exception(
        KafkaError._TRANSPORT, "Failed to get metadata: Local: Broker transport failure"
    )
    fake, collected = _collect_healthy(Faults(metadata=error))
    assert [(e.phase, e.message) for e in collected.errors] == [
        (
            "metadata",
            "KafkaError _TRANSPORT: Failed to get metadata: Local: Broker transport failure",
        )
    ]
    assert not collected.has_metadata
    assert (collected.brokers, collected.topics, collected.groups) == ((), (), ())
    assert fake.calls == {"list_topics": 1}


def test_a_hanging_call_is_bounded_by_the_collection_timeout() -> None:
    fake = FakeCluster(snapshot("healthy"), Faults(hang={"list_offsets", "describe_log_dirs"}))
    adapter = fake.adapter()
    try:
        started = time.monotonic()
        collected = adapter.collect(timeout=0.5)
        elapsed = time.monotonic() - started
    finally:
        fake.released.set()
        adapter.close()
    assert elapsed < 1.5
    # A broker that does not answer for its log dirs is a fact about that broker (issue 20 §1).
    assert collected.failed_phases == {"offsets"}
    assert set(collected.broker_failures) == {(b.id, "log_dirs") for b in collected.brokers}
    assert all(p.latest_offset is None for t in collected.topics for p in t.partitions)
    assert collected.groups and collected.quorum is not None  # the other phases still answered


def test_without_kafka_python_the_rest_is_collected_then_its_apis_count_as_missing() -> None:
    error = kafka_errors.KafkaTimeoutError("Unable to bootstrap from fake:9092")
    fake = FakeCluster(snapshot("healthy"), Faults(legacy_bootstrap=error))
    adapter = fake.adapter()
    try:
        collected = adapter.collect(timeout=5)
        offset_fetches_before_off = fake.calls["list_consumer_group_offsets"]
        # librdkafka reads the metadata, kafka-python cannot connect twice in a row (what
        # librdkafka's mock cluster does): its APIs are capabilities the cluster lacks.
        second = adapter.collect(timeout=5)
        third = adapter.collect(timeout=5)
    finally:
        adapter.close()
    # Its committed offsets are not asked through librdkafka while kafka-python may still
    # connect (librdkafka's admin OffsetFetch crashes on a coordinator error), only once it is off.
    assert collected.failed_phases == {"cluster", "log_dirs", "group_offsets"}
    assert "Unable to bootstrap" in collected.errors[0].message
    (not_asked,) = [e.message for e in collected.errors if e.phase == "group_offsets"]
    assert not_asked.startswith("not asked: kafka-python is not connected (")
    assert offset_fetches_before_off == 0
    assert third.groups and all(g.committed is not None for g in third.groups)
    assert (collected.controller_id, collected.controller_source) == (3, "metadata")
    assert collected.log_dirs == () and len(collected.topics) == 5
    assert second.ok and third.ok, (second.errors, third.errors)
    off = {c: False for c in ("describe_cluster", "describe_quorum", "describe_log_dirs")}
    assert {k: v for k, v in third.capabilities.items() if k in off} == off
    assert third.capabilities["describe_configs"] is True
    assert fake.calls["kafka_python_bootstrap"] == 2  # not tried again until the recheck


UNSUPPORTED = {
    "describe_configs": "describe_configs",
    "list_consumer_groups": "list_groups",
    "describe_consumer_groups": "describe_groups",
    "describe_metadata_quorum": "describe_quorum",
    "describe_cluster": "describe_cluster",
    "describe_log_dirs": "describe_log_dirs",
}


@pytest.mark.parametrize("method", UNSUPPORTED)
def test_an_unsupported_api_is_a_capability_not_a_failure(
    method: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeCluster(snapshot("healthy"), Faults(unsupported={method}))
    adapter = fake.adapter()
    try:
        with caplog.at_level("INFO", logger="vigia.exporter.kafka.capabilities"):
            first = adapter.collect(timeout=5)
            calls = fake.calls[method]
            second = adapter.collect(timeout=5)
    finally:
        adapter.close()
    capability = UNSUPPORTED[method]
    for collected in (first, second):
        assert collected.ok, collected.errors
        assert collected.capabilities[capability] is False
        assert all(v for k, v in collected.capabilities.items() if k != capability)
    assert fake.calls[method] == calls  # not asked again (until RECHECK_SECONDS)
    (line,) = [r.getMessage() for r in caplog.records]  # logged once
    assert line.startswith(f"the cluster does not support {capability} (")
    state = derive(None, second)
    if capability == "describe_configs":
        assert state.min_isr["measure"] is None
    if capability == "describe_log_dirs":
        assert second.log_dirs == () and state.topic_size_bytes == {}
    if capability == "list_groups":
        assert second.groups == ()
    if capability == "describe_groups":
        assert {g.members for g in second.groups} == {None} and state.group_lags


def test_a_slow_broker_delays_and_hides_only_its_own_log_dirs() -> None:
    fake = FakeCluster(snapshot("healthy"), Faults(slow_log_dirs_brokers={2}))
    adapter = fake.adapter()
    try:
        started = time.monotonic()
        collected = adapter.collect(timeout=1.0)
        elapsed = time.monotonic() - started
    finally:
        fake.released.set()
        adapter.close()
    assert elapsed < 2.0
    assert collected.errors == ()  # up stays 1: broker 2's answer is its own
    assert collected.broker_failures == {(2, "log_dirs"): "timed out"}
    assert [(b.broker, b.error is None) for b in collected.log_dirs] == [
        (1, True),
        (2, False),
        (3, True),
    ]
    assert all(t.partitions[0].latest_offset is not None for t in collected.topics)


def test_not_kraft_means_no_quorum_and_no_error() -> None:
    adapter = FakeCluster(replace(snapshot("healthy"), quorum=None)).adapter()
    try:
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert collected.ok
    assert (collected.quorum, collected.controller_id, collected.controller_source) == (
        None,
        3,
        "metadata",
    )


def test_describe_groups_failure_keeps_committed_offsets_and_lag() -> None:
    error = kafka_exception(KafkaError.INVALID_REQUEST, "Broker: Invalid request")
    _, collected = _collect_healthy(Faults(describe_groups=error))
    assert collected.failed_phases == {"groups"}
    assert collected.errors[0].message.startswith("DescribeGroups 5 of 5 groups failed")
    billing = next(g for g in collected.groups if g.group_id == "billing")
    assert (billing.state, billing.members) == (None, None)
    lag = sum(i.lag or 0 for i in derive(None, collected).group_lags if i.group == "billing")
    assert lag == 1055


def test_filters_apply_to_topics_offsets_and_groups() -> None:
    filters = Filters(
        topics=NameFilter(exclude=re.compile(r"^__|^verify")),
        groups=NameFilter(include=re.compile(r"^(billing|verify-group)$")),
    )
    fake = FakeCluster(snapshot("healthy"))
    adapter = fake.adapter(filters)
    try:
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    assert [t.name for t in collected.topics] == ["events", "measure", "measure-quarantine"]
    assert [g.group_id for g in collected.groups] == ["billing", "verify-group"]
    verify = collected.groups[1]
    assert verify.committed == ()  # its offsets are on an excluded topic
    assert fake.calls["list_group_offsets"] == 1  # both allowed groups in one call


def test_failed_kafka_python_bootstraps_do_not_leak_threads() -> None:
    from vigia.exporter.kafka.adapter import _default_legacy_admin

    def attempt() -> None:
        with pytest.raises(kafka_errors.KafkaTimeoutError):
            _default_legacy_admin(
                {"bootstrap_servers": ["127.0.0.1:1"], "bootstrap_timeout_ms": 200}
            )

    attempt()
    before = threading.active_count()
    for _ in range(3):
        attempt()
    assert threading.active_count() == before


def test_groups_whose_coordinator_does_not_answer_are_reported_without_failing_the_collection() -> (
    None
):
    """Issue 20 §1: a group coordinator that moves (a broker stopped or came back) leaves those
    groups' offsets out of one collection, under phase group_coordinator; up stays 1."""
    fake = FakeCluster(snapshot("healthy"), Faults(hang={"list_group_offsets"}))
    adapter = fake.adapter()
    try:
        collected = adapter.collect(timeout=1.0)
    finally:
        fake.released.set()
        adapter.close()
    assert collected.failed_phases == {GROUP_COORDINATOR_PHASE}
    assert collected.ok
    (error,) = collected.errors
    assert "whose coordinator is moving" in error.message and "timed out" in error.message
    assert collected.groups and all(g.committed is None for g in collected.groups)


def test_committed_offsets_wait_for_a_slow_kafka_python_rather_than_use_librdkafka() -> None:
    """A first collection beside a slow bootstrap used to send its OffsetFetch through librdkafka
    after a third of the collection; the exporter crashed in librdkafka that way on CI."""
    fake, collected = _collect_healthy(Faults(legacy_bootstrap_seconds=1.5), timeout=3)
    assert collected.ok, collected.errors
    assert fake.calls["list_consumer_group_offsets"] == 0
    billing = next(g for g in collected.groups if g.group_id == "billing")
    assert billing.committed


@pytest.mark.parametrize(
    ("text", "phase"),
    [
        # Recorded on CI (2026-11-29): the active controller, stopping, closed the connection.
        ("Local: Broker transport failure", "group_coordinator"),
        (
            "SASL authentication error: Authentication failed (after 2ms in state AUTH_REQ)",
            "groups",
        ),
    ],
)
def test_a_describe_cut_by_its_coordinators_connection_is_a_moving_coordinator(
    text: str, phase: str
) -> None:
    error = kafka_exception(KafkaError._TRANSPORT, text)
    _, collected = _collect_healthy(Faults(describe_groups=error))
    assert collected.failed_phases == {phase}


@pytest.mark.parametrize(("cut", "ok"), [({1}, True), ({1, 2}, False)])
def test_broker_configs_cut_by_a_stopping_broker_are_asked_of_the_next_one(
    cut: set[int], ok: bool
) -> None:
    _, collected = _collect_healthy(Faults(cut_broker_configs=cut))
    assert collected.ok is ok, collected.errors
    assert (collected.broker_min_insync_replicas == 2) is ok
