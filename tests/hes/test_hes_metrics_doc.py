"""docs/metrics.md lists exactly the source watch's families (`vigia_hes_*`, `vigia_pipeline_*`),
with their types and labels, as served with every input known."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from tests.metrics_doc import documented, served
from vigia.exporter.collectors import render_source
from vigia.exporter.hes.binlog_watch import BinlogWatch
from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.model.binlog import BinlogFile, BinlogTracker, SourceOffset
from vigia.exporter.model.pipeline_hops import HesReading, TopicTailReading
from vigia.exporter.model.retention import CatchUp, CatchUpEstimate, Margin, Retention
from vigia.exporter.model.retention_view import RetentionView

PREFIXES = ("vigia_hes_", "vigia_pipeline_", "vigia_leg_")
NOW = 1_795_500_000.0


class _Hes:
    def read(self, days: Sequence[dt.date], count: bool = True) -> HesReading:
        return HesReading(NOW - 10, dict.fromkeys(days, 384), 0.01)

    def binlog(self) -> tuple[dict[str, str], tuple[BinlogFile, ...]]:
        return {"binlog_expire_logs_seconds": "86400"}, FILES

    def close(self) -> None:
        pass


FILES = (BinlogFile("b.000001", 1000), BinlogFile("b.000002", 500))


class _Offsets:
    topic = "cdc-connect-offsets"
    connector = "hes-measure"

    def __init__(self) -> None:
        self.offset = SourceOffset("b.000001", 400, NOW - 100)

    def read(self, timeout: float) -> SourceOffset | None:
        return self.offset

    def close(self) -> None:
        pass


class _Tail:
    topic = "measure"

    def read(self, timeout: float) -> TopicTailReading:
        return TopicTailReading(1000, NOW - 70)

    def close(self) -> None:
        pass


def test_every_source_family_is_documented_with_its_type_and_labels() -> None:
    clock = iter([NOW, NOW + 60])
    offsets = _Offsets()
    binlog = BinlogWatch(offsets, BinlogTracker(), interval=60, timeout=5)
    watcher = SourceWatcher(
        _Hes(), _Tail(), interval=60, timeout=5, clock=lambda: next(clock), binlog=binlog
    )
    watcher.watch_once()
    offsets.offset = SourceOffset("b.000002", 100, NOW + 50)  # draining: a catch-up time
    watcher.watch_once()
    key = ("vigia-ingest", "measure")
    view = RetentionView(
        retention={"measure": Retention(604_800_000, None)},
        partition_margins={},
        margins={key: Margin(604_000.0, "time", "record")},
        catch_up={key: CatchUpEstimate(CatchUp.DRAINING, 10, 2.0, True, 5.0)},
        at_risk={key: False},
        losses={},
        outage_budgets={},
    )
    state: Any = SimpleNamespace(max_lag_seconds={key: 3.0}, retention=view)
    code = served([render_source(watcher, state), render_source(None, None)])
    # Served next to the Connect families: tests/connect/test_schema_history.py compares it.
    doc = documented(PREFIXES)
    doc.pop("vigia_hes_schema_history_unsafe")
    assert code == doc
    assert {"vigia_hes_up", "vigia_pipeline_hop_lag_seconds"} <= set(doc)
    assert {"vigia_hes_binlog_catchup_seconds", "vigia_hes_binlog_expire_seconds"} <= set(doc)
    assert {"vigia_leg_loss_horizon_seconds", "vigia_leg_hop_catchup_seconds"} <= set(doc)
