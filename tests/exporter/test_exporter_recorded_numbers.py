"""The pure pipeline against the real Kafka 4.0 recordings: the fixtures README's exact numbers."""

from __future__ import annotations

import re

import pytest

from tests.conftest import SCENARIOS
from tests.exporter.exposition import samples, value
from tests.exporter.recorded import fixture_path, snapshot, state
from vigia.exporter.collectors import render
from vigia.exporter.model.granularity import FULL

LEADERS = {
    "healthy": (23, 22, 23),
    "healthy-later": (23, 22, 23),
    "broker-down": (0, 35, 33),
    "broker-back-imbalanced": (0, 35, 33),
    "rebalanced": (23, 22, 23),
}
USER_TOPIC_LEADERS = {
    "healthy": (6, 6, 6),
    "healthy-later": (6, 6, 6),
    "broker-down": (0, 10, 8),
    "broker-back-imbalanced": (0, 10, 8),
    "rebalanced": (6, 6, 6),
}
FOLLOWERS_IN_ISR = {
    "healthy": (44, 45, 44),
    "healthy-later": (44, 45, 44),
    "broker-down": (0, 32, 34),
    "broker-back-imbalanced": (67, 32, 34),
    "rebalanced": (44, 45, 44),
}
URP = {
    "healthy": 0,
    "healthy-later": 0,
    "broker-down": 67,
    "broker-back-imbalanced": 0,
    "rebalanced": 0,
}
BILLING_LAG = {
    "healthy": 1055,
    "healthy-later": 778,
    "broker-down": 548,
    "broker-back-imbalanced": 506,
    "rebalanced": 1725,
}
INGEST_LAG = {
    "healthy": 104_555,
    "healthy-later": 134_278,
    "broker-down": 200_110,
    "broker-back-imbalanced": 238_558,
    "rebalanced": 295_914,
}
BYTES = {
    "healthy": (32_612_606, 32_622_575, 32_625_904),
    "healthy-later": (36_830_841, 36_833_708, 36_846_405),
    "broker-down": (None, 46_304_974, 46_305_348),
    "broker-back-imbalanced": (51_831_696, 51_849_841, 51_850_461),
    "rebalanced": (60_056_015, 60_059_373, 60_065_596),
}
MEASURE_END_OFFSETS = {
    "healthy": 224_555,
    "healthy-later": 254_278,
    "broker-down": 320_110,
    "broker-back-imbalanced": 358_558,
    "rebalanced": 415_914,
}
# describe_cluster().controller as recorded, against the quorum leader 2 (README gotcha 1).
REPORTED_CONTROLLER = {
    "healthy": 2,
    "healthy-later": 2,
    "broker-down": 3,
    "broker-back-imbalanced": 2,
    "rebalanced": 3,
}


