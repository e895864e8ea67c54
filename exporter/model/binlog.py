"""Ahead of the loss at the source: how long the HES database keeps the binlog the CDC connector
has not read yet, and what it purged unread.

Self-contained like `exporter.model.retention`: plain values in (the server's expiry settings,
its `SHOW BINARY LOGS`, the connector's committed source offset), one `BinlogTracker` kept across
rounds, no clock (times are the rounds').

How the servers purge (MariaDB 10.6+ `MYSQL_BIN_LOG::purge_logs_before_date`, MySQL 8.x the same
function): at a rotation of the binlog (size reached, `FLUSH BINARY LOGS`, restart), the server
walks the files oldest first and deletes each whose modification time is older than
now − `binlog_expire_logs_seconds`, stopping at the first younger one or one a connected replica
reads. A closed file's modification time is when its last event, the rotate event, was written:
when the NEXT file was started. So a file may go `expire` seconds after the next one started, and
not before. `expire_logs_days` is the older name (days; MariaDB keeps both in step, MySQL 8.0
takes `binlog_expire_logs_seconds` when both are set, 8.4 has only the seconds). MySQL 8.0.29+
purges nothing on its own while `binlog_expire_logs_auto_purge` is OFF. MariaDB 11.4+ also
purges the oldest files while all of them together exceed `max_binlog_total_size`.

Neither modification time nor rotation time is visible over SQL, so the margin uses a lower bound
of the connector's file's rotation time, the later of:
- the offset's `ts_sec`: the binlog timestamp of the last event the connector committed in that
  file, written before the file was closed;
- the last round that saw that file as the newest one listed (still open then).
The margin from a lower bound of the rotation time is a lower bound of the time left: the purge
also waits for the next rotation after the expiry, which nothing here counts on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

OK: Final = "ok"
AT_RISK: Final = "at_risk"
NONE: Final = "none"  # the server purges nothing
LOST: Final = "lost"  # the connector's file is no longer on the server
UNKNOWN: Final = "unknown"
State = Literal["ok", "at_risk", "none", "lost", "unknown"]
STATES: Final[tuple[State, ...]] = (OK, AT_RISK, NONE, LOST, UNKNOWN)

TIME: Final = "time"
SIZE: Final = "size"
Limit = Literal["time", "size"]
# How the rotation time of the connector's file was had (the margin's `method`).
OPEN_FILE: Final = "open_file"  # the file is still being written: the whole expiry is ahead
OFFSET_TS: Final = "offset_ts"
SEEN_NEWEST: Final = "seen_newest"
RATE: Final = "rate"  # the size limit at the binlog's current growth
PURGED: Final = "purged"

DEFAULT_FLOOR_SECONDS = 6 * 3600.0
DEFAULT_WINDOW_SECONDS = 300.0
# A backlog that changed by at most this share over the window holds.
HOLDING_TOLERANCE = 0.01

_VARIABLES: Final = (
    "binlog_expire_logs_seconds",
    "expire_logs_days",
    "binlog_expire_logs_auto_purge",
    "max_binlog_total_size",
    "binlog_space_limit",
    "log_bin",
)
# What the adapter asks the server: the same statement on MySQL and MariaDB; variables a server
# does not have are simply not returned.
VARIABLES_QUERY: Final = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})".format(
    ", ".join(f"'{name}'" for name in _VARIABLES)
)


@dataclass(frozen=True, slots=True)
class Expiry:
    """When the server purges: after `seconds` (None: never by age) or above `size_bytes` of binlog
    in all (None: no size limit)."""

    seconds: float | None
    size_bytes: int | None

    @property
    def purges(self) -> bool:
        return self.seconds is not None or self.size_bytes is not None


def server_expiry(variables: Mapping[str, str]) -> Expiry:
    """From `SHOW GLOBAL VARIABLES` rows (name → value) of MySQL 5.7–8.4 or MariaDB 10.x–11.x."""
    if variables.get("binlog_expire_logs_auto_purge", "ON").upper() in ("OFF", "0"):
        return Expiry(None, None)
    seconds = _number(variables.get("binlog_expire_logs_seconds"))
    if not seconds:
        days = _number(variables.get("expire_logs_days"))
        seconds = days * 86400 if days else None
    size = _number(variables.get("max_binlog_total_size", variables.get("binlog_space_limit")))
    return Expiry(seconds or None, int(size) if size else None)


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class BinlogFile:
    name: str
    size: int


def binary_logs(rows: Sequence[Sequence[Any]]) -> tuple[BinlogFile, ...]:
    """`SHOW BINARY LOGS` rows: (Log_name, File_size) on MariaDB and MySQL 5.7, (Log_name,
    File_size, Encrypted) on MySQL 8; oldest first, as the server lists them."""
    return tuple(BinlogFile(str(row[0]), int(row[1])) for row in rows)


@dataclass(frozen=True, slots=True)
class SourceOffset:
    """The connector's committed source offset (Debezium MySQL/MariaDB), read from Connect's
    offsets topic: the binlog file and position it resumes from."""

    file: str
    pos: int
    ts_sec: float | None = None  # binlog timestamp of the last event committed
    snapshot: bool = False
    gtids: str | None = None


class OffsetFormatError(ValueError):
    """An offsets-topic record that is not a Debezium binlog offset."""


def offset_owner(key: Any) -> str | None:
    """The connector an offsets-topic key belongs to: Connect writes `[name, partition]`."""
    if isinstance(key, list) and len(key) == 2 and isinstance(key[0], str):
        return key[0]
    return None


def parse_offset(value: Any) -> SourceOffset | None:
    """A Debezium offset value (JSON object), None for a tombstone (the offset was reset)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or "file" not in value or "pos" not in value:
        raise OffsetFormatError(f"not a binlog offset: {value!r:.200}")
    try:
        ts = value.get("ts_sec")
        gtids = value.get("gtids")
        return SourceOffset(
            file=str(value["file"]),
            pos=int(value["pos"]),
            ts_sec=float(ts) if ts is not None else None,
            snapshot=str(value.get("snapshot", "false")).lower() in ("true", "last"),
            gtids=str(gtids) if gtids else None,
        )
    except (TypeError, ValueError) as exc:
        raise OffsetFormatError(f"not a binlog offset ({exc}): {value!r:.200}") from None


