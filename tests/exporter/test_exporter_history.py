"""Issue 3 wired into the pipeline: lag seconds, lag status and ISR history from successive
collections, in `derive`, on /metrics and in the JSON — on hand-made snapshots and on the five
real recordings replayed in order."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import pytest

from tests.conftest import SCENARIOS
from tests.exporter.exposition import Samples, samples, value
from tests.exporter.recorded import fixture_path
from vigia.exporter.collectors import render
from vigia.exporter.model.granularity import FULL
from vigia.exporter.model.lag_status import GroupStatus, PartitionStatus
from vigia.exporter.model.snapshot import (
    Broker,
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    GroupMember,
    Partition,
    PhaseError,
    Topic,
    TopicPartitionRef,
    empty_snapshot,
)
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.recording import Replayed, replay
from vigia.exporter.web import api

GROUP_PARTITION = {"consumergroup": "g", "topic": "t", "partition": "0"}


def _snap(
    at: float,
    latest: int | None,
    committed: int,
    *,
    isr: tuple[int, ...] = (1, 2, 3),
    owner: bool | None = False,  # a live member owns the partition; None: DescribeGroups failed
    errors: tuple[PhaseError, ...] = (),
) -> ClusterSnapshot:
    """One topic `t` with one partition (replicas 1, 2, 3) read by group `g`."""
    if owner is None:
        members = None
    else:
        assignment = (TopicPartitionRef("t", 0),) if owner else ()
        members = (GroupMember("m-1", "c-1", "/127.0.0.1", assignment),) if owner else ()
    return ClusterSnapshot(
        collected_at=at,
        cluster_id="c",
        controller_id=1,
        controller_source="quorum",
        brokers=tuple(Broker(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)),
        topics=(Topic("t", False, (Partition(0, 1, (1, 2, 3), isr, (), 0, latest),)),),
        log_dirs=(),
        groups=(
            ConsumerGroup(
                "g",
                "STABLE" if owner else "EMPTY",
                "CLASSIC",
                "range",
                1,
                members,
                (CommittedOffset("t", 0, committed),),
            ),
        ),
        errors=errors,
    )


def _chain(snapshots: Iterable[ClusterSnapshot], window: int = 3) -> list[ExporterState]:
    history = History.create(window)
    states: list[ExporterState] = []
    for s in snapshots:
        states.append(derive(states[-1] if states else None, s, history))
    return states


def _found(state: ExporterState) -> Samples:
    return samples(render(state, FULL))


def test_lag_seconds_interpolates_the_offset_history_and_lag_0_is_0_seconds() -> None:
    # 10 messages/s; the group stays at offset 50, produced at t = 5.
    first, second, third = _chain(_snap(10.0 * i, 100 * i, 50) for i in (1, 2, 3))
    assert first.lag_seconds == {}  # lag, but no earlier sample to interpolate from
    assert first.max_lag_seconds == {}
    assert second.lag_seconds == {("g", "t", 0): pytest.approx(15.0)}
    found = _found(third)
    assert value(found, "kafka_consumergroup_lag_seconds", **GROUP_PARTITION) == pytest.approx(25.0)
    assert value(
        found, "kafka_consumergroup_max_lag_seconds", consumergroup="g", topic="t"
    ) == pytest.approx(25.0)

    (caught_up,) = _chain([_snap(10.0, 100, 100)])
    assert caught_up.lag_seconds == {("g", "t", 0): 0.0}
    assert caught_up.max_lag_seconds == {("g", "t"): 0.0}


def test_a_stopped_group_turns_stop_and_err_once_its_window_is_full() -> None:
    states = _chain(_snap(10.0 * i, 100 * i, 50) for i in (1, 2, 3))
    assert [s.lag_status[("g", "t", 0)].status for s in states] == [
        PartitionStatus.OK,
        PartitionStatus.OK,
        PartitionStatus.STOP,
    ]
    assert [s.lag_status[("g", "t", 0)].complete for s in states] == pytest.approx(
        [1 / 3, 2 / 3, 1]
    )
    found = _found(states[-1])
    assert value(found, "kafka_consumergroup_partition_status", **GROUP_PARTITION) == 3
    assert value(found, "kafka_consumergroup_status", consumergroup="g") == 3
    (group,) = api.cluster_json(states[-1])["groups"]
    assert (group["status"], group["status_window_completeness"]) == ("ERR", 1.0)
    partition = dict(group["partitions"][0])
    assert partition.pop("lag_seconds") == pytest.approx(25.0)
    assert partition == {
        "topic": "t",
        "partition": 0,
        "committed_offset": 50,
        "latest_offset": 300,
        "lag": 250,
        "lag_seconds_method": "extrapolated",  # committed offset older than the history
        "status": "STOP",
        "status_window_complete": True,
        "status_window_completeness": 1.0,
        "retention_margin": None,  # the recording-less snapshot has no topic configs
        "lost_messages": 0,
    }
    assert group["topics"][0]["max_lag_seconds"] == pytest.approx(25.0)

    first = api.cluster_json(states[0])["groups"][0]
    assert (first["status"], first["status_window_completeness"]) == ("OK", 0.0)
    assert first["partitions"][0]["status_window_complete"] is False
    assert first["partitions"][0]["status_window_completeness"] == pytest.approx(1 / 3)
    assert first["partitions"][0]["lag_seconds"] is None


def test_a_live_owner_that_does_not_move_is_stall_also_while_describe_groups_fails() -> None:
    snapshots = [_snap(10.0 * i, 100 * i, 50, owner=True) for i in (1, 2, 3)]
    # DescribeGroups fails: membership unknown, the last known one is kept (not STOP).
    snapshots.append(_snap(40.0, 400, 50, owner=None, errors=(PhaseError("groups", "timed out"),)))
    states = _chain(snapshots)
    assert states[2].lag_status[("g", "t", 0)].status is PartitionStatus.STALL
    assert states[3].lag_status[("g", "t", 0)].status is PartitionStatus.STALL
    assert states[3].group_status["g"].status is GroupStatus.ERR


def test_a_partial_collection_reports_nothing_unseen_and_keeps_the_history() -> None:
    offsets_failed = (PhaseError("offsets", "1 of 2 partition offsets failed"),)
    states = _chain(
        [
            _snap(10.0, 100, 50),
            _snap(20.0, 200, 50),
            _snap(30.0, None, 50, errors=offsets_failed),  # latest offset unknown
            empty_snapshot(40.0, (PhaseError("metadata", "KafkaError _TRANSPORT: down"),)),
            _snap(50.0, 500, 50),
        ]
    )
    for partial in states[2:4]:
        assert partial.lag_seconds == {} and partial.lag_status == {}
        assert partial.group_status == {}
    assert states[3].out_of_sync_seconds == {}
    # The window kept its two observations through both: the third good one completes it.
    assert states[4].lag_status[("g", "t", 0)].status is PartitionStatus.STOP
    assert states[4].lag_seconds == {("g", "t", 0): pytest.approx(45.0)}


def test_isr_history_times_out_of_sync_replicas_and_counts_shrinks_and_expands() -> None:
    states = _chain(
        [
            _snap(0.0, 0, 0),
            _snap(10.0, 0, 0, isr=(1, 2)),  # replica 3 left between 0 and 10: since 5
            _snap(20.0, 0, 0, isr=(1, 2)),
            empty_snapshot(25.0, (PhaseError("metadata", "down"),)),
            _snap(30.0, 0, 0, isr=(1, 2, 3)),
        ]
    )
    oos = "kafka_partition_replica_out_of_sync_seconds"
    labels = {"topic": "t", "partition": "0"}
    assert [value(_found(s), oos, broker="3", **labels) for s in states] == [0, 5, 15, None, 0]
    assert {value(_found(states[2]), oos, broker=b, **labels) for b in ("1", "2")} == {0}
    assert states[2].out_of_sync_seconds == {("t", 0, 3): 15.0}  # only replicas out of the ISR
    found = _found(states[2])
    assert value(found, "kafka_broker_isr_shrinks_total", broker="3") == 1
    assert value(found, "kafka_broker_isr_expands_total", broker="3") == 0
    assert value(found, "kafka_broker_isr_shrinks_total", broker="1") == 0  # 0 before any change
    # Counters live through a collection without metadata.
    assert value(_found(states[3]), "kafka_broker_isr_shrinks_total", broker="3") == 1
    assert dict(states[4].isr_expands) == {1: 0, 2: 0, 3: 1}


def test_derive_without_a_history_carries_the_previous_one() -> None:
    first = derive(None, _snap(10.0, 100, 50))
    second = derive(first, _snap(20.0, 200, 50))
    assert second.history is first.history
    assert second.lag_seconds == {("g", "t", 0): pytest.approx(15.0)}
    assert first.history.lag_status.window_size == 10


# --- the five real recordings, replayed in order ------------------------------------------


@cache
def _replayed(window: int) -> tuple[Replayed, ...]:
    paths = [fixture_path(s) for s in SCENARIOS]
    return tuple(replay(paths, lag_status_window=window, granularity=FULL))


def _by_scenario(window: int = 5) -> dict[str, Samples]:
    return {s: samples(r.exposition) for s, r in zip(SCENARIOS, _replayed(window), strict=True)}


def _series(found: Samples, name: str, **match: str) -> dict[tuple[str, ...], float]:
    return {
        tuple(v for k, v in labels.items() if k not in match): v
        for (n, labels), v in found.items()
        if n == name and all(labels.get(k) == m for k, m in match.items())
    }


def test_replay_out_of_sync_seconds_of_broker_1_while_it_is_down_and_0_after() -> None:
    replayed = _replayed(5)
    by_scenario = _by_scenario()
    down_at, before_at = replayed[2].collected_at, replayed[1].collected_at
    oos = "kafka_partition_replica_out_of_sync_seconds"
    down = _series(by_scenario["broker-down"], oos)
    broker_1 = {k: v for k, v in down.items() if k[0] == "1"}
    assert len(broker_1) == 67  # every replica of broker 1, left between the two collections
    assert list(broker_1.values()) == [pytest.approx((down_at - before_at) / 2)] * 67
    assert {v for k, v in down.items() if k[0] != "1"} == {0.0}
    for scenario in ("healthy", "healthy-later", "broker-back-imbalanced", "rebalanced"):
        assert set(_series(by_scenario[scenario], oos).values()) == {0.0}, scenario
        assert len(_series(by_scenario[scenario], oos)) == 3 * 67

    shrinks = [_series(by_scenario[s], "kafka_broker_isr_shrinks_total") for s in SCENARIOS]
    expands = [_series(by_scenario[s], "kafka_broker_isr_expands_total") for s in SCENARIOS]
    assert [s[("1",)] for s in shrinks] == [0, 0, 67, 67, 67]
    assert [s[("1",)] for s in expands] == [0, 0, 0, 67, 67]
    assert {s[("2",)] + s[("3",)] for s in shrinks + expands} == {0}

    measure_0 = next(
        p
        for t in replayed[2].cluster_json["topics"]
        if t["name"] == "measure"
        for p in t["partitions"]
        if p["partition"] == 0
    )
    assert measure_0["out_of_sync_seconds"] == {
        "1": pytest.approx(16.49, abs=0.01),
        "2": 0.0,
        "3": 0.0,
    }


def test_replay_lag_seconds_billing_small_vigia_ingest_growing() -> None:
    by_scenario = _by_scenario()
    billing = [
        _series(found, "kafka_consumergroup_lag_seconds", consumergroup="billing")
        for found in by_scenario.values()
    ]
    assert billing[0] == {}  # first collection: lag, but no history yet
    for later in billing[1:]:
        assert len(later) == 6 and all(0.1 < v < 1.0 for v in later.values())
    ingest_max = [
        value(
            found,
            "kafka_consumergroup_max_lag_seconds",
            consumergroup="vigia-ingest",
            topic="measure",
        )
        for found in by_scenario.values()
    ]
    assert ingest_max[0] is None
    known = [v for v in ingest_max[1:] if v is not None]
    assert len(known) == 4 and known == sorted(known) and known[0] > 60
    # An Empty group with lag 0 has lag 0 s.
    assert set(
        _series(
            by_scenario["rebalanced"],
            "kafka_consumergroup_lag_seconds",
            consumergroup="events-reader",
        ).values()
    ) == {0.0}


def test_replay_status_with_a_small_window_and_ok_with_an_incomplete_one() -> None:
    last = _by_scenario(5)["rebalanced"]
    assert _series(last, "kafka_consumergroup_status") == {
        ("billing",): 1,
        ("events-reader",): 1,
        ("verify-group",): 3,
        ("verify-group-848",): 1,
        ("vigia-ingest",): 3,
    }
    ingest = _series(last, "kafka_consumergroup_partition_status", consumergroup="vigia-ingest")
    assert ingest == {(str(p), "measure"): 3 for p in range(6)}  # STOP
    groups = {g["group_id"]: g for g in _replayed(5)[-1].cluster_json["groups"]}
    assert (groups["vigia-ingest"]["status"], groups["billing"]["status"]) == ("ERR", "OK")
    assert {p["status"] for p in groups["vigia-ingest"]["partitions"]} == {"STOP"}

    # The default window (10) is half full after five collections: OK, completeness 0.5.
    default = _replayed(10)[-1].cluster_json["groups"]
    assert {g["status"] for g in default} == {"OK"}
    assert {g["status_window_completeness"] for g in default} == {0.0}
    assert {p["status_window_completeness"] for g in default for p in g["partitions"]} == {0.5}
    assert set(
        _series(samples(_replayed(10)[-1].exposition), "kafka_consumergroup_status").values()
    ) == {1}


def test_replay_has_no_probe() -> None:
    (only,) = replay([fixture_path("healthy")])
    assert value(samples(only.exposition), "vigia_probe_up") == 0
    assert not any(
        n.startswith("vigia_probe_") and n != "vigia_probe_up" for n, _ in samples(only.exposition)
    )
    assert only.cluster_json["probe"] == {
        "status": "disabled",
        "topic": None,
        "interval_seconds": None,
        "brokers": [],
        "coverage": [],
    }