def _per_broker(scenario: str, name: str) -> tuple[float | None, ...]:
    found = samples(render(state(scenario), FULL))
    return tuple(value(found, name, broker=str(b)) for b in (1, 2, 3))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_partition_leadership_per_broker(scenario: str) -> None:
    assert _per_broker(scenario, "kafka_broker_leader_partitions") == LEADERS[scenario]
    user = tuple(
        sum(
            count
            for (topic, b), count in state(scenario).topic_broker_leaders.items()
            if b == broker and not topic.startswith("__")
        )
        for broker in (1, 2, 3)
    )
    assert user == USER_TOPIC_LEADERS[scenario]
    # Replica assignment never changed: every broker stays preferred leader of 23/22/23.
    assert _per_broker(scenario, "kafka_broker_preferred_leader_partitions") == (23, 22, 23)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_followers_in_isr_per_broker(scenario: str) -> None:
    assert _per_broker(scenario, "kafka_broker_follower_partitions") == FOLLOWERS_IN_ISR[scenario]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_under_replicated_and_under_min_isr(scenario: str) -> None:
    found = samples(render(state(scenario), FULL))
    urp = {
        (labels["topic"], labels["partition"])
        for (name, labels), v in found.items()
        if name == "kafka_topic_partition_under_replicated_partition" and v == 1
    }
    under_min = {
        (labels["topic"], labels["partition"])
        for (name, labels), v in found.items()
        if name == "kafka_topic_partition_under_min_isr" and v == 1
    }
    assert len(urp) == URP[scenario]
    expected_under_min = {("events", "1"), ("events", "2")} if scenario == "broker-down" else set()
    assert under_min == expected_under_min
    offline = [k for k, v in found.items() if k[0] == "kafka_topic_partition_offline" and v != 0]
    assert offline == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_preferred_leader_imbalance_matches_broker_jmx(scenario: str) -> None:
    """JMX preferredreplicaimbalancecount: 23 with leaders moved off node 1, else 0."""
    found = samples(render(state(scenario), FULL))
    not_preferred = sum(
        1
        for (name, _), v in found.items()
        if name == "kafka_topic_partition_leader_is_preferred" and v == 0
    )
    assert not_preferred == (23 if scenario in ("broker-down", "broker-back-imbalanced") else 0)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_group_lags(scenario: str) -> None:
    found = samples(render(state(scenario), FULL))

    def lag(group: str, topic: str) -> float | None:
        return value(found, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic)

    assert lag("billing", "measure") == BILLING_LAG[scenario]
    assert lag("vigia-ingest", "measure") == INGEST_LAG[scenario]
    assert lag("events-reader", "events") == 0
    assert lag("verify-group", "verify-6x3") == 2000
    assert lag("verify-group-848", "verify-6x3") == 0
    members = {
        g: value(found, "kafka_consumergroup_members", consumergroup=g)
        for g in ("billing", "vigia-ingest")
    }
    assert members == {"billing": 1, "vigia-ingest": 0}
    assert (
        value(
            found,
            "kafka_consumergroup_info",
            consumergroup="billing",
            state="STABLE",
            protocol="range",
        )
        == 1
    )
    assert (
        value(
            found,
            "kafka_consumergroup_info",
            consumergroup="vigia-ingest",
            state="EMPTY",
            protocol="",
        )
        == 1
    )


