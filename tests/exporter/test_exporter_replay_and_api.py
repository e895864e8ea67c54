"""`recording.replay` (used by other suites) and the /api/v1/cluster JSON built from recordings."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SCENARIOS
from tests.exporter.exposition import samples, value
from tests.exporter.recorded import fixture_path, state
from vigia.exporter.collectors import exposition
from vigia.exporter.model.snapshot import CAPABILITIES
from vigia.exporter.recording import RecordingError, load_snapshot, replay
from vigia.exporter.web import api

TOP_KEYS = {
    "collected_at",
    "collection_duration_seconds",
    "up",
    "errors",
    "capabilities",
    "cluster",
    "brokers",
    "topics",
    "broker_topic_rates",
    "groups",
    "source",  # null without --hes-dsn (tests/hes)
    "probe",
    "connect",
}
BROKER_KEYS = {
    "id",
    "host",
    "port",
    "rack",
    "online",
    "is_controller",
    "leader_partitions",
    "follower_partitions",
    "preferred_leader_partitions",
    "log_dirs_error",
    "log_dirs",
}
PARTITION_KEYS = {
    "partition",
    "leader",
    "replicas",
    "isr",
    "offline_replicas",
    "earliest_offset",
    "latest_offset",
    "under_replicated",
    "under_min_isr",
    "offline",
    "leader_is_preferred",
    "replica_size_bytes",
    "out_of_sync_seconds",
}
GROUP_KEYS = {
    "group_id",
    "state",
    "type",
    "protocol",
    "coordinator",
    "denied",
    "status",
    "status_window_completeness",
    "members",
    "topics",
    "partitions",
}
GROUP_PARTITION_KEYS = {
    "topic",
    "partition",
    "committed_offset",
    "latest_offset",
    "lag",
    "lag_seconds",
    "lag_seconds_method",
    "status",
    "status_window_complete",
    "status_window_completeness",
    "retention_margin",
    "lost_messages",
}


def test_replay_runs_the_pipeline_in_order() -> None:
    replayed = replay([fixture_path(s) for s in SCENARIOS])
    assert [r.collected_at for r in replayed] == sorted(r.collected_at for r in replayed)
    for scenario, item in zip(SCENARIOS, replayed, strict=True):
        assert item.exposition == exposition(state(scenario))
        assert item.cluster_json == api.cluster_json(state(scenario))
        json.dumps(item.cluster_json)  # serialisable as served
    later = samples(replayed[1].exposition)
    assert value(later, "kafka_topic_messages_in_per_second", topic="measure") == pytest.approx(
        1981.4, abs=0.1
    )
    down = samples(replayed[2].exposition)
    assert (value(down, "vigia_exporter_up"), value(down, "kafka_broker_up", broker="1")) == (1, 0)


def test_replay_of_a_single_recording_has_no_rates() -> None:
    (only,) = replay([fixture_path("healthy-later")])
    assert (
        value(samples(only.exposition), "kafka_topic_messages_in_per_second", topic="measure")
        is None
    )
    assert only.cluster_json["topics"][2]["messages_in_per_second"] is None


def test_bad_recording_is_a_clear_error(tmp_path: object) -> None:
    from pathlib import Path

    bad = Path(str(tmp_path)) / "bad.json"
    bad.write_text('{"cluster": {}}')
    with pytest.raises(RecordingError, match=r"bad\.json: not a cluster recording"):
        load_snapshot(bad)


def test_cluster_json_shape_and_values_healthy_later() -> None:
    doc = api.cluster_json(state("healthy-later"))
    assert set(doc) == TOP_KEYS
    assert doc["up"] is True and doc["errors"] == []
    assert doc["capabilities"] == dict.fromkeys(sorted(CAPABILITIES), True)
    assert doc["cluster"] == {
        "cluster_id": "_AyGCUsRTnGHi0V-PhyEBQ",
        "controller_id": 2,
        "controller_source": "quorum",
    }
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3]
    b1 = doc["brokers"][0]
    assert set(b1) == BROKER_KEYS
    assert (b1["host"], b1["port"], b1["online"], b1["is_controller"]) == (
        "127.0.0.1",
        19092,
        True,
        False,
    )
    assert (
        b1["leader_partitions"],
        b1["follower_partitions"],
        b1["preferred_leader_partitions"],
    ) == (23, 44, 23)
    assert b1["log_dirs"][0]["size_bytes"] == 36_830_841
    assert doc["brokers"][1]["is_controller"] is True

    names = [t["name"] for t in doc["topics"]]
    assert (
        names
        == sorted(names)
        == ["__consumer_offsets", "events", "measure", "measure-quarantine", "verify-6x3"]
    )
    measure = doc["topics"][2]
    assert measure["messages_in_per_second"] == pytest.approx(1981.4, abs=0.1)
    assert measure["min_insync_replicas"] == 2
    assert measure["internal"] is False and doc["topics"][0]["internal"] is True
    p0 = measure["partitions"][0]
    assert set(p0) == PARTITION_KEYS
    assert (p0["leader"], p0["replicas"], p0["leader_is_preferred"], p0["under_replicated"]) == (
        1,
        [1, 2, 3],
        True,
        False,
    )
    assert set(p0["replica_size_bytes"]) == {"1", "2", "3"}
    assert p0["out_of_sync_seconds"] == {"1": 0.0, "2": 0.0, "3": 0.0}
    assert measure["size_bytes"] == sum(
        sum(p["replica_size_bytes"].values()) for p in measure["partitions"]
    )
    assert measure["leader_size_bytes"] == sum(
        p["replica_size_bytes"][str(p["leader"])] for p in measure["partitions"]
    )

    rates = {
        (r["broker"], r["topic"]): r["messages_in_per_second"] for r in doc["broker_topic_rates"]
    }
    assert sum(v for (_, t), v in rates.items() if t == "measure") == pytest.approx(
        measure["messages_in_per_second"]
    )

    groups = {g["group_id"]: g for g in doc["groups"]}
    assert list(groups) == sorted(groups)
    billing = groups["billing"]
    assert set(billing) == GROUP_KEYS
    assert (billing["state"], billing["type"], billing["protocol"], billing["coordinator"]) == (
        "STABLE",
        "CLASSIC",
        "range",
        2,
    )
    assert billing["members"][0]["client_id"] == "billing-1"
    assert billing["denied"] == []
    assert len(billing["members"][0]["assignment"]) == 6
    (topic,) = billing["topics"]
    assert (topic["topic"], topic["lag"]) == ("measure", 778)
    assert 0.1 < topic["max_lag_seconds"] < 1.0
    assert topic["max_lag_seconds_method"] == "interpolated"  # no record read in a replay
    assert topic["messages_consumed_per_second"] == pytest.approx(1999.9, abs=0.1)
    # Retention (docs/lag.md#retention): 7 days on measure, less the oldest unread record's age.
    margin = topic["retention_margin"]
    assert (margin["limit"], margin["method"]) == ("time", "interpolated")
    assert margin["seconds"] == pytest.approx(7 * 86400 - topic["max_lag_seconds"])
    assert topic["catch_up"]["state"] == "draining" and topic["catch_up"]["backlog"] == 778
    assert (topic["retention_at_risk"], topic["lost_messages"]) == (False, 0)
    retention = {t["name"]: (t["retention"], t["outage_budget"]) for t in doc["topics"]}
    compacted = {"ms": None, "bytes": None, "none": "compacted"}
    assert retention["__consumer_offsets"] == (compacted, None)
    assert retention["measure"][1] == {"seconds": 604800.0, "limit": "time", "method": "caught_up"}
    assert set(billing["partitions"][0]) == GROUP_PARTITION_KEYS
    assert [p["partition"] for p in billing["partitions"]] == list(range(6))
    assert all(
        p["lag"] == p["latest_offset"] - p["committed_offset"] for p in billing["partitions"]
    )
    assert groups["verify-group-848"]["type"] == "CONSUMER"


def test_cluster_json_broker_down() -> None:
    doc = api.cluster_json(state("broker-down"))
    assert doc["up"] is True
    assert doc["errors"] == []
    b1, b2, _ = doc["brokers"]
    assert (b1["id"], b1["online"], b1["host"], b1["log_dirs"]) == (1, False, None, None)
    assert b1["log_dirs_error"] is None  # a broker absent from metadata is not asked
    assert (b1["leader_partitions"], b1["follower_partitions"]) == (0, 0)
    assert b2["log_dirs"][0]["size_bytes"] == 46_304_974
    events = next(t for t in doc["topics"] if t["name"] == "events")
    assert [p["under_min_isr"] for p in events["partitions"]] == [False, True, True]
    measure = next(t for t in doc["topics"] if t["name"] == "measure")
    assert all(p["offline_replicas"] == [1] for p in measure["partitions"])
    assert all(set(p["replica_size_bytes"]) == {"2", "3"} for p in measure["partitions"])


def test_cluster_json_names_the_cluster_when_given_its_name() -> None:
    assert api.state_json(state("healthy-later"), "prod")["cluster"]["name"] == "prod"
    assert "name" not in api.state_json(state("healthy-later"))["cluster"]
