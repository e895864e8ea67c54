"""The churn benchmark's arithmetic (benchmarks/churn_stats.py)."""

from __future__ import annotations

import math

import pytest

from benchmarks import churn_stats as stats

EXPOSITION = """\
# HELP kafka_consumergroup_lag Lag.
# TYPE kafka_consumergroup_lag gauge
kafka_consumergroup_lag{consumergroup="churn-000001",partition="0",topic="orders"} 5
kafka_consumergroup_lag{partition="1",topic="orders",consumergroup="churn-000001"} 7
kafka_consumergroup_members{consumergroup="we \\"quote\\", and {brace}"} 0
kafka_topic_partitions{topic="consumergroup=\\"not-a-group\\""} 6
vigia_exporter_up 1
"""


def test_groups_are_the_distinct_consumergroup_label_values() -> None:
    assert stats.group_labels(EXPOSITION) == {"churn-000001", 'we \\"quote\\", and {brace}'}


def test_group_series_count_every_sample_with_a_group_label() -> None:
    assert stats.group_series(EXPOSITION) == 3
    assert stats.group_series("vigia_exporter_up 1\n") == 0


def test_slope_is_in_mb_per_hour() -> None:
    # 0.5 MB a minute: 30 MB an hour, whatever the offset.
    assert stats.slope_per_hour([(5.0, 100.0), (6.0, 100.5), (7.0, 101.0)]) == pytest.approx(30)
    assert stats.slope_per_hour([(5.0, 100.0), (6.0, 100.0)]) == 0.0
    assert math.isnan(stats.slope_per_hour([(5.0, 100.0)]))


def test_growth_compares_the_warm_up_with_the_last_minutes() -> None:
    samples = [(0.5, 60.0), (5.0, 90.0), (10.0, 91.0), (26.0, 95.0), (29.5, 94.0)]
    found = stats.growth(samples, warm_up=5.0, tail=5.0)
    assert found.after_warm_up == 90.0
    assert found.tail_max == 95.0  # 26 is within 5 minutes of the last sample, 10 is not
    assert found.samples == 4
    assert found.slope_mb_per_hour > 0


def test_a_flat_rss_has_no_slope_and_no_samples_no_numbers() -> None:
    flat = stats.growth([(t / 2, 80.0) for t in range(10, 60)], warm_up=5.0, tail=5.0)
    assert (flat.after_warm_up, flat.tail_max, flat.slope_mb_per_hour) == (80.0, 80.0, 0.0)
    assert math.isnan(stats.growth([(1.0, 80.0)], warm_up=5.0, tail=5.0).after_warm_up)


def test_a_short_run_keeps_settled_samples() -> None:
    assert stats.warm_up_and_tail(30, 5, 5) == (5, 5)
    assert stats.warm_up_and_tail(3, 5, 5) == (1, 1)
