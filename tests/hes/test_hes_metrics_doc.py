"""docs/metrics.md lists exactly the source watch's families (`vigia_hes_*`, `vigia_pipeline_*`),
with their types and labels, as served with every input known."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from exporter.collectors import render_source
from exporter.hes.watch import SourceWatcher
from exporter.model.pipeline_hops import HesReading, TopicTailReading
from tests.metrics_doc import documented, served

PREFIXES = ("vigia_hes_", "vigia_pipeline_")
NOW = 1_795_500_000.0


class _Hes:
    def read(self, days: Sequence[dt.date], count: bool = True) -> HesReading:
        return HesReading(NOW - 10, dict.fromkeys(days, 384), 0.01)

    def close(self) -> None:
        pass


class _Tail:
    topic = "measure"

    def read(self, timeout: float) -> TopicTailReading:
        return TopicTailReading(1000, NOW - 70)

    def close(self) -> None:
        pass


def test_every_source_family_is_documented_with_its_type_and_labels() -> None:
    watcher = SourceWatcher(_Hes(), _Tail(), interval=60, timeout=5, clock=lambda: NOW)
    watcher.watch_once()
    state: Any = SimpleNamespace(max_lag_seconds={("vigia-ingest", "measure"): 3.0})
    code = served([render_source(watcher, state), render_source(None, None)])
    doc = documented(PREFIXES)
    assert code == doc
    assert {"vigia_hes_up", "vigia_pipeline_hop_lag_seconds"} <= set(doc)
