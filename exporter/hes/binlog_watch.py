"""The binlog margin's rounds: the connector's offset from Connect's offsets topic, then the
HES's expiry settings and binlog files, judged by `exporter.model.binlog.BinlogTracker`.

Run by `exporter.hes.watch.SourceWatcher` on its thread, every ``--binlog-interval`` seconds (60
by default): the margin moves by a second a second, so a minute is plenty against expiries of
hours or days, and the HES, which is production, answers two cheap statements a minute
(`exporter.hes.adapter`). The offset is read before the listing: a file the offset names then
exists in the listing unless it was purged, never because it was created after the listing.
"""

from __future__ import annotations

import logging
from typing import Protocol

from vigia.exporter.hes.adapter import HesError
from vigia.exporter.kafka.connect_offsets import ConnectOffsetsError
from vigia.exporter.model.binlog import (
    AT_RISK,
    LOST,
    BinlogFile,
    BinlogReading,
    BinlogTracker,
    BinlogVerdict,
    SourceOffset,
    server_expiry,
)

log = logging.getLogger(__name__)


class BinlogReader(Protocol):
    def binlog(self) -> tuple[dict[str, str], tuple[BinlogFile, ...]]: ...


class OffsetReader(Protocol):
    topic: str
    connector: str

    def read(self, timeout: float) -> SourceOffset | None: ...

    def close(self) -> None: ...


class BinlogWatch:
    def __init__(
        self, offsets: OffsetReader, tracker: BinlogTracker, interval: float, timeout: float
    ) -> None:
        self.offsets = offsets
        self.connector = offsets.connector
        self.tracker = tracker
        self.interval = interval
        self._timeout = timeout
        self._verdict: BinlogVerdict | None = None
        self._attempted_at: float | None = None

    @property
    def verdict(self) -> BinlogVerdict | None:
        """The last round's, or None before the first one."""
        return self._verdict

    def due(self, now: float) -> bool:
        return self._attempted_at is None or now - self._attempted_at >= self.interval

    def look(self, hes: BinlogReader, now: float) -> BinlogVerdict:
        self._attempted_at = now
        try:
            offset = self.offsets.read(self._timeout)
            variables, files = hes.binlog()
        except ConnectOffsetsError as exc:
            verdict = self.tracker.unknown(now, f"cannot read the connector's offset: {exc}")
        except HesError as exc:
            verdict = self.tracker.unknown(now, f"cannot list the HES's binlog: {exc}")
        else:
            verdict = self.tracker.judge(
                BinlogReading(now, server_expiry(variables), files, offset)
            )
        self._log_change(self._verdict, verdict)
        self._verdict = verdict
        return verdict

    def close(self) -> None:
        self.offsets.close()

    def _log_change(self, before: BinlogVerdict | None, now: BinlogVerdict) -> None:
        """One line per change of state (or of the reason it is unknown), not per round."""
        if before is not None and (before.state, before.reason) == (now.state, now.reason):
            return
        margin = "" if now.margin is None else f", margin {now.margin.seconds:.0f} s"
        why = f": {now.reason}" if now.reason else ""
        line = "binlog of connector %s %s (file %s%s)%s"
        args = (self.connector, now.state, now.file, margin, why)
        if now.state == LOST:
            log.error(line + "; it must re-snapshot", *args)
        elif now.state == AT_RISK:
            log.warning(line, *args)
        else:
            log.info(line, *args)
