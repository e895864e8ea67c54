"""Is data moving from the HES to the pipeline topic while there is data to move? (pure)

Judged on what reaches the topic, never on what Kafka Connect says of itself: after a broker
restart (issue 23) a worker rejoined its group and left its task unassigned for
`scheduled.rebalance.max.delay.ms` (5 minutes) while REST said RUNNING, and no Debezium series
existed to say otherwise. Each look of the source watch (`exporter.hes.watch`) reads the HES's
newest row ts, then the topic's end offsets and the newest measure ts among its last records.
From one look to the next:

- the HES *wrote*: its newest ts grew;
- the HES is *ahead*: its newest ts is newer than every last record's (both are the HES's own
  clock: the row's ts travels in the message);
- the topic *moved*: its end offsets changed.

A look at which the HES wrote and is ahead proves a row that was not on the topic when the end
offsets were read (after the HES); a working connector appends it within seconds, and the end
offsets move. From that look on the rows are *pending*, until the end offsets move or the topic is
no longer behind. Rows pending for `stall_after` seconds while the end offsets did not move at all
are a stall. Asking that the HES *wrote* keeps a quiet HES silent even when the topic's last
records happen to be older rows (a backfill written last): a HES that writes nothing has nothing
to move, and nothing is stalled.

The verdict is only as good as "anything on the topic is the connector's": another producer on
the topic hides a stall. A look that could not read the HES or the topic judges nothing: a stall
stands (nothing showed a row moving, and a verdict that blinks would resolve and re-send the
page), anything else becomes `unknown`; the end offsets only grow, so the next complete look
still compares with the last one correctly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from vigia.exporter.model.pipeline_hops import SourceLook

DEFAULT_STALL_AFTER: Final = 30.0
UNKNOWN: Final = "unknown"  # no complete look before this one, or this one lacks a reading
MOVING: Final = "moving"  # the end offsets moved since the previous look
IDLE: Final = "idle"  # nothing moved and nothing is pending: the HES wrote nothing new
PENDING: Final = "pending"  # nothing moved, rows pending for less than stall_after
STALLED: Final = "stalled"
FLOW_STATES: Final = (UNKNOWN, MOVING, IDLE, PENDING, STALLED)


@dataclass(frozen=True, slots=True)
class Flow:
    """The verdict after a look, and what the next look is compared with."""

    state: str
    checked_at: float
    """The look this verdict was made at."""
    end_offsets: int | None = None
    """The topic's summed end offsets at the last complete look; None before the first."""
    hes_newest: float | None = None
    """The HES's newest row ts at the last complete look (None: the table was empty)."""
    moved_at: float | None = None
    """The last look at which the end offsets had moved; None while not seen to move."""
    pending_since: float | None = None
    """The look from which rows are pending (the HES wrote and was ahead), while they are."""


def next_flow(previous: Flow | None, look: SourceLook, stall_after: float) -> Flow:
    end = look.topic_end_offsets
    if look.hes is None or end is None:
        if previous is None:
            return Flow(UNKNOWN, look.checked_at)
        state = STALLED if previous.state == STALLED else UNKNOWN
        return replace(previous, state=state, checked_at=look.checked_at)
    hes = look.hes.newest_row_timestamp
    if previous is None or previous.end_offsets is None:
        return Flow(UNKNOWN, look.checked_at, end, hes)
    moved = end != previous.end_offsets
    wrote = hes is not None and (previous.hes_newest is None or hes > previous.hes_newest)
    newest = look.topic_newest_measure
    ahead = hes is not None and (newest is None or hes > newest)
    pending: float | None
    if not ahead:
        pending = None
    elif moved or previous.pending_since is None:
        pending = look.checked_at if wrote else None
    else:
        pending = previous.pending_since
    if pending is not None and look.checked_at - pending >= stall_after:
        state = STALLED
    elif moved:  # a streaming HES is always a little ahead: moving says more than pending
        state = MOVING
    else:
        state = IDLE if pending is None else PENDING
    return Flow(
        state,
        look.checked_at,
        end,
        hes,
        look.checked_at if moved else previous.moved_at,
        pending,
    )
