"""The topic base's layout (benchmarks/exporter_cost_curve.py): names and CreateTopics batches."""

from __future__ import annotations

from benchmarks.exporter_cost_curve import base_topics, create_batches


def test_the_default_base_keeps_its_names() -> None:
    assert base_topics(2000, 40) == [f"base-{n:03d}" for n in range(50)]


def test_issue_509_shape_is_3000_topics_named_in_order() -> None:
    topics = base_topics(12000, 4)
    assert len(topics) == 3000
    assert topics[0] == "base-0000"
    assert topics[-1] == "base-2999"
    assert topics == sorted(topics)


def test_a_base_smaller_than_one_topic_still_has_one() -> None:
    assert base_topics(10, 40) == ["base-000"]


def test_create_topics_calls_hold_about_a_thousand_partitions() -> None:
    batches = create_batches(base_topics(12000, 4), 4)
    assert [len(batch) for batch in batches] == [250] * 12
    assert [len(batch) for batch in create_batches(base_topics(2000, 40), 40)] == [25, 25]


def test_topics_larger_than_a_batch_go_one_per_call() -> None:
    batches = create_batches(base_topics(6000, 2000), 2000)
    assert [list(batch) for batch in batches] == [["base-000"], ["base-001"], ["base-002"]]
