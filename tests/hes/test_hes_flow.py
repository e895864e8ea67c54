"""The flow verdict (exporter.model.pipeline_flow) through the real source watch, on the simulated
HES and topic of tests/hes_world.py."""

from __future__ import annotations

import logging

import pytest

from tests.hes_world import LOOK, STALL_AFTER, START, World, run, watcher
from vigia.exporter.model.pipeline_flow import (
    IDLE,
    MOVING,
    PENDING,
    STALLED,
    UNKNOWN,
    next_flow,
)
from vigia.exporter.model.pipeline_hops import HesReading, SourceLook


def test_the_first_look_cannot_judge_and_the_second_sees_rows_move() -> None:
    world = World()
    source = watcher(world)
    assert source.flow is None
    first, second = run(world, source, 2 * LOOK)
    assert first.state == UNKNOWN and first.end_offsets == world.end_offsets - 15
    assert second.state == MOVING and second.moved_at == world.now


@pytest.mark.parametrize("phase", range(0, 15, 2))
def test_a_connector_that_stops_moving_rows_is_stalled_within_45_seconds(
    phase: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 23's stall: the HES keeps writing and nothing reaches the topic. Whatever the phase
    of the looks, the verdict comes at most one look plus --stall-after after the last record."""
    world = World()
    source = watcher(world)
    run(world, source, 5 * 60)
    world.tick(phase)
    world.connector = False
    stopped = world.now + world.latency  # the last row on time, then nothing
    with caplog.at_level(logging.INFO, logger="vigia.exporter.hes.watch"):
        flows = run(world, source, 10 * 60)
        seen = next(f for f in flows if f.state == STALLED)
        assert seen.checked_at - stopped <= LOOK + STALL_AFTER
        assert all(f.state == STALLED for f in flows if f.checked_at >= seen.checked_at)
        assert seen.pending_since is not None
        assert seen.checked_at - seen.pending_since >= STALL_AFTER
        world.connector = True  # the rebalance delay is over: the backlog drains
        after = run(world, source, 2 * LOOK)
    assert [f.state for f in after] == [MOVING, MOVING]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        (
            "WARNING",
            f"nothing reached topic measure for {seen.checked_at - seen.pending_since:.0f} s "
            "while the HES wrote rows it lacks: connector hes-measure moves nothing "
            "(kafka_connect_connector_stalled)",
        ),
        ("INFO", "rows reach topic measure again (flow moving)"),
    ]


def test_a_hes_with_nothing_to_write_is_never_a_stall() -> None:
    """Night: the HES writes nothing, so nothing moves and nothing is stalled, whether the
    connector works or not."""
    world = World()
    source = watcher(world)
    run(world, source, 2 * 60)
    world.writing = 0
    quiet = run(world, source, 60)
    world.connector = False
    flows = run(world, source, 30 * 60)
    assert {f.state for f in quiet[2:] + flows} == {IDLE}


def test_old_rows_written_last_are_not_a_stall_once_the_hes_is_quiet() -> None:
    """A backfill of past days leaves older rows as the topic's last records, so the HES's newest
    ts stays ahead of them; with no new row written, that is nothing to move."""
    world = World()
    source = watcher(world)
    run(world, source, 2 * 60)
    world.writing = 0
    world.write_rows([START - 86_400 + i for i in range(500)])
    world.deliver_now()
    flows = run(world, source, 20 * 60)
    assert flows[0].state == MOVING
    assert {f.state for f in flows[1:]} == {IDLE}


def test_bursts_delivered_in_seconds_are_never_a_stall() -> None:
    """A HES that writes a burst every 15 minutes, just before a look, and a connector that
    needs 10 s to deliver it: pending for a look, then moving."""
    world = World(latency=10.0)
    world.writing = 0
    source = watcher(world)
    run(world, source, 2 * LOOK)
    states = []
    for _ in range(4):
        world.tick(LOOK * 4 - 1)
        world.write_rows([world.now] * 300)
        world.tick(1)
        source.watch_once()
        assert source.flow is not None
        states.append(source.flow.state)
        states += [f.state for f in run(world, source, 5 * LOOK)]
    assert STALLED not in states
    assert states[:3] == [PENDING, MOVING, IDLE]


def test_a_slow_connector_that_keeps_writing_is_moving() -> None:
    """Two minutes behind the HES (HesToKafkaBehind's business), but rows keep arriving."""
    world = World(latency=120.0)
    source = watcher(world)
    flows = run(world, source, 20 * 60)
    assert {f.state for f in flows[10:]} == {MOVING}


def test_a_stall_in_a_quiet_spell_is_seen_when_the_hes_writes_again() -> None:
    world = World()
    world.writing = 0
    source = watcher(world)
    run(world, source, 2 * 60)
    world.connector = False
    assert {f.state for f in run(world, source, 10 * 60)} == {IDLE}
    world.writing = 1
    wrote = world.now
    flows = run(world, source, 3 * 60)
    seen = next(f for f in flows if f.state == STALLED)
    assert seen.checked_at - wrote <= LOOK + STALL_AFTER


def test_looks_that_cannot_read_judge_nothing_and_keep_the_evidence() -> None:
    """The HES or Kafka unreachable for a look: a stall stands (no row was seen moving), anything
    else is unknown, and the comparison resumes across the gap (end offsets only grow: unchanged
    means nothing arrived meanwhile)."""
    world = World()
    source = watcher(world)
    run(world, source, 2 * 60)
    world.kafka_up = False
    assert run(world, source, LOOK)[-1].state == UNKNOWN
    world.kafka_up = True
    assert run(world, source, LOOK)[-1].state == MOVING
    world.connector = False
    stalled = run(world, source, 2 * 60)[-1]
    assert stalled.state == STALLED
    world.kafka_up = False
    gap = run(world, source, LOOK)[-1]
    assert gap.state == STALLED and gap.pending_since == stalled.pending_since
    world.kafka_up = True
    world.hes_up = False
    assert run(world, source, 5 * 60)[-1].state == STALLED
    world.hes_up = True
    again = run(world, source, LOOK)[-1]
    assert again.state == STALLED and again.pending_since == stalled.pending_since
    world.connector = True
    assert run(world, source, LOOK)[-1].state == MOVING


def test_rows_that_reached_the_topic_end_a_pending_spell_even_without_new_offsets() -> None:
    """The topic no longer behind (its newest measure caught up with the HES) is nothing
    pending, whatever the offsets say."""
    reading = HesReading(START, {}, 0.001)
    first = next_flow(None, SourceLook(START, reading, topic_end_offsets=10), STALL_AFTER)
    wrote = HesReading(START + 15, {}, 0.001)
    pending = next_flow(first, SourceLook(START + 15, wrote, None, START, None, 10), STALL_AFTER)
    assert pending.state == PENDING and pending.pending_since == START + 15
    caught_up = next_flow(
        pending, SourceLook(START + 30, wrote, None, START + 15, None, 10), STALL_AFTER
    )
    assert caught_up.state == IDLE and caught_up.pending_since is None


def test_an_empty_hes_has_nothing_to_move_and_its_first_rows_do() -> None:
    empty = HesReading(None, {}, 0.001)
    flow = next_flow(None, SourceLook(START, empty, topic_end_offsets=0), STALL_AFTER)
    flow = next_flow(flow, SourceLook(START + 15, empty, topic_end_offsets=0), STALL_AFTER)
    assert flow.state == IDLE
    rows = HesReading(START + 20, {}, 0.001)
    for t in (30, 45, 60):
        flow = next_flow(flow, SourceLook(START + t, rows, topic_end_offsets=0), STALL_AFTER)
    assert flow.state == STALLED and flow.pending_since == START + 30