@dataclass(frozen=True, slots=True)
class BinlogReading:
    """One round: what the server and the offsets topic said."""

    at: float
    expiry: Expiry
    files: tuple[BinlogFile, ...]
    offset: SourceOffset | None  # None: no offset committed (yet) for the connector


@dataclass(frozen=True, slots=True)
class Margin:
    seconds: float
    limit: Limit
    method: str


@dataclass(frozen=True, slots=True)
class BinlogVerdict:
    at: float
    state: State
    margin: Margin | None  # None for none and unknown
    bytes_behind: int | None  # binlog bytes from the connector's position to the end
    drain_bytes_per_second: float | None  # how fast bytes_behind shrinks over the window
    catch_up_seconds: float | None  # bytes_behind ÷ drain, only while it shrinks
    losses: int  # loss events counted since the tracker's start
    written_bytes: int  # binlog bytes written since the tracker's start (a counter)
    size_bytes: int | None  # all binlog files listed; None when the round could not list them
    file: str | None  # the connector's file
    reason: str | None = None  # why unknown or lost, for the log and the API
    expiry: Expiry | None = None  # the server's, None when the round could not read it


def bytes_behind(files: Sequence[BinlogFile], offset: SourceOffset) -> int | None:
    """Binlog bytes after the connector's position; None when its file is not listed."""
    names = [f.name for f in files]
    if offset.file not in names:
        return None
    at = names.index(offset.file)
    return max(0, files[at].size - offset.pos) + sum(f.size for f in files[at + 1 :])


def time_margin(
    expiry_seconds: float,
    files: Sequence[BinlogFile],
    offset: SourceOffset,
    seen_newest_at: float | None,
    now: float,
) -> Margin | None:
    """Seconds until the connector's file may be purged by age (see the module's docstring for
    the rotation time's lower bound); None when no bound of the rotation time is known."""
    if files and files[-1].name == offset.file:
        return Margin(expiry_seconds, TIME, OPEN_FILE)
    bounds = [
        (b, method)
        for b, method in ((offset.ts_sec, OFFSET_TS), (seen_newest_at, SEEN_NEWEST))
        if b is not None
    ]
    if not bounds:
        return None
    closed, method = max(bounds)
    return Margin(max(0.0, expiry_seconds - (now - closed)), TIME, method)


