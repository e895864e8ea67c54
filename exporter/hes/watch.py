"""Watching the source of the pipeline on its own schedule: the HES database and the newest
measure on the topic, one round every ``--hes-interval`` seconds (60 by default), on one thread.

The rate is bounded on purpose: the HES is the seed's production database. Each round reads the
newest ts (one index entry); the day counts, which read an index range as long as the two days'
rows, run every ``--hes-count-interval`` seconds (300 by default) and at midnight
(`exporter.hes.adapter` says what each query costs). Scrapes read the last round (`look`), never the
database. An HES that does not answer is a fact about the HES (``vigia_hes_up 0``), logged once
per change; it never touches ``vigia_exporter_up``.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from exporter.hes.adapter import HesError
from exporter.kafka.topic_tail import TopicTailError
from exporter.model.pipeline_hops import HesReading, SourceLook, counts_due, watched_days

log = logging.getLogger(__name__)


class HesReader(Protocol):
    def read(self, days: Sequence[dt.date], count: bool = True) -> HesReading: ...

    def close(self) -> None: ...


class TopicReader(Protocol):
    topic: str

    def newest_measure(self, timeout: float) -> float | None: ...

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
    ) -> None:
        """`group`: the ingest job's consumer group, whose lag is the kafka_to_store hop;
        `count_interval`: seconds between two counts of the days' rows."""
        self._hes = hes
        self._tail = tail
        self.topic = tail.topic
        self.group = group
        self.interval = interval
        self.count_interval = count_interval
        self._timeout = timeout
        self._clock = clock
        self._look: SourceLook | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def look(self) -> SourceLook | None:
        """The last round, or None before the first one."""
        return self._look

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="vigia-source-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self._timeout + 1)
        self._hes.close()
        self._tail.close()

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
        newest: float | None = None
        try:
            newest = self._tail.newest_measure(self._timeout)
        except TopicTailError as exc:
            topic_error = str(exc)
        look = SourceLook(now, hes, hes_error, newest, topic_error)
        self._log_changes(self._look, look)
        self._look = look
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
