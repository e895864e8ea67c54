"""The leg's loss horizon (exporter.model.loss_horizon) from the source watch's binlog round and a
collection's retention view, for the collectors and the JSON API."""

from __future__ import annotations

from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.model.loss_horizon import (
    Horizon,
    binlog_hop,
    checkpoint_hop,
    horizon,
    kafka_hop_of,
)
from vigia.exporter.model.state import ExporterState

NOT_WATCHED = "the binlog is not watched (no --connect-offsets-topic)"
NO_ROUND = "no binlog round yet"


def leg_horizon(source: SourceWatcher, state: ExporterState | None) -> Horizon:
    watch = source.binlog
    if watch is None:
        source_hop = binlog_hop(None, NOT_WATCHED)
    else:
        source_hop = binlog_hop(watch.verdict, NO_ROUND)
    view = None if state is None else state.retention
    return horizon([source_hop, kafka_hop_of(view, source.group, source.topic), checkpoint_hop()])
