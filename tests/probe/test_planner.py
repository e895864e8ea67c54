"""Probe topic planner: one partition led by each broker, RF = min(3, brokers), others untouched."""

from __future__ import annotations

from collections import Counter

import pytest

from vigia.exporter.probe.planner import Assignment, plan_probe_topic

TOPIC = "vigia-probe"


def check_layout(assignment: Assignment, brokers: list[int], rf: int) -> None:
    assert sorted(replicas[0] for replicas in assignment) == sorted(brokers)  # each leads one
    for replicas in assignment:
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)
    load = Counter(b for replicas in assignment for b in replicas)
    assert max(load.values()) - min(load.values()) <= 1


@pytest.mark.parametrize(
    ("brokers", "rf"), [([1], 1), ([1, 2], 2), ([1, 2, 3], 3), ([1, 2, 3, 4, 5], 3), ([9, 5, 1], 3)]
)
def test_new_topic_has_one_partition_led_by_each_broker(brokers: list[int], rf: int) -> None:
    plan = plan_probe_topic(TOPIC, brokers, {})
    assert plan.topic == TOPIC
    assert plan.replication_factor == rf
    assert plan.create_topic is not None
    assert plan.new_partitions == ()
    assert plan.total_partitions == len(brokers)
    check_layout(plan.create_topic, brokers, rf)
    # Partition i is led by the i-th broker in id order.
    assert [replicas[0] for replicas in plan.create_topic] == sorted(brokers)


def test_three_brokers_exact_assignment() -> None:
    plan = plan_probe_topic(TOPIC, [3, 1, 2], {})
    assert plan.create_topic == ((1, 2, 3), (2, 1, 3), (3, 1, 2))


def test_five_brokers_spread_followers_evenly() -> None:
    plan = plan_probe_topic(TOPIC, [1, 2, 3, 4, 5], {})
    assert plan.create_topic is not None
    assert Counter(b for r in plan.create_topic for b in r) == dict.fromkeys([1, 2, 3, 4, 5], 3)


def test_existing_topic_that_fits_needs_nothing() -> None:
    existing = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    plan = plan_probe_topic(TOPIC, [1, 2, 3], {TOPIC: existing})
    assert plan.is_noop
    assert plan.total_partitions == 3


def test_broker_added_gets_a_new_partition() -> None:
    existing = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    plan = plan_probe_topic(TOPIC, [1, 2, 3, 4], {TOPIC: existing})
    assert plan.create_topic is None
    assert plan.new_partitions == ((4, 1, 2),)
    assert plan.total_partitions == 4


def test_two_brokers_added_get_partitions_with_the_least_loaded_followers() -> None:
    existing = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    plan = plan_probe_topic(TOPIC, [1, 2, 3, 4, 5], {TOPIC: existing})
    # Brokers 4 and 5 hold nothing yet, so each new partition takes the other as a follower.
    assert plan.new_partitions == ((4, 5, 1), (5, 4, 2))
    assert plan.total_partitions == 5


def test_topic_from_auto_creation_gets_partitions_for_missing_leaders() -> None:
    # librdkafka's mock auto-creates 4 partitions whose replicas all start with broker 1.
    existing = {p: [1, 2, 3] for p in range(4)}
    plan = plan_probe_topic(TOPIC, [1, 2, 3], {TOPIC: existing})
    assert [r[0] for r in plan.new_partitions] == [2, 3]
    assert plan.total_partitions == 6


def test_removed_broker_changes_nothing() -> None:
    existing = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    plan = plan_probe_topic(TOPIC, [1, 2], {TOPIC: existing})
    assert plan.is_noop
    assert plan.replication_factor == 2


def test_other_topics_are_never_touched() -> None:
    others = {
        "measure": {0: [1, 2, 3], 1: [1, 2, 3]},
        "vigia-probe-old": {0: [2]},
        "VIGIA-PROBE": {0: [1]},
        "__consumer_offsets": {p: [3, 1, 2] for p in range(50)},
    }
    alone = plan_probe_topic(TOPIC, [1, 2, 3, 4], {})
    among_others = plan_probe_topic(TOPIC, [1, 2, 3, 4], others)
    assert among_others == alone
    assert among_others.topic == TOPIC
    existing = {TOPIC: {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}}
    assert plan_probe_topic(TOPIC, [1, 2, 3, 4], {**others, **existing}).new_partitions == (
        (4, 1, 2),
    )


def test_no_brokers_is_an_error() -> None:
    with pytest.raises(ValueError, match="no brokers"):
        plan_probe_topic(TOPIC, [], {})
