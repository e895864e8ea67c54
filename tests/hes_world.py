"""A simulated HES and pipeline topic for the flow verdict (exporter.model.pipeline_flow), driven
through the real source watch: a second-by-second clock, a HES that writes rows stamped with their
write time (as the simulator and the recorded HES do), and a connector that delivers each row to
the topic a few seconds later, or not at all."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from vigia.exporter.hes.adapter import HesError
from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.kafka.topic_tail import TopicTailError
from vigia.exporter.model.binlog import BinlogFile
from vigia.exporter.model.pipeline_flow import Flow
from vigia.exporter.model.pipeline_hops import HesReading, TopicTailReading

START = 1_795_483_800.0  # 2026-11-24 01:30 UTC, the recordings' night
LOOK = 15.0  # --hes-interval
STALL_AFTER = 30.0  # --stall-after


class World:
    """The HES table and the topic: `writing` rows per second into the HES, delivered to the topic
    `latency` seconds later while `connector` works."""

    def __init__(self, latency: float = 1.0) -> None:
        self.now = START
        self.latency = latency
        self.writing = 1  # rows per second
        self.connector = True
        self.hes_up = True
        self.kafka_up = True
        self.written: list[float] = []  # each row's ts, in write order
        self.delivered = 0  # rows on the topic, in write order
        self.end_offsets = 5_000  # what the topic held before

    def tick(self, seconds: float = 1.0) -> None:
        for _ in range(int(seconds)):
            self.now += 1.0
            self.written += [self.now] * self.writing
            if self.connector:
                due = sum(
                    1 for ts in self.written[self.delivered :] if ts <= self.now - self.latency
                )
                self.delivered += due
                self.end_offsets += due

    def write_rows(self, stamps: Sequence[float]) -> None:
        """Rows stamped `stamps` (a backfill writes old ones), written now."""
        self.written += list(stamps)

    def deliver_now(self) -> None:
        self.end_offsets += len(self.written) - self.delivered
        self.delivered = len(self.written)


class FakeHes:
    def __init__(self, world: World) -> None:
        self.world = world

    def read(self, days: Sequence[dt.date], count: bool = True) -> HesReading:
        if not self.world.hes_up:
            raise HesError("mysql://hes_reader@hes:3306/hes: Can't connect")
        newest = max(self.world.written, default=None)
        return HesReading(newest, dict.fromkeys(days, 0) if count else {}, 0.0001)

    def binlog(self) -> tuple[dict[str, str], tuple[BinlogFile, ...]]:
        return {"binlog_expire_logs_seconds": "0"}, (BinlogFile("binlog.000001", 4),)

    def close(self) -> None:
        pass


class FakeTail:
    topic = "measure"

    def __init__(self, world: World) -> None:
        self.world = world

    def read(self, timeout: float) -> TopicTailReading:
        if not self.world.kafka_up:
            raise TopicTailError("measure: Local: Broker transport failure")
        delivered = self.world.written[: self.world.delivered]
        # The last record: the one written last, not necessarily the largest ts (a backfill).
        return TopicTailReading(self.world.end_offsets, delivered[-1] if delivered else None)

    def close(self) -> None:
        pass


def watcher(world: World) -> SourceWatcher:
    return SourceWatcher(
        FakeHes(world),
        FakeTail(world),
        interval=LOOK,
        timeout=5,
        clock=lambda: world.now,
        stall_after=STALL_AFTER,
    )


def run(world: World, source: SourceWatcher, seconds: float) -> list[Flow]:
    """A look every LOOK seconds for `seconds`, the world ticking in between."""
    flows = []
    for _ in range(int(seconds // LOOK)):
        world.tick(LOOK)
        source.watch_once()
        assert source.flow is not None
        flows.append(source.flow)
    return flows
