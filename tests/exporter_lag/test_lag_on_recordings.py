"""Lag seconds and lag status on the real Kafka 4.0 recordings (five collections, 15–33 s apart)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KAFKA_FIXTURES, SCENARIOS
from tests.exporter.exposition import samples, value
from vigia.exporter.kafka.record_times import RecordTimeReader
from vigia.exporter.model.granularity import FULL
from vigia.exporter.model.lag_seconds import OffsetHistory
from vigia.exporter.model.lag_status import (
    GroupStatus,
    LagStatusTracker,
    Observation,
    PartitionStatus,
)
from vigia.exporter.model.record_time import RecordBudget
from vigia.exporter.model.snapshot import RecordTime
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.recording import Replayed, load_snapshot, replay

# README timeline: the earlier recording pass (21:29–21:32 UTC) was reset, then the loader wrote
# `measure` again before the background producer started at 21:33:11.
LOADER_AFTER = 1795296720.0  # 2026-11-21 21:32:00 UTC
LOADER_BEFORE = 1795296791.0  # 21:33:11 UTC


@dataclass(frozen=True)
class Collection:
    collected_at: float
    latest: dict[tuple[str, int], int]
    observations: dict[tuple[str, str, int], Observation]


def collections() -> Iterator[Collection]:
    for scenario in SCENARIOS:
        snapshot = load_snapshot(KAFKA_FIXTURES / f"{scenario}.json")
        latest = {
            (t.name, p.partition): p.latest_offset
            for t in snapshot.topics
            for p in t.partitions
            if p.latest_offset is not None
        }
        observations = {}
        for group in snapshot.groups:
            owned = {(r.topic, r.partition) for m in group.members or () for r in m.assignment}
            for c in group.committed or ():
                observations[(group.group_id, c.topic, c.partition)] = Observation(
                    snapshot.collected_at,
                    c.offset,
                    latest[(c.topic, c.partition)],
                    (c.topic, c.partition) in owned,
                )
        yield Collection(snapshot.collected_at, latest, observations)


@pytest.mark.parametrize("tolerance", [0.0, 1.0])
def test_billing_lag_seconds_is_its_lag_at_the_latest_rate(tolerance: float) -> None:
    history = OffsetHistory(tolerance_seconds=tolerance)
    previous: Collection | None = None
    checked = 0
    for collection in collections():
        history.record(collection.collected_at, collection.latest)
        for (group, topic, partition), o in collection.observations.items():
            if group != "billing":
                continue
            seconds = history.lag_seconds(topic, partition, o.committed, o.latest, o.time)
            if previous is None:
                assert seconds is None  # first collection: nothing to interpolate from
                continue
            # The ~100–300 unread messages arrived after the previous collection: the estimate
            # is the lag divided by the partition's rate since then.
            rate = (o.latest - previous.latest[(topic, partition)]) / (
                collection.collected_at - previous.collected_at
            )
            assert seconds == pytest.approx(
                o.lag / rate, abs=1e-6 + tolerance
            )  # unix-time float rounding
            assert 0.1 < seconds < 1.0
            checked += 1
        previous = collection
    assert checked == 4 * 6


def test_stopped_vigia_ingest_ages_with_the_clock_and_dates_back_to_the_loader() -> None:
    history = OffsetHistory()
    ages: list[float] = []
    for collection in collections():
        history.record(collection.collected_at, collection.latest)
        seconds = history.lag_seconds(
            "measure", 0, 20040, collection.latest[("measure", 0)], collection.collected_at
        )
        if seconds is None:
            continue
        ages.append(seconds)
        # Committed offsets older than the recorded history: extrapolated at the history's rate.
        produced = collection.collected_at - seconds
        assert LOADER_AFTER <= produced <= LOADER_BEFORE
    assert len(ages) == 4
    assert ages == sorted(ages)


def test_lag_status_over_the_recordings() -> None:
    complete = LagStatusTracker(window_size=5)
    incomplete = LagStatusTracker(window_size=10)
    for collection in collections():
        complete.observe(collection.observations)
        incomplete.observe(collection.observations)

    report = complete.evaluate()
    assert {g: e.status for g, e in report.groups.items()} == {
        "billing": GroupStatus.OK,  # Stable member, lag goes up and down
        "events-reader": GroupStatus.OK,  # lag 0
        "verify-group-848": GroupStatus.OK,  # lag 0
        "vigia-ingest": GroupStatus.ERR,  # Empty, offsets frozen while 2,000 msg/s arrive
        "verify-group": GroupStatus.ERR,  # Empty, 2,000 unread messages on an idle topic
    }
    stopped = {k for k, e in report.partitions.items() if e.status is PartitionStatus.STOP}
    assert stopped == {("vigia-ingest", "measure", p) for p in range(6)} | {
        ("verify-group", "verify-6x3", p) for p in range(6)
    }
    assert all(e.complete == 1.0 for e in report.groups.values())

    waiting = incomplete.evaluate()
    assert {e.status for e in waiting.partitions.values()} == {PartitionStatus.OK}
    assert {e.complete for e in waiting.partitions.values()} == {0.5}


# -- lag seconds from record timestamps on the recordings -------------------------------------
# `verify-6x3` is idle through the recordings: its newest records (the recorded
# `latest_timestamp_ms`, from ListOffsets max_timestamp) were written at 21:21:20.8 UTC, 12 minutes
# before `healthy`. Every record of a partition is at most that new, so it stands in for the
# record at `verify-group`'s committed offset: the age it gives is a lower bound of the true one.
VERIFY_WRITTEN_BEFORE = 1795296080.825  # max of the six recorded latest_timestamp_ms


def _newest_timestamps() -> dict[tuple[str, int], int]:
    data = json.loads((KAFKA_FIXTURES / f"{SCENARIOS[0]}.json").read_text())
    return {
        (t["name"], p["partition"]): p["latest_timestamp_ms"]
        for t in data["topics"]
        if t["name"] == "verify-6x3"
        for p in t["partitions"]
    }


class _TableReader(RecordTimeReader):
    """The real record-times step (planning, budget, misses) with Kafka replaced by a table:
    verify-6x3 answers with its recorded newest timestamp, every other read goes unanswered."""

    def __init__(self, partitions: int) -> None:
        super().__init__("unused:9092", {}, RecordBudget(partitions, 1.0))
        self.asked: list[list[tuple[str, int, int]]] = []

    def read(
        self, targets: Sequence[tuple[str, int, int]], timeout: float
    ) -> tuple[tuple[RecordTime, ...], list[str]]:
        self.asked.append(list(targets))
        newest = _newest_timestamps()
        return tuple(
            RecordTime(t, p, o, o, newest[(t, p)]) for t, p, o in targets if (t, p) in newest
        ), []


def _verify_group(state: ExporterState) -> dict[int, tuple[float | None, str | None]]:
    return {
        p: (
            state.lag_seconds.get(("verify-group", "verify-6x3", p)),
            state.lag_seconds_methods.get(("verify-group", "verify-6x3", p)),
        )
        for p in range(6)
    }


def api_groups(item: Replayed) -> dict[str, Any]:
    return {g["group_id"]: g for g in item.cluster_json["groups"]}


def test_history_only_the_idle_backlog_reads_as_the_replay_uptime() -> None:
    """The bug of issue 10 §2 on real data: 12-minute-old messages read as ≤ 96 s."""
    states = replay([KAFKA_FIXTURES / f"{s}.json" for s in SCENARIOS])
    first = api_groups(states[0])["verify-group"]
    assert {p["lag_seconds"] for p in first["partitions"]} == {None}
    last = api_groups(states[-1])["verify-group"]
    uptime = states[-1].collected_at - states[0].collected_at
    assert {p["lag_seconds_method"] for p in last["partitions"]} == {"extrapolated"}
    assert max(p["lag_seconds"] for p in last["partitions"]) == pytest.approx(uptime)


def test_record_times_in_a_recording_give_the_age_from_the_first_collection(tmp_path: Path) -> None:
    newest = _newest_timestamps()
    paths = []
    for i, scenario in enumerate(SCENARIOS):
        data = json.loads((KAFKA_FIXTURES / f"{scenario}.json").read_text())
        if i == 0:  # read once: later collections keep the read while the offset stays
            data["record_times"] = [
                {
                    "topic": c["topic"],
                    "partition": c["partition"],
                    "offset": c["offset"],
                    "record_offset": c["offset"],
                    "timestamp_ms": newest[(c["topic"], c["partition"])],
                }
                for g in data["groups"]
                if g["group_id"] == "verify-group"
                for c in g["committed"]
            ]
        path = tmp_path / f"{scenario}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    for item in replay(paths, granularity=FULL):
        group = api_groups(item)["verify-group"]
        for p in group["partitions"]:
            assert p["lag_seconds_method"] == "record"
            written = newest[("verify-6x3", p["partition"])] / 1000
            assert p["lag_seconds"] == pytest.approx(item.collected_at - written)
        assert group["topics"][0]["max_lag_seconds"] > item.collected_at - VERIFY_WRITTEN_BEFORE
        assert group["topics"][0]["max_lag_seconds"] > 720  # 12 minutes, from the first one
        assert group["topics"][0]["max_lag_seconds_method"] == "record"
        found = samples(item.exposition)
        assert (
            value(
                found,
                "kafka_consumergroup_lag_seconds_partitions",
                consumergroup="verify-group",
                method="record",
            )
            == 6
        )


def _run(reader: _TableReader) -> list[ExporterState]:
    history = History()
    state: ExporterState | None = None
    states = []
    for scenario in SCENARIOS:
        snapshot = reader(load_snapshot(KAFKA_FIXTURES / f"{scenario}.json"), state, 5.0)
        state = derive(state, snapshot, history)
        states.append(state)
    return states


def test_what_nothing_answers_is_read_at_once_and_reads_failing_twice_keep_to_the_budget() -> None:
    reader = _TableReader(partitions=4)
    states = _run(reader)
    # After the start nothing answers any lagging offset: all 18 are read, whatever the budget.
    assert len(reader.asked[0]) == 18
    assert {t for t in reader.asked[0] if t[0] == "verify-6x3"} == {
        ("verify-6x3", p, o) for p, o in _verify_offsets(states[0]).items()
    }
    read = [{p for p, (_, m) in _verify_group(s).items() if m == "record"} for s in states]
    assert [len(r) for r in read] == [6] * len(states)
    # A read is never asked again while its offset stays.
    assert not [t for asked in reader.asked[1:] for t in asked if t[0] == "verify-6x3"]
    # vigia-ingest's offsets go unanswered here: missed twice in a row, they are failing and
    # share the budget of 4 from the third read on.
    assert len(reader.asked[1]) == 12
    assert len(reader.asked[2]) == 4
    newest = _newest_timestamps()
    for state in states:
        for p, (seconds, _) in _verify_group(state).items():
            assert seconds == pytest.approx(
                state.snapshot.collected_at - newest[("verify-6x3", p)] / 1000
            )


def _verify_offsets(state: ExporterState) -> dict[int, int]:
    return {
        i.partition: i.committed
        for i in state.group_lags
        if i.group == "verify-group" and i.topic == "verify-6x3"
    }
