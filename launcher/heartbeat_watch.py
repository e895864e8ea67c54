"""The dead man's switch's state machine (pure): when did the Watchdog heartbeat last arrive, and
has it been missing for longer than the gap? launcher/heartbeat.py feeds it notifications and the
clock, and logs the changes it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

# Alertmanager sends the Watchdog every 60-75 s (the heartbeat route in
# prometheus/alertmanager.yml: repeat_interval 1m checked at group_interval ticks of 15 s). 180 s
# is that period twice plus slack: one late or failed delivery never says "missed" (Alertmanager
# retries a failed webhook only until the next beat is due), two in a row do, 3 minutes after the
# last beat.
DEFAULT_GAP_SECONDS = 180.0
HEARTBEAT_ALERT = "Watchdog"


class State(Enum):
    WAITING = "waiting"  # started, no beat yet: the gap counts from the start
    ALIVE = "alive"
    MISSED = "missed"


@dataclass(frozen=True)
class Watch:
    gap: float
    last_beat: float  # monotonic seconds; the start while WAITING
    state: State = State.WAITING


@dataclass(frozen=True)
class Change:
    state: State
    silent_for: float  # seconds without a beat: so far (missed) or in all (back)
    message: str


def start(now: float, gap: float = DEFAULT_GAP_SECONDS) -> Watch:
    if gap <= 0:
        raise ValueError(f"the gap must be positive, not {gap}")
    return Watch(gap=gap, last_beat=now)


def beat(watch: Watch, now: float) -> tuple[Watch, Change | None]:
    """A heartbeat arrived at `now`."""
    silent = now - watch.last_beat
    beaten = replace(watch, last_beat=now, state=State.ALIVE)
    if watch.state is State.WAITING:
        return beaten, Change(
            State.ALIVE,
            silent,
            f"heartbeat received: the paging path works ({silent:.0f}s after start)",
        )
    if watch.state is State.MISSED:
        return beaten, Change(
            State.ALIVE, silent, f"heartbeat back after {silent:.0f}s without one"
        )
    return beaten, None


def check(watch: Watch, now: float) -> tuple[Watch, Change | None]:
    """The clock moved to `now`: is the heartbeat overdue?"""
    silent = now - watch.last_beat
    if watch.state is State.MISSED or silent <= watch.gap:
        return watch, None
    since = "since the checker started" if watch.state is State.WAITING else "since the last one"
    return replace(watch, state=State.MISSED), Change(
        State.MISSED,
        silent,
        f"heartbeat missed: no {HEARTBEAT_ALERT} notification for {silent:.0f}s {since} "
        f"(gap {watch.gap:.0f}s): Prometheus, its rule evaluation or Alertmanager is down or "
        "cannot reach this checker (runbook Watchdog)",
    )


def is_heartbeat(payload: Mapping[str, Any]) -> bool:
    """An Alertmanager webhook payload that carries the firing Watchdog. A resolved one is no beat:
    it says Prometheus stopped sending it."""
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        return False
    return any(
        isinstance(a, Mapping)
        and a.get("status") == "firing"
        and isinstance(a.get("labels"), Mapping)
        and a["labels"].get("alertname") == HEARTBEAT_ALERT
        for a in alerts
    )
