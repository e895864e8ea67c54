"""The HES binlog margin's families (exporter.model.binlog), from the binlog watch's last round:
per connector 5 state series, at most one margin, catch-up, backlog, loss counter, and one each of
the server's expiry, binlog size and bytes written: at most 12 series per exporter (one connector).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import counter, gauge
from vigia.exporter.model.binlog import STATES, BinlogVerdict

_C = ["connector"]


class BinlogCollector:
    def __init__(self, connector: str, verdict: BinlogVerdict | None) -> None:
        self._connector = connector
        self._verdict = verdict

    def collect(self) -> Iterator[Metric]:
        v, c = self._verdict, self._connector
        yield gauge(
            "vigia_hes_binlog_retention_state",
            "1 for the state of the HES binlog the connector still needs, 0 for the others: ok, "
            "at_risk (it will not have read it before the HES may purge it), none (the HES purges "
            "nothing), lost (its binlog file was purged: it must re-snapshot), unknown.",
            ["connector", "state"],
            {} if v is None else {(c, s): float(s == v.state) for s in STATES},
        )
        margin = None if v is None else v.margin
        yield gauge(
            "vigia_hes_binlog_retention_margin_seconds",
            "Seconds until the HES may purge the binlog file the connector reads (a lower bound: "
            "the file's rotation time is bounded from below, and the purge also waits for the "
            "next rotation); limit: time (binlog_expire_logs_seconds) or size "
            "(max_binlog_total_size); method: open_file (not rotated yet: the whole expiry), "
            "offset_ts (rotated after the offset's ts_sec), seen_newest (after the last round "
            "that saw it open), rate (size limit at the current growth), purged (0: lost). No "
            "series when none or unknown.",
            ["connector", "limit", "method"],
            {} if margin is None else {(c, margin.limit, margin.method): margin.seconds},
        )
        yield gauge(
            "vigia_hes_binlog_catchup_seconds",
            "Binlog bytes the connector has not read ÷ how fast that backlog shrank over the "
            "catch-up window; no series while it does not shrink (stopped, stalled, or slower "
            "than the HES writes).",
            _C,
            {} if v is None or v.catch_up_seconds is None else {c: v.catch_up_seconds},
        )
        yield gauge(
            "vigia_hes_binlog_behind_bytes",
            "Binlog bytes after the connector's committed position (the rest of its file and "
            "every later file).",
            _C,
            {} if v is None or v.bytes_behind is None else {c: float(v.bytes_behind)},
        )
        yield counter(
            "vigia_hes_binlog_losses",
            "Times the binlog file the connector still needed vanished from the HES (purged), "
            "counted once each since the exporter started.",
            _C,
            {} if v is None else {c: float(v.losses)},
        )
        expiry = None if v is None else v.expiry
        yield gauge(
            "vigia_hes_binlog_expire_seconds",
            "The HES's binlog expiry (binlog_expire_logs_seconds, or expire_logs_days × 86400); "
            "no series when it purges nothing by age.",
            [],
            {} if expiry is None or expiry.seconds is None else {(): expiry.seconds},
        )
        yield gauge(
            "vigia_hes_binlog_size_bytes",
            "Size of all binlog files the HES keeps (SHOW BINARY LOGS).",
            [],
            {} if v is None or v.size_bytes is None else {(): float(v.size_bytes)},
        )
        yield counter(
            "vigia_hes_binlog_written_bytes",
            "Binlog bytes the HES wrote since the exporter started (from successive SHOW BINARY "
            "LOGS): rate() × seconds is the disk a longer expiry costs.",
            [],
            {} if v is None else {(): float(v.written_bytes)},
        )