def size_margin(
    limit: int, files: Sequence[BinlogFile], offset: SourceOffset, written_per_second: float | None
) -> Margin | None:
    """Seconds until the files from the connector's on alone exceed the size limit, at the current
    growth (the server then purges the oldest first, down to the limit); None while nothing is
    written or the growth is not known yet."""
    names = [f.name for f in files]
    if offset.file not in names or not written_per_second or written_per_second <= 0:
        return None
    kept = sum(f.size for f in files[names.index(offset.file) :])
    return Margin(max(0.0, (limit - kept) / written_per_second), SIZE, RATE)


def written_between(before: Sequence[BinlogFile], after: Sequence[BinlogFile]) -> int | None:
    """Bytes the server wrote between two listings; None when the earlier newest file is gone
    (a RESET MASTER or a gap too long to tell)."""
    if not before or not after:
        return None
    names = [f.name for f in after]
    last = before[-1]
    if last.name not in names:
        return None
    at = names.index(last.name)
    return max(0, after[at].size - last.size) + sum(f.size for f in after[at + 1 :])


@dataclass(frozen=True, slots=True)
class Trend:
    """What the backlog did over the window (between its first and last round)."""

    behind: int
    drain_per_second: float | None  # None on the first round
    consuming: bool | None  # the committed position moved; None on the first round
    growing: bool  # the backlog grew beyond HOLDING_TOLERANCE
    written: bool  # the HES wrote binlog within the window

    @property
    def catch_up_seconds(self) -> float | None:
        """Backlog ÷ drain while it shrinks beyond the tolerance (0 when nothing is behind)."""
        if self.behind == 0:
            return 0.0
        if self.drain_per_second is None or self.drain_per_second <= 0 or self.growing:
            return None
        return self.behind / self.drain_per_second


def at_risk(margin: Margin, trend: Trend, open_file: bool, floor_seconds: float) -> bool:
    """Will the connector lose binlog before it has read it? Yes when it catches up after the
    margin, or when the margin is under the floor and nothing brings it back: it does not move
    (stopped, stalled) while there is binlog to read, or, past its file's rotation, it falls
    further behind. A first round only knows a margin already at 0. A connector in the open file
    that keeps moving is not at risk (the margin only starts at the rotation), nor one in the open
    file of an HES that writes nothing (there is nothing to lose)."""
    if trend.behind == 0:
        return False
    catch_up = trend.catch_up_seconds
    if catch_up is not None and catch_up > 0:
        return catch_up > margin.seconds
    if trend.consuming is None:
        return margin.seconds <= 0
    if open_file and (trend.consuming or not trend.written):
        return False
    ageing = not trend.consuming or (trend.growing and not open_file)
    return ageing and margin.seconds < floor_seconds


