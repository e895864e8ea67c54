"""Bad records and corrections mixed into the stream of valid readings.

Each malformed record is a valid reading broken in exactly one way, so that validation rejects it
for one known reason (`ingest.schema.Reason`); reasons take turns (round robin), and each reason
cycles through a few variants. Injection is deterministic: with ratio r, after the k-th valid
reading the stream holds ⌊k · r / (1 − r)⌋ malformed records, so r is the share of malformed
records among all messages (and ⌊k · d⌋ corrections with duplicate ratio d).

A correction (``--duplicate-ratio``) re-sends an already sent reading with a different value and a
later ts (the end of the HES's write window), as an HES does when it re-reads a meter: the newest
ts must win.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

from vigia.ingest.schema import FIELDS, PERIOD_SECONDS, REASONS, Reason
from vigia.ingest.simulator.generator import (
    DUPLICATE_TAG,
    MAX_DELAY_SECONDS,
    Message,
    malformed_tag,
    utc_text,
)

Record = dict[str, Any]


def _truncated(record: Record, variant: int) -> bytes:
    text = json.dumps(record, separators=(",", ":"))
    return [text[: len(text) // 2], "HES-ERROR 0x2F", "null"][variant % 3].encode()


def _without_field(record: Record, variant: int) -> bytes:
    field = FIELDS[variant % len(FIELDS)]
    return _dumps({k: v for k, v in record.items() if k != field})


def _replaced(name: str, choices: tuple[Any, ...]) -> Callable[[Record, int], bytes]:
    def corrupt(record: Record, variant: int) -> bytes:
        return _dumps({**record, name: choices[variant % len(choices)]})

    return corrupt


def _dumps(record: Record) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


_CORRUPTERS: Final[dict[Reason, Callable[[Record, int], bytes]]] = {
    Reason.MALFORMED_JSON: _truncated,
    Reason.MISSING_FIELD: _without_field,
    Reason.PERIOD_OUT_OF_RANGE: _replaced("period", (0, 97, 12.5, "late")),
    # json.dumps writes NaN / Infinity as bare tokens, as a careless HES would.
    Reason.INVALID_VALUE: _replaced("value", (-0.25, float("nan"), float("inf"), "n/a")),
    Reason.UNKNOWN_MAGNITUDE: _replaced("magnitude", ("XYZ", "aei", "AE1")),
    Reason.INVALID_DATE: _replaced("measure_date", ("2026-13-01", "20/11/2026", "2026-02-30")),
    Reason.INVALID_TS: _replaced("ts", ("yesterday", "2026-11-20T25:00:00Z", "2026-11-20 09:15")),
}


def malformed_value(reason: Reason, record: Record, variant: int = 0) -> bytes:
    """`record` (a valid reading) broken so that validation rejects it for `reason`."""
    return _CORRUPTERS[reason](record, variant)


class FaultInjector:
    """Adds malformed records and corrections to each period's messages (see module doc)."""

    def __init__(self, malformed_ratio: float, duplicate_ratio: float) -> None:
        if not 0.0 <= malformed_ratio < 1.0:
            raise ValueError("the malformed ratio must be in [0, 1)")
        if not 0.0 <= duplicate_ratio <= 1.0:
            raise ValueError("the duplicate ratio must be in [0, 1]")
        self._malformed_per_valid = malformed_ratio / (1.0 - malformed_ratio)
        self._duplicate_ratio = duplicate_ratio
        self._valid = 0
        self._malformed = 0
        self._duplicates = 0

    def total_for(self, valid: int) -> int:
        """Messages in a stream of `valid` readings once faults are added (from the start)."""
        return valid + _owed(valid, self._malformed_per_valid) + _owed(valid, self._duplicate_ratio)

    @property
    def active(self) -> bool:
        return self._malformed_per_valid > 0 or self._duplicate_ratio > 0

    def apply(self, messages: list[Message]) -> list[Message]:
        if not self.active:
            return messages
        out: list[Message] = []
        corrections: list[Message] = []
        for message in messages:
            out.append(message)
            self._valid += 1
            malformed_due = _owed(self._valid, self._malformed_per_valid)
            duplicate_due = _owed(self._valid, self._duplicate_ratio)
            if malformed_due == self._malformed and duplicate_due == self._duplicates:
                continue
            key, value, _tag, ts = message
            record = json.loads(value)
            while self._malformed < malformed_due:
                reason = REASONS[self._malformed % len(REASONS)]
                variant = self._malformed // len(REASONS)
                self._malformed += 1
                bad = malformed_value(reason, record, variant)
                out.append((key, bad, malformed_tag(reason), ts))
            if self._duplicates < duplicate_due:
                self._duplicates += 1
                # After every first send of the period: stamped with the end of the write window.
                late = ts - ts % PERIOD_SECONDS + MAX_DELAY_SECONDS
                corrections.append((key, _corrected(record, late), DUPLICATE_TAG, late))
        return out + corrections


def _owed(valid: int, per_valid: float) -> int:
    """Faults owed after `valid` readings: from the running total, since summing r drifts."""
    return math.floor(valid * per_valid + 1e-9)


def _corrected(record: Record, ts: int) -> bytes:
    return _dumps({**record, "value": round(record["value"] * 1.02 + 0.001, 3), "ts": utc_text(ts)})
