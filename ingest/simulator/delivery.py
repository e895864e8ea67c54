"""Counting what the brokers acknowledged, from the producer's delivery reports.

One callback object per message kind (`Tag`), created once and reused, so that producing a message
allocates nothing for accounting. Callbacks run in the thread that polls the producer; the
metrics endpoint reads `snapshot()` from its own thread, hence the lock.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vigia.ingest.schema import REASONS, Reason
from vigia.ingest.simulator.generator import Tag
from vigia.ingest.simulator.manifest import Manifest, MeterRange

log = logging.getLogger(__name__)

DeliveryCallback = Callable[[Any, Any], None]
"""confluent-kafka's on_delivery(err, msg)."""


@dataclass(frozen=True)
class TallySnapshot:
    valid: dict[str, dict[str, int]]
    duplicates: int
    malformed: dict[Reason, int]
    failed: int

    @property
    def produced(self) -> int:
        return (
            sum(sum(m.values()) for m in self.valid.values())
            + self.duplicates
            + sum(self.malformed.values())
        )


@dataclass
class DeliveryTally:
    _valid: defaultdict[str, defaultdict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    _duplicates: int = 0
    _malformed: dict[Reason, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    _failed: int = 0
    first_error: str | None = None
    _callbacks: dict[Tag, DeliveryCallback] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def callback(self, tag: Tag) -> DeliveryCallback:
        found = self._callbacks.get(tag)
        if found is None:
            found = self._callbacks[tag] = self._make_callback(tag)
        return found

    def _make_callback(self, tag: Tag) -> DeliveryCallback:
        if tag.kind == "valid":
            assert tag.day is not None and tag.magnitude is not None
            day, magnitude = tag.day, tag.magnitude

            def count() -> None:
                self._valid[day][magnitude] += 1

        elif tag.kind == "duplicate":

            def count() -> None:
                self._duplicates += 1

        else:
            assert tag.reason is not None
            reason = tag.reason

            def count() -> None:
                self._malformed[reason] += 1

        def on_delivery(err: Any, _msg: Any) -> None:
            with self._lock:
                if err is None:
                    count()
                    return
                self._failed += 1
                if self.first_error is None:
                    self.first_error = str(err)
                    log.error("delivery failed: %s", err)

        return on_delivery

    def fail(self, count: int, reason: str) -> None:
        """Messages that never got a delivery report (the producer was closed with them queued)."""
        with self._lock:
            self._failed += count
            self.first_error = self.first_error or reason

    def snapshot(self) -> TallySnapshot:
        with self._lock:
            return TallySnapshot(
                valid={day: dict(m) for day, m in self._valid.items()},
                duplicates=self._duplicates,
                malformed=dict(self._malformed),
                failed=self._failed,
            )

    def manifest(
        self, *, mode: str, topic: str, seed: int, meters: MeterRange, magnitudes: tuple[str, ...]
    ) -> Manifest:
        snap = self.snapshot()
        return Manifest(
            mode=mode,
            topic=topic,
            seed=seed,
            meters=meters,
            magnitudes=magnitudes,
            valid={
                day: {m: counts.get(m, 0) for m in magnitudes} for day, counts in snap.valid.items()
            },
            duplicates=snap.duplicates,
            malformed={reason.value: n for reason, n in snap.malformed.items()},
            failed=snap.failed,
        )
