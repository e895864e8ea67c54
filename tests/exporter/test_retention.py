"""Retention margins, catch-up, losses and outage budgets (exporter/model/retention.py,
docs/lag.md#retention): the pure rules, then through `derive` and /metrics."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.exporter.exposition import samples, value
from tests.exporter.recorded import snapshot
from vigia.exporter.collectors import render
from vigia.exporter.model.retention import (
    CatchUp,
    CatchUpEstimate,
    Margin,
    PartitionLog,
    Progress,
    Retention,
    RetentionTracker,
    at_risk,
    catch_up,
    first_to_go,
    outage_budget,
    partition_margin,
    topic_retention,
)
from vigia.exporter.model.state import ExporterState, derive
from vigia.exporter.web import api

HOUR = 3600.0
DAY_MS = 86_400_000


@pytest.mark.parametrize(
    ("configs", "expected"),
    [
        ({"retention.ms": "86400000", "cleanup.policy": "delete"}, Retention(DAY_MS, None)),
        (
            {"retention.ms": "-1", "retention.bytes": "1000", "cleanup.policy": "delete"},
            Retention(None, 1000),
        ),
        ({"retention.ms": "86400000", "cleanup.policy": "compact,delete"}, Retention(DAY_MS, None)),
        ({"retention.ms": "86400000", "cleanup.policy": "compact"}, "compacted"),
        ({"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"}, "infinite"),
        ({"min.insync.replicas": "2"}, "unknown"),
        ({}, "unknown"),
    ],
)
def test_which_topics_kafka_deletes_from(configs: dict[str, str], expected: object) -> None:
    assert topic_retention(configs) == expected


LOG = PartitionLog(earliest=1_000, latest=11_000, size_bytes=1_000_000, produced_per_second=10.0)


def test_the_time_margin_is_the_retention_less_the_oldest_unread_records_age() -> None:
    margin = partition_margin(Retention(DAY_MS, None), LOG, 5_000, 2 * HOUR, "record")
    assert margin == Margin(22 * HOUR, "time", "record")
    # Past its retention but not deleted yet (whole segments go): 0, not negative.
    assert partition_margin(Retention(HOUR * 1000, None), LOG, 5_000, 2 * HOUR, "record") == (
        Margin(0.0, "time", "record")
    )


def test_a_caught_up_group_has_the_whole_retention_and_a_deleted_offset_none() -> None:
    assert partition_margin(Retention(DAY_MS, None), LOG, 11_000, None, None) == Margin(
        86_400.0, "time", "caught_up"
    )
    assert partition_margin(Retention(DAY_MS, None), LOG, 900, 5.0, "record") == Margin(
        0.0, "time", "deleted"
    )
    # Lag but no age known: no margin rather than a made-up one.
    assert partition_margin(Retention(DAY_MS, None), LOG, 5_000, None, None) is None


def test_the_size_margin_is_the_room_left_at_the_current_growth() -> None:
    # 100 bytes a record; 6,000 unread = 600,000 bytes of a 1,000,000 limit; 10 records/s = 1 kB/s.
    margin = partition_margin(Retention(None, 1_000_000), LOG, 5_000, 2 * HOUR, "record")
    assert margin == Margin(400.0, "size", "rate")
    # Both limits: the one that deletes first.
    both = partition_margin(Retention(DAY_MS, 1_000_000), LOG, 5_000, 2 * HOUR, "record")
    assert both == Margin(400.0, "size", "rate")
    # Nothing written: size retention deletes nothing, the time limit alone binds.
    idle = replace(LOG, produced_per_second=0.0)
    assert partition_margin(Retention(None, 1_000_000), idle, 5_000, None, None) is None
    assert partition_margin(Retention(DAY_MS, 1_000_000), idle, 5_000, HOUR, "record") == Margin(
        23 * HOUR, "time", "record"
    )
    # Growth or size not known yet (a partition's first collection): no margin, not the time
    # limit's alone, which could be days when the size limit binds in minutes.
    first_sight = replace(LOG, produced_per_second=None)
    assert partition_margin(Retention(DAY_MS, 1_000_000), first_sight, 5_000, HOUR, "x") is None
    # Nor the size limit's alone while the oldest unread record's age is unknown.
    assert partition_margin(Retention(DAY_MS, 1_000_000), LOG, 5_000, None, None) is None


def test_a_deleted_record_comes_first_among_margins_at_0() -> None:
    due = Margin(0.0, "size", "rate")  # may be deleted at the next retention check
    gone = Margin(0.0, "time", "deleted")
    assert min([due, gone], key=first_to_go) is gone
    assert min([Margin(5.0, "time", "record"), due], key=first_to_go) is due


def test_the_outage_budget_is_the_first_partition_to_lose_a_record_if_consumers_stopped_now() -> (
    None
):
    fast = replace(LOG, produced_per_second=100.0)  # 10 kB/s fills 1 MB in 100 s
    assert outage_budget(Retention(DAY_MS, 1_000_000), [LOG, fast]) == Margin(100.0, "size", "rate")
    assert outage_budget(Retention(DAY_MS, None), [LOG, fast]) == Margin(
        86_400.0, "time", "caught_up"
    )


@pytest.mark.parametrize(
    ("backlog_before", "backlog_now", "committed_moved", "state", "seconds"),
    [
        (1_000, 400, True, CatchUp.DRAINING, 400 / (600 / 60)),
        (1_000, 1_005, True, CatchUp.HOLDING, None),
        (1_000, 2_000, False, CatchUp.GROWING, None),
        (1_000, 0, True, CatchUp.CAUGHT_UP, 0.0),
    ],
)
def test_the_backlog_drains_holds_grows_or_is_caught_up(
    backlog_before: int, backlog_now: int, committed_moved: bool, state: CatchUp, seconds: float
) -> None:
    estimate = catch_up(
        Progress(0.0, backlog_before, 50),
        Progress(60.0, backlog_now, 60 if committed_moved else 50),
    )
    assert estimate is not None
    assert (estimate.state, estimate.seconds) == (state, seconds)
    assert estimate.drain_per_second == pytest.approx((backlog_before - backlog_now) / 60)


def _estimate(
    state: CatchUp, seconds: float | None = None, consuming: bool = True
) -> CatchUpEstimate:
    return CatchUpEstimate(state, 100, 1.0, consuming, seconds)


def test_at_risk_when_the_catch_up_ends_after_the_margin_or_nothing_brings_it_back() -> None:
    floor = 6 * HOUR
    margin = Margin(2 * HOUR, "time", "record")
    assert at_risk(margin, _estimate(CatchUp.DRAINING, 3 * HOUR), floor)
    assert not at_risk(margin, _estimate(CatchUp.DRAINING, HOUR), floor)
    assert at_risk(margin, _estimate(CatchUp.GROWING), floor)
    assert not at_risk(Margin(7 * HOUR, "time", "record"), _estimate(CatchUp.GROWING), floor)
    # Holding while consuming: the oldest unread record keeps its age, nothing heads to a loss.
    assert not at_risk(margin, _estimate(CatchUp.HOLDING), floor)
    assert at_risk(margin, _estimate(CatchUp.HOLDING, consuming=False), floor)
    assert not at_risk(margin, _estimate(CatchUp.CAUGHT_UP, 0.0), floor)


def test_each_deleted_record_is_counted_once_and_a_restart_counts_none_twice() -> None:
    key = ("g", "t", 0)
    tracker = RetentionTracker()

    def seen(committed: int, earliest: int, on: RetentionTracker = tracker) -> tuple[int, int]:
        loss = on.losses({key: committed}, {("t", 0): earliest}, prune=True)[key]
        return loss.missing, loss.counted

    assert seen(100, 50) == (0, 0)
    assert seen(100, 100) == (0, 0)
    assert seen(100, 160) == (60, 60)  # deleted unread
    assert seen(100, 200) == (100, 100)  # 40 more
    assert seen(100, 200) == (100, 100)  # nothing new
    assert seen(200, 200) == (0, 100)  # the group moved on to the log start
    assert seen(260, 230) == (0, 100)  # consumed before deletion
    # An exporter started while the gap is open reports it, and counts only what is new.
    restarted = RetentionTracker()
    assert seen(100, 200, restarted) == (100, 0)
    assert seen(100, 210, restarted) == (110, 10)


def test_the_windows_reach_back_one_window_and_keep_a_baseline() -> None:
    tracker = RetentionTracker(window_seconds=60.0)
    rates = [
        tracker.produced_per_second(at, {("t", 0): int(at * 10)}, prune=True)
        for at in (0.0, 15.0, 30.0, 75.0, 90.0)
    ]
    assert rates[0] == {}
    assert [r[("t", 0)] for r in rates[1:]] == pytest.approx([10.0] * 4)
    # A recreated topic starts a new log: no negative rate.
    assert tracker.produced_per_second(105.0, {("t", 0): 5}, prune=True) == {}


def test_the_catch_up_reads_back_one_window_and_a_sum_past_64_bits_does_not_break_it() -> None:
    tracker = RetentionTracker(window_seconds=60.0)
    key = ("g", "t")

    def seen(at: float, backlog: int, committed: int) -> CatchUpEstimate | None:
        return tracker.catch_up({key: Progress(at, backlog, committed)}, prune=True).get(key)

    assert seen(0.0, 1000, 0) is None  # no span yet
    seen(15.0, 900, 100)
    # From the newest sample a window back or older (15 s), not the first one.
    drained = seen(75.0, 300, 700)
    assert drained is not None and drained.drain_per_second == pytest.approx(600 / 60)
    overflowing = seen(90.0, 2**70, 2**70)
    assert overflowing is not None and overflowing.state is CatchUp.GROWING


# -- through derive and /metrics -------------------------------------------------------------

GROUP = {"consumergroup": "vigia-ingest", "topic": "measure"}


def _collections(earliest_steps: list[int], *, retention_ms: int = DAY_MS) -> list[ExporterState]:
    """vigia-ingest stopped on `measure` (recorded healthy cluster) while the log start of
    partition 0 moves by `earliest_steps` and 1,000 records a collection are produced."""
    recorded = snapshot("healthy")
    states: list[ExporterState] = []
    for i, step in enumerate(earliest_steps):
        topics = []
        for t in recorded.topics:
            if t.name == "measure":
                configs = {**t.configs, "retention.ms": str(retention_ms)}
                partitions = tuple(
                    replace(
                        p,
                        earliest_offset=(p.earliest_offset or 0)
                        + (step if p.partition == 0 else 0),
                        latest_offset=(p.latest_offset or 0) + 1_000 * i,
                    )
                    for p in t.partitions
                )
                t = replace(t, configs=configs, partitions=partitions)
            topics.append(t)
        snap = replace(recorded, collected_at=recorded.collected_at + 15 * i, topics=tuple(topics))
        states.append(derive(states[-1] if states else None, snap))
    return states


def test_a_stopped_group_is_growing_at_risk_and_counts_what_retention_deleted() -> None:
    recorded = snapshot("healthy")
    (measure,) = [t for t in recorded.topics if t.name == "measure"]
    (ingest,) = [g for g in recorded.groups if g.group_id == "vigia-ingest"]
    committed_0 = next(c.offset for c in ingest.committed or () if c.partition == 0)
    start_0 = measure.partitions[0].earliest_offset or 0
    deleted_past_commit = committed_0 - start_0 + 500
    # Two hours' retention: a margin under the 6 h floor, and the backlog grows.
    states = _collections(
        [0, 0, deleted_past_commit, deleted_past_commit + 200], retention_ms=2 * 3_600_000
    )

    view = states[1].retention
    assert view.catch_up[("vigia-ingest", "measure")].state is CatchUp.GROWING
    margin = view.margins[("vigia-ingest", "measure")]
    assert margin.limit == "time" and 0 < margin.seconds < 2 * HOUR
    assert view.at_risk[("vigia-ingest", "measure")] is True
    found = samples(render(states[1]))
    assert value(found, "kafka_consumergroup_retention_at_risk", **GROUP) == 1
    assert value(found, "kafka_consumergroup_catchup_state", **GROUP) == int(CatchUp.GROWING)
    assert value(found, "kafka_consumergroup_catchup_seconds", **GROUP) is None
    assert value(found, "kafka_consumergroup_lost_messages_sum", **GROUP) == 0

    after = samples(render(states[2]))
    assert value(after, "kafka_consumergroup_lost_messages", partition="0", **GROUP) == 500
    assert value(after, "kafka_consumergroup_lost_messages_sum", **GROUP) == 500
    assert value(after, "kafka_consumergroup_lost_messages_detected_total", **GROUP) == 500
    assert states[2].retention.margins[("vigia-ingest", "measure")] == Margin(
        0.0, "time", "deleted"
    )
    later = samples(render(states[3]))
    assert value(later, "kafka_consumergroup_lost_messages_detected_total", **GROUP) == 700
    (group,) = [g for g in api.cluster_json(states[3])["groups"] if g["group_id"] == "vigia-ingest"]
    assert (group["topics"][0]["lost_messages"], group["topics"][0]["lost_messages_detected"]) == (
        700,
        700,
    )
    assert group["partitions"][0]["lost_messages"] == 700


def test_a_stopped_group_with_days_of_margin_is_not_at_risk() -> None:
    (*_, last) = _collections([0, 0, 0])
    assert last.retention.catch_up[("vigia-ingest", "measure")].state is CatchUp.GROWING
    assert last.retention.at_risk[("vigia-ingest", "measure")] is False


def test_a_compacted_topic_has_no_margin_and_is_never_at_risk() -> None:
    recorded = snapshot("healthy")
    topics = tuple(
        replace(t, configs={**t.configs, "cleanup.policy": "compact"}) if t.name == "measure" else t
        for t in recorded.topics
    )
    first = derive(None, replace(recorded, topics=topics))
    later = derive(first, replace(recorded, topics=topics, collected_at=recorded.collected_at + 15))
    assert ("vigia-ingest", "measure") not in later.retention.margins
    assert ("vigia-ingest", "measure") not in later.retention.at_risk
    assert "measure" not in later.retention.outage_budgets
    found = samples(render(later))
    assert value(found, "kafka_consumergroup_retention_at_risk", **GROUP) is None
    assert value(found, "kafka_topic_outage_budget_seconds", topic="measure", limit="time") is None