def test_ingest_committed_offsets_are_sixty_percent_of_the_loaded_end_offsets() -> None:
    found = samples(render(state("healthy"), FULL))
    committed = [
        value(
            found,
            "kafka_consumergroup_current_offset",
            consumergroup="vigia-ingest",
            topic="measure",
            partition=str(p),
        )
        for p in range(6)
    ]
    assert committed == [20040, 17880, 21000, 20460, 19860, 20760]
    assert (
        value(
            found,
            "kafka_consumergroup_current_offset_sum",
            consumergroup="vigia-ingest",
            topic="measure",
        )
        == 120_000
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_bytes_per_broker(scenario: str) -> None:
    found = samples(render(state(scenario), FULL))
    per_broker = tuple(
        sum(
            v
            for (name, labels), v in found.items()
            if name == "kafka_broker_log_dir_size_bytes" and labels["broker"] == str(b)
        )
        or None
        for b in (1, 2, 3)
    )
    assert per_broker == BYTES[scenario]


def test_a_broker_down_is_a_fact_about_the_cluster_not_an_exporter_failure() -> None:
    s = state("broker-down")
    assert s.snapshot.errors == () and s.up
    assert dict(s.broker_up) == {1: False, 2: True, 3: True}
    found = samples(render(s, FULL))
    assert value(found, "vigia_exporter_up") == 1
    assert value(found, "vigia_exporter_collection_errors_total", phase="log_dirs") == 0
    assert [value(found, "kafka_broker_up", broker=b) for b in ("1", "2", "3")] == [0, 1, 1]
    back = samples(render(state("broker-back-imbalanced"), FULL))
    assert [value(back, "kafka_broker_up", broker=b) for b in ("1", "2", "3")] == [1, 1, 1]
    replica_brokers = {
        labels["broker"] for (name, labels) in found if name == "kafka_partition_replica_size_bytes"
    }
    assert replica_brokers == {"2", "3"}
    assert value(found, "kafka_brokers") == 2
    assert value(found, "kafka_broker_leader_partitions", broker="1") == 0  # still holds replicas


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_controller_is_the_quorum_leader(scenario: str) -> None:
    snap = snapshot(scenario)
    assert (snap.controller_id, snap.controller_source) == (2, "quorum")
    found = samples(render(state(scenario), FULL))
    assert (
        value(found, "kafka_cluster_info", cluster_id="_AyGCUsRTnGHi0V-PhyEBQ", controller_id="2")
        == 1
    )
    controllers = {
        labels["id"]
        for (name, labels) in found
        if name == "kafka_broker_info" and labels["is_controller"] == "true"
    }
    assert controllers == {"2"}


def test_reported_controller_differs_from_the_quorum_leader() -> None:
    import json

    reported = {
        s: json.loads(fixture_path(s).read_text())["cluster"]["controller_id"] for s in SCENARIOS
    }
    assert reported == REPORTED_CONTROLLER


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_measure_end_offsets_and_leaders(scenario: str) -> None:
    found = samples(render(state(scenario), FULL))
    offsets = [
        value(found, "kafka_topic_partition_current_offset", topic="measure", partition=str(p))
        for p in range(6)
    ]
    assert sum(o or 0 for o in offsets) == MEASURE_END_OFFSETS[scenario]
    leaders = [
        value(found, "kafka_topic_partition_leader", topic="measure", partition=str(p))
        for p in range(6)
    ]
    moved = scenario in ("broker-down", "broker-back-imbalanced")
    assert leaders == ([2, 2, 3, 2, 3, 3] if moved else [1, 2, 3, 2, 1, 3])
    assert value(found, "kafka_brokers") == (2 if scenario == "broker-down" else 3)


def test_message_rates_between_the_two_healthy_recordings() -> None:
    healthy, later = snapshot("healthy"), snapshot("healthy-later")
    dt = later.collected_at - healthy.collected_at
    assert dt == pytest.approx(15.0008, abs=1e-3)
    s = state("healthy-later")
    assert s.topic_rates["measure"] == pytest.approx(29_723 / dt)
    assert round(s.topic_rates["measure"]) == 1981
    # First collection: no rate yet.
    assert state("healthy").topic_rates == {}
    # Attributed to leaders 1 2 3 2 1 3, the per-broker rates add up to the topic rate...
    per_broker = [s.broker_topic_rates[(b, "measure")] for b in (1, 2, 3)]
    assert sum(per_broker) == pytest.approx(s.topic_rates["measure"])
    # ...and agree with each broker's own JMX MessagesIn meter (scrape interval from the README).
    jmx_interval = {1: 15.001 - 1.84 + 1.05, 2: 15.001 - 2.38 + 1.49, 3: 15.001 - 2.91 + 1.88}
    for broker, rate in zip((1, 2, 3), per_broker, strict=True):
        jmx = _jmx_messages_in("healthy-later", broker) - _jmx_messages_in("healthy", broker)
        assert rate == pytest.approx(jmx / jmx_interval[broker], rel=0.05)


def test_consumed_rate_of_the_stable_group() -> None:
    s = state("healthy-later")
    # billing commits every second and keeps up with ~2,000 msgs/s; vigia-ingest is idle.
    assert s.consumed_rates[("billing", "measure")] == pytest.approx(1999.9, abs=0.1)
    assert s.consumed_rates[("vigia-ingest", "measure")] == 0


def _jmx_messages_in(scenario: str, broker: int) -> float:
    text = fixture_path(scenario, f".jmx-broker-{broker}.prom").read_text()
    match = re.search(
        r'^kafka_server_brokertopicmetrics_messagesin_total\{topic="measure",\} (\S+)$', text, re.M
    )
    assert match is not None
    return float(match.group(1))
