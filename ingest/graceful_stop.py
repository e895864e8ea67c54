"""When a streaming query asked to stop "after the current batch" stops. Pure.

Between two batches the query's trigger is inactive, and stopping then loses no work. But a job
catching up, or on a busy machine, runs batches back to back: its trigger is inactive for
milliseconds between them, and a loop that looks once a second can miss every gap for minutes
(a stop asked for during a catch-up did not come in two minutes). So the batch running when the
stop is first seen is the last one waited for: once it has completed, the query stops even if the
next one has begun, which is redone at the next start (the exactly-once sink makes that
harmless). A stop is thus never later than the end of the batch it found running.
"""

from __future__ import annotations


class GracefulStop:
    """Fed the query's state at each look; says when to stop it."""

    def __init__(self) -> None:
        self._last_awaited: int | None = None

    def due(self, stop: bool, stop_now: bool, trigger_active: bool, last_completed: int) -> bool:
        """`last_completed`: the id of the last completed batch (-1 before the first)."""
        if stop_now:
            return True
        if not stop:
            return False
        if self._last_awaited is None:
            self._last_awaited = last_completed + 1  # running now, or the next to start
        return not trigger_active or last_completed >= self._last_awaited