@dataclass(slots=True)
class BinlogTracker:
    """What one connector's binlog margin needs across rounds: when each file was last seen as
    the newest one, the previous listing (a file that vanishes while the connector still needs it
    is one loss, counted once), the bytes written and the backlog over the window."""

    floor_seconds: float = DEFAULT_FLOOR_SECONDS
    window_seconds: float = DEFAULT_WINDOW_SECONDS
    _seen_newest: dict[str, float] = field(default_factory=dict)
    _previous: tuple[BinlogFile, ...] = ()
    _written: int = 0
    _writes: deque[tuple[float, int]] = field(default_factory=deque)
    _behind: deque[tuple[float, int, tuple[str, int], int]] = field(default_factory=deque)
    _losses: int = 0
    _expiry: Expiry | None = None

    def judge(self, reading: BinlogReading) -> BinlogVerdict:
        now, files, offset = reading.at, reading.files, reading.offset
        self._expiry = reading.expiry
        self._note_listing(now, files)
        previous, self._previous = self._previous, files
        if offset is not None and offset.file not in {f.name for f in files}:
            # A file seen in the previous listing and gone now: one loss. One already gone at the
            # first sight is not counted, so that an exporter restarted after a loss (its counter
            # from 0) does not count it again.
            if offset.file in {f.name for f in previous}:
                self._losses += 1
            self._behind.clear()
            oldest = files[0].name if files else "none"
            return self._verdict(
                now,
                LOST,
                Margin(0.0, TIME, PURGED),
                file=offset.file,
                reason=f"{offset.file} is no longer on the server (oldest listed: {oldest})",
            )
        if offset is None:
            return self._verdict(now, UNKNOWN, reason="no committed offset for the connector")
        behind = bytes_behind(files, offset)
        assert behind is not None  # its file is listed: checked above
        trend = self._trend(now, behind, offset)
        margin: Margin | None = None
        state: State = NONE
        reason = None
        if reading.expiry.purges:
            margin, reason = self._margin(now, reading.expiry, files, offset)
            if reason is not None:
                state = UNKNOWN
            elif margin is None:
                state = OK  # a size limit alone, nothing written yet: nothing is purged
            else:
                open_file = files[-1].name == offset.file
                risky = at_risk(margin, trend, open_file, self.floor_seconds)
                state = AT_RISK if risky else OK
        return self._verdict(
            now,
            state,
            margin,
            trend.behind,
            trend.drain_per_second,
            trend.catch_up_seconds,
            offset.file,
            reason,
        )

    def unknown(self, at: float, reason: str) -> BinlogVerdict:
        """A round that could not read the server or the offset: nothing is known but the count."""
        self._expiry = None
        return self._verdict(at, UNKNOWN, reason=reason)

    def _margin(
        self, now: float, expiry: Expiry, files: tuple[BinlogFile, ...], offset: SourceOffset
    ) -> tuple[Margin | None, str | None]:
        """The first limit to purge the connector's file, or why it cannot be told."""
        margins = []
        if expiry.seconds is not None:
            seen = self._seen_newest.get(offset.file)
            by_time = time_margin(expiry.seconds, files, offset, seen, now)
            if by_time is None:
                return None, "no bound of the rotation time of the connector's file"
            margins.append(by_time)
        if expiry.size_bytes is not None:
            by_size = size_margin(expiry.size_bytes, files, offset, self._write_rate())
            if by_size is not None:
                margins.append(by_size)
        return min(margins, key=lambda m: m.seconds, default=None), None

    def _note_listing(self, now: float, files: tuple[BinlogFile, ...]) -> None:
        if files:
            self._seen_newest[files[-1].name] = now
        listed = {f.name for f in files}
        for gone in self._seen_newest.keys() - listed:
            del self._seen_newest[gone]
        written = written_between(self._previous, files)
        if written is None:
            self._writes.clear()  # a new baseline
        else:
            self._written += written
        self._writes.append((now, self._written))
        _trim(self._writes, now - self.window_seconds)

    def _write_rate(self) -> float | None:
        (first_at, first), (last_at, last) = self._writes[0], self._writes[-1]
        return (last - first) / (last_at - first_at) if last_at > first_at else None

    def _trend(self, now: float, behind: int, offset: SourceOffset) -> Trend:
        """The backlog over the window."""
        self._behind.append((now, behind, (offset.file, offset.pos), self._written))
        while len(self._behind) > 1 and self._behind[1][0] <= now - self.window_seconds:
            self._behind.popleft()
        first_at, first, first_position, first_written = self._behind[0]
        if now <= first_at:
            return Trend(behind, None, None, False, False)
        return Trend(
            behind=behind,
            drain_per_second=(first - behind) / (now - first_at),
            consuming=first_position != (offset.file, offset.pos),
            growing=behind - first > max(1.0, HOLDING_TOLERANCE * first),
            written=self._written > first_written,
        )

    def _verdict(
        self,
        at: float,
        state: State,
        margin: Margin | None = None,
        behind: int | None = None,
        drain: float | None = None,
        catch_up: float | None = None,
        file: str | None = None,
        reason: str | None = None,
    ) -> BinlogVerdict:
        return BinlogVerdict(
            at=at,
            state=state,
            margin=margin,
            bytes_behind=behind,
            drain_bytes_per_second=drain,
            catch_up_seconds=catch_up,
            losses=self._losses,
            written_bytes=self._written,
            size_bytes=None if self._expiry is None else sum(f.size for f in self._previous),
            file=file,
            reason=reason,
            expiry=self._expiry,
        )


def _trim(samples: deque[tuple[float, int]], cutoff: float) -> None:
    """Drops samples older than the window but keeps the newest of them as the baseline."""
    while len(samples) > 1 and samples[1][0] <= cutoff:
        samples.popleft()
