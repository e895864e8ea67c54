"""The binlog watch's rounds (exporter.hes.binlog_watch): the offset then the listing, errors as
`unknown` with their reason, one log line per change, and its place in the source watch."""

from __future__ import annotations

import logging

import pytest

from tests.hes_world import World, watcher
from vigia.exporter.hes.adapter import HesError
from vigia.exporter.hes.binlog_watch import BinlogWatch
from vigia.exporter.kafka.connect_offsets import ConnectOffsetsError
from vigia.exporter.model.binlog import BinlogFile, BinlogTracker, SourceOffset

FILES = (BinlogFile("b.000001", 1000), BinlogFile("b.000002", 500))


class _Offsets:
    topic = "cdc-connect-offsets"
    connector = "hes-measure"

    def __init__(self) -> None:
        self.offset: SourceOffset | None = SourceOffset("b.000002", 100, 0)
        self.error: str | None = None
        self.closed = False

    def read(self, timeout: float) -> SourceOffset | None:
        if self.error:
            raise ConnectOffsetsError(self.error)
        return self.offset

    def close(self) -> None:
        self.closed = True


class _Hes:
    def __init__(self) -> None:
        self.files = FILES
        self.variables = {"binlog_expire_logs_seconds": "600"}
        self.error: str | None = None

    def binlog(self) -> tuple[dict[str, str], tuple[BinlogFile, ...]]:
        if self.error:
            raise HesError(self.error)
        return self.variables, self.files


def test_rounds_judge_report_errors_and_log_each_change_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "vigia.exporter.hes.binlog_watch")
    offsets, hes = _Offsets(), _Hes()
    watch = BinlogWatch(offsets, BinlogTracker(floor_seconds=60), interval=60, timeout=5)
    assert watch.due(0) and watch.verdict is None
    assert watch.look(hes, 0).state == "ok"
    assert not watch.due(30) and watch.due(60)
    watch.look(hes, 60)
    assert len(caplog.records) == 1  # ok twice: one line
    hes.error = "mysql://hes_reader@hes:3306/hes: Access denied; you need BINLOG MONITOR"
    verdict = watch.look(hes, 120)
    assert verdict.state == "unknown" and verdict.reason is not None
    assert "BINLOG MONITOR" in verdict.reason
    hes.error = None
    offsets.error = "cdc-connect-offsets: no such topic"
    assert "offsets" in (watch.look(hes, 180).reason or "")
    offsets.error = None
    hes.files = FILES[1:]
    offsets.offset = SourceOffset("b.000001", 100, 0)
    watch.look(hes, 240)  # the first listing of the offset's file gone: first sight, not counted
    hes.files = (*FILES[1:], BinlogFile("b.000003", 10))
    lost = watch.look(hes, 300)
    assert lost.state == "lost"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "re-snapshot" in errors[0].getMessage()
    watch.close()
    assert offsets.closed


def test_the_source_watch_runs_the_binlog_round_when_due() -> None:
    source = watcher(World())
    offsets = _Offsets()
    offsets.offset = SourceOffset("binlog.000001", 4)
    source.binlog = BinlogWatch(offsets, BinlogTracker(), interval=600, timeout=5)
    source.watch_once()
    verdict = source.binlog.verdict
    assert verdict is not None and verdict.state == "none"  # the fake HES purges nothing
    first = verdict.at
    source.watch_once()  # not due yet: the same verdict
    assert source.binlog.verdict is not None and source.binlog.verdict.at == first
