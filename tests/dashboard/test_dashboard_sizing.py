"""The sizing calculator on known inputs."""

from __future__ import annotations

import dataclasses

import pytest

from vigia.dashboard.sizing import SizingError, SizingInputs, size_cluster
from vigia.dashboard.views.capacity import compute, form_values, inputs_from_form

MEASURE_LIKE = SizingInputs(
    target_messages_per_second=2000,
    bytes_per_message=150,
    per_consumer_messages_per_second=500,
    retention_hours=168,
    replication_factor=3,
    consumer_groups=2,
    disk_bytes_per_broker=270_553_174_016,  # the recordings' log dir volume
    network_bytes_per_second_per_broker=125e6,
)


def test_disk_bound_cluster() -> None:
    r = size_cluster(MEASURE_LIKE)
    assert r.partitions == 4  # 2,000 ÷ 500
    assert r.produce_bytes_per_second == 300_000
    assert r.retained_bytes == 300_000 * 168 * 3600 == 181_440_000_000
    assert r.stored_bytes == 544_320_000_000
    assert r.brokers_for_disk == 3  # 544.32 GB ÷ (270.55 GB × 0.7) = 2.87
    assert r.network_in_bytes_per_second == 900_000  # produce × RF
    assert r.network_out_bytes_per_second == 1_200_000  # produce × (RF − 1 + 2 groups)
    assert r.brokers_for_network == 1
    assert (r.brokers, r.limited_by) == (3, "disk")
    assert r.partitions_balanced == 6
    assert r.disk_utilization == pytest.approx(544.32e9 / 3 / 270_553_174_016)
    assert r.network_utilization == pytest.approx(1_200_000 / 3 / 125e6)


def test_network_bound_cluster_counts_every_group_as_a_reader() -> None:
    r = size_cluster(
        dataclasses.replace(
            MEASURE_LIKE,
            target_messages_per_second=100_000,
            bytes_per_message=1000,
            per_consumer_messages_per_second=10_000,
            retention_hours=1,
            consumer_groups=5,
            disk_bytes_per_broker=10e12,
        )
    )
    assert r.partitions == 10
    assert r.network_in_bytes_per_second == 300e6
    assert r.network_out_bytes_per_second == 700e6  # 100 MB/s × (2 replicas + 5 groups)
    assert r.brokers_for_network == 8  # 700 MB/s ÷ 87.5 MB/s usable per broker
    assert r.brokers_for_disk == 1
    assert (r.brokers, r.limited_by, r.partitions_balanced) == (8, "network", 16)


def test_replication_factor_is_the_floor() -> None:
    tiny = dataclasses.replace(MEASURE_LIKE, target_messages_per_second=1, retention_hours=1)
    r = size_cluster(tiny)
    assert (r.partitions, r.brokers, r.limited_by) == (1, 3, "replication factor")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"target_messages_per_second": 0}, "target throughput must be a positive number"),
        ({"bytes_per_message": -1}, "bytes per message must be a positive number"),
        ({"replication_factor": 0}, "replication factor must be at least 1"),
        ({"consumer_groups": -1}, "consumer groups cannot be negative"),
        ({"max_disk_utilization": 1.5}, "max disk utilization must be in (0, 1]"),
    ],
)
def test_meaningless_inputs_are_refused(change: dict[str, float], message: str) -> None:
    with pytest.raises(SizingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        size_cluster(dataclasses.replace(MEASURE_LIKE, **change))  # type: ignore[arg-type]


def test_form_round_trip_and_errors() -> None:
    values = form_values(MEASURE_LIKE)
    assert values[6] == 270.553  # disk shown in GB
    assert values[7] == 125  # network shown in MB/s
    back = inputs_from_form(values)
    assert back.disk_bytes_per_broker == pytest.approx(270.553e9)
    assert back.replication_factor == 3 and isinstance(back.replication_factor, int)
    assert str(compute([None, *values[1:]])) == "fill in every field"
    assert compute(values).brokers == 3  # type: ignore[union-attr]


def test_an_outage_budget_raises_the_retention_and_says_how_long_catching_up_takes() -> None:
    # Partitions sized for the throughput alone (2,000 ÷ 500 = 4) never drain a backlog.
    exact = size_cluster(dataclasses.replace(MEASURE_LIKE, outage_budget_hours=72))
    assert (exact.retention_hours, exact.catch_up_seconds) == (168, None)
    assert exact.retained_bytes == size_cluster(MEASURE_LIKE).retained_bytes
    # At 1,800 msg/s the same 4 partitions drain 200 msg/s: 3 days of backlog take 27 days.
    slower = dataclasses.replace(MEASURE_LIKE, target_messages_per_second=1800)
    survive = size_cluster(dataclasses.replace(slower, outage_budget_hours=72))
    assert survive.catch_up_seconds == pytest.approx(1800 * 72 * 3600 / 200)
    assert survive.catch_up_seconds == 27 * 86400
    # A 10-day outage needs 10 days of retention, and the disk for them.
    ten_days = size_cluster(dataclasses.replace(slower, outage_budget_hours=240))
    assert ten_days.retention_hours == 240
    assert ten_days.retained_bytes == pytest.approx(survive.retained_bytes * 240 / 168)
    assert size_cluster(slower).catch_up_seconds == 0.0  # no outage asked for
    with pytest.raises(SizingError, match="outage budget"):
        size_cluster(dataclasses.replace(MEASURE_LIKE, outage_budget_hours=-1))
