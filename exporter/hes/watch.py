"""Watching the source of the pipeline on its own schedule: the HES database and the topic's
tail, one round every ``--hes-interval`` seconds (15 by default), on one thread.

The rate is bounded on purpose: the HES is the seed's production database. Each round reads the
newest ts (one index entry, 0.1 ms); the day counts, which read an index range as long as the two
days' rows, run every ``--hes-count-interval`` seconds (300 by default) and at midnight
(`exporter.hes.adapter` says what each query costs). The newest ts is read that often because the
flow verdict (`exporter.model.pipeline_flow`) can only see a stall one look after the HES wrote
rows the topic lacks: 15 s keeps a stall's page within 3 minutes (docs/metrics.md). Scrapes read
the last round (`look`, `flow`), never the database. An HES that does not answer is a fact about
the HES (``vigia_hes_up 0``), logged once per change; it never touches ``vigia_exporter_up``.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from vigia.exporter.hes.adapter import HesError
from vigia.exporter.hes.binlog_watch import BinlogReader, BinlogWatch
from vigia.exporter.kafka.topic_tail import TopicTailError
from vigia.exporter.model.pipeline_flow import (
    DEFAULT_STALL_AFTER,
    STALLED,
    UNKNOWN,
    Flow,
    next_flow,
)
from vigia.exporter.model.pipeline_hops import (
    HesReading,
    SourceLook,
    TopicTailReading,
    counts_due,
    watched_days,
)

log = logging.getLogger(__name__)


class HesReader(BinlogReader, Protocol):
    def read(self, days: Sequence[dt.date], count: bool = True) -> HesReading: ...

    def close(self) -> None: ...


class TopicReader(Protocol):
    topic: str

    def read(self, timeout: float) -> TopicTailReading: ...

    def close(self) -> None: ...


class SourceWatcher:
    def __init__(
        self,
        hes: HesReader,
        tail: TopicReader,
        interval: float,
        timeout: float,
        group: str = "vigia-ingest",
        count_interval: float = 300.0,
        clock: Callable[[], float] = time.time,
        connector: str = "hes-measure",
        stall_after: float = DEFAULT_STALL_AFTER,
        binlog: BinlogWatch | None = None,
    ) -> None:
        """`group`: the ingest job's consumer group, whose lag is the kafka_to_store hop;
        `count_interval`: seconds between two counts of the days' rows; `connector`: the Connect
        connector that writes the HES's rows to the topic, whom a stall of the flow is laid to;
        `stall_after`: seconds rows may be pending without the topic moving; `binlog`: the
        binlog margin's rounds, run on this thread when due."""
        self._hes = hes
        self._tail = tail
        self.topic = tail.topic
        self.group = group
        self.interval = interval
        self.count_interval = count_interval
        self.connector = connector
        self.stall_after = stall_after
        self._timeout = timeout
        self._clock = clock
        self.binlog = binlog
        self._look: SourceLook | None = None
        self._flow: Flow | None = None
        self._stalled = False  # as last judged, for one log line per change
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def look(self) -> SourceLook | None:
        """The last round, or None before the first one."""
        return self._look

    @property
    def flow(self) -> Flow | None:
        """The flow verdict after the last round, or None before the first one."""
        return self._flow

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="vigia-source-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self._timeout + 1)
        self._hes.close()
        self._tail.close()
        if self.binlog is not None:
            self.binlog.close()

    def watch_once(self) -> SourceLook:
        now = self._clock()
        days = watched_days(now)
        previous = self._look.hes if self._look is not None else None
        count = counts_due(previous, days, now, self.count_interval)
        hes: HesReading | None = None
        hes_error = topic_error = None
        try:
            hes = self._hes.read(days, count=count)
        except HesError as exc:
            hes_error = str(exc)
        if hes is not None:
            if count:
                hes = replace(hes, counted_at=now)
            elif previous is not None:
                hes = replace(hes, day_rows=previous.day_rows, counted_at=previous.counted_at)
        tail: TopicTailReading | None = None
        try:
            tail = self._tail.read(self._timeout)
        except TopicTailError as exc:
            topic_error = str(exc)
        look = SourceLook(
            now,
            hes,
            hes_error,
            tail.newest_measure if tail else None,
            topic_error,
            tail.end_offsets if tail else None,
        )
        flow = next_flow(self._flow, look, self.stall_after)
        self._log_changes(self._look, look)
        self._log_flow(flow)
        self._look, self._flow = look, flow
        if self.binlog is not None and self.binlog.due(now):
            self.binlog.look(self._hes, now)
        return look

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.watch_once()
            except Exception:  # a bug must not end the watch: log it and try again next round
                log.exception("watching the source crashed")
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    @staticmethod
    def _log_changes(before: SourceLook | None, now: SourceLook) -> None:
        if before is None or before.hes_error != now.hes_error:
            if now.hes_error:
                log.warning("the HES database does not answer: %s", now.hes_error)
            elif before is not None:
                log.info("the HES database answers again")
        if (before is None or before.topic_error != now.topic_error) and now.topic_error:
            log.warning("cannot read the topic's newest records: %s", now.topic_error)

    def _log_flow(self, flow: Flow) -> None:
        """One line when the flow stalls and one when it moves again, not per round; a look
        that cannot judge (`unknown`) changes neither."""
        if flow.state == UNKNOWN or (flow.state == STALLED) == self._stalled:
            return
        self._stalled = flow.state == STALLED
        if self._stalled:
            log.warning(
                "nothing reached topic %s for %.0f s while the HES wrote rows it lacks: "
                "connector %s moves nothing (kafka_connect_connector_stalled)",
                self.topic,
                flow.checked_at - (flow.pending_since or flow.checked_at),
                self.connector,
            )
        else:
            log.info("rows reach topic %s again (flow %s)", self.topic, flow.state)
