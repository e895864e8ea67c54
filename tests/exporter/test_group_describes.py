"""Which groups a collection describes, and through which client (issue 24: describe only the
groups that need it, batched per coordinator)."""

from __future__ import annotations

from dataclasses import replace

from tests.exporter.fake_kafka import FakeCluster
from tests.exporter.recorded import snapshot
from vigia.exporter.kafka.group_requests import from_kafka_python, plan_describes
from vigia.exporter.model.snapshot import GroupMember, TopicPartitionRef


def test_empty_groups_are_not_described_classic_ones_go_through_kafka_python() -> None:
    listed = {
        "billing": ("STABLE", "CLASSIC"),
        "idle": ("EMPTY", "CLASSIC"),
        "new-848": ("EMPTY", "CONSUMER"),  # never described: its assignor is not known yet
        "seen-848": ("EMPTY", "CONSUMER"),
        "live-848": ("STABLE", "CONSUMER"),
        "old-broker": ("EMPTY", None),  # ListGroups v4: no type
        "named": (None, None),
    }
    plan = plan_describes(sorted(listed), listed, {"seen-848": "uniform"}, kafka_python=True)
    assert plan.empty == {"idle": ("CLASSIC", ""), "seen-848": ("CONSUMER", "uniform")}
    assert plan.classic == ["billing"]
    assert plan.other == ["live-848", "named", "new-848", "old-broker"]
    # Without kafka-python (librdkafka's mock cluster), librdkafka describes every group.
    without = plan_describes(sorted(listed), listed, {}, kafka_python=False)
    assert (without.empty, without.classic, without.other) == ({}, [], sorted(listed))


def test_kafka_python_descriptions_read_like_librdkafka_ones() -> None:
    found = {
        "error": None,
        "group_state": "PreparingRebalance",
        "protocol_data": "range",
        "members": [
            {
                "member_id": "m-1",
                "client_id": "c",
                "client_host": "/127.0.0.1",
                "member_assignment": {
                    "assigned_partitions": [{"topic": "t", "partitions": [2, 0]}],
                    "user_data": None,
                },
            }
        ],
    }
    described = from_kafka_python("g", found, 3)
    assert (described.state, described.type, described.protocol, described.coordinator) == (
        "PREPARING_REBALANCING",
        "CLASSIC",
        "range",
        3,
    )
    refs = (TopicPartitionRef("t", 0), TopicPartitionRef("t", 2))
    assert described.members == (GroupMember("m-1", "c", "/127.0.0.1", refs),)


def test_a_group_error_text_becomes_kafka_pythons_exception_again() -> None:
    from kafka import errors as kafka_errors

    moving = from_kafka_python("g", {"error": "[Error 16] NotCoordinatorError: "}, None)
    assert isinstance(moving, kafka_errors.NotCoordinatorError) and moving.retriable
    denied = from_kafka_python("g", {"error": "[Error 30] GroupAuthorizationFailedError: x"}, 1)
    assert isinstance(denied, kafka_errors.GroupAuthorizationFailedError)


def test_listed_states_give_the_recorded_groups_with_one_describe_per_kind() -> None:
    recorded = snapshot("healthy")
    fake = FakeCluster(recorded)
    fake.listed_states = True
    adapter = fake.adapter()
    try:
        first = adapter.collect(timeout=5)
        first_calls = dict(fake.calls)
        fake.calls.clear()
        second = adapter.collect(timeout=5)
    finally:
        adapter.close()
    for collected in (first, second):
        assert collected.ok, collected.errors
        assert collected.groups == recorded.groups
    # billing (STABLE, classic) through kafka-python, in one call for all classic groups; the
    # empty consumer-protocol group through librdkafka once, for its assignor; the empty classic
    # groups never.
    assert first_calls["describe_groups"] == 1
    assert first_calls["describe_consumer_groups"] == 1
    assert fake.calls["describe_groups"] == 1
    assert fake.calls["describe_consumer_groups"] == 0


def test_a_group_that_empties_loses_its_members_and_classic_assignor() -> None:
    recorded = snapshot("healthy")
    fake = FakeCluster(recorded)
    fake.listed_states = True
    adapter = fake.adapter()
    try:
        adapter.collect(timeout=5)
        emptied = tuple(
            replace(g, state="EMPTY", protocol="", members=()) if g.group_id == "billing" else g
            for g in recorded.groups
        )
        fake.snapshot = replace(recorded, groups=emptied)
        fake.calls.clear()
        collected = adapter.collect(timeout=5)
    finally:
        adapter.close()
    billing = next(g for g in collected.groups if g.group_id == "billing")
    assert (billing.state, billing.protocol, billing.members) == ("EMPTY", "", ())
    assert (
        billing.committed == next(g for g in recorded.groups if g.group_id == "billing").committed
    )
    assert "describe_groups" not in fake.calls
