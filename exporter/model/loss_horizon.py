"""The leg's loss horizon: how long until a measure is lost for good, and where
(docs/lag.md#the-legs-loss-horizon).

A measure crosses three stores that can hold it for the next hop, each with its own margin:

- ``hes_binlog``: the HES's binlog, until Connect (Debezium) has read it
  (`exporter.model.binlog`: the server purges by age or size);
- ``kafka``: topic `measure`, until the ingest job has read it (`exporter.model.retention`, for
  the job's group: Kafka deletes by `retention.ms` or `retention.bytes`);
- ``checkpoint``: the job's Spark checkpoint, the offsets it resumes from. Its own files never
  expire by age (Spark trims the metadata of batches older than `minBatchesToRetain`, all stored
  already), so it purges nothing: state ``none``. What can go under it is the Kafka records its
  offsets point to, and those are the ``kafka`` hop's: the job commits each batch's end offsets to
  its group after the batch, so the group is never ahead of the checkpoint, and the margin at the
  group's offsets is a lower bound of the margin at the checkpoint's. Counting it again here would
  name two hops for one deletion.

The horizon is the smallest margin, naming its hop. A hop whose margin is unknown may be the
first to go: the horizon is then `complete=False`, an upper bound only (the minimum over the hops
known), and no metric carries it. Pure: plain values in, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from vigia.exporter.model import binlog, retention
from vigia.exporter.model.retention_view import RetentionView

HES_BINLOG: Final = "hes_binlog"
KAFKA: Final = "kafka"
CHECKPOINT: Final = "checkpoint"
HopName = Literal["hes_binlog", "kafka", "checkpoint"]
HOPS: Final[tuple[HopName, ...]] = (HES_BINLOG, KAFKA, CHECKPOINT)

# The states are the binlog margin's, the same words for every hop.
OK: Final = binlog.OK
AT_RISK: Final = binlog.AT_RISK
NONE: Final = binlog.NONE
LOST: Final = binlog.LOST
UNKNOWN: Final = binlog.UNKNOWN
State = binlog.State
STATES: Final = binlog.STATES

CHECKPOINT_REASON: Final = (
    "the checkpoint purges nothing by age; the records its offsets point to are the kafka hop's"
)


@dataclass(frozen=True, slots=True)
class Hop:
    hop: HopName
    state: State
    margin_seconds: float | None  # a lower bound; None for none and unknown
    limit: str | None  # what purges first: time or size
    method: str | None  # how the margin was had (the hop's own margin's method)
    catch_up_seconds: float | None  # where the hop is behind and catching up; 0 when caught up
    reason: str | None = None  # why unknown, none or lost


@dataclass(frozen=True, slots=True)
class Horizon:
    state: State  # lost, at_risk, ok, none (no hop purges), unknown (no hop's margin known)
    seconds: float | None  # the smallest margin (0 once lost); None when no hop has one
    hop: HopName | None  # the hop of `seconds`: the first to purge, or the one that lost
    complete: bool  # every hop's margin (or none) is known: `seconds` is a lower bound
    hops: tuple[Hop, ...]


def binlog_hop(verdict: binlog.BinlogVerdict | None, reason_if_none: str) -> Hop:
    """The HES binlog → Connect hop from the binlog watch's last round; `reason_if_none` says
    why there is none (no round yet, or the watch is off)."""
    if verdict is None:
        return Hop(HES_BINLOG, UNKNOWN, None, None, None, None, reason_if_none)
    margin = verdict.margin
    return Hop(
        HES_BINLOG,
        verdict.state,
        None if margin is None else margin.seconds,
        None if margin is None else margin.limit,
        None if margin is None else margin.method,
        verdict.catch_up_seconds,
        verdict.reason,
    )


def kafka_hop(
    limits: retention.Retention | retention.NoRetention | None,
    margin: retention.Margin | None,
    estimate: retention.CatchUpEstimate | None,
    at_risk: bool | None,
    lost_messages: int,
) -> Hop:
    """The Kafka → ingest job hop, from the collection's retention view for the job's group and
    topic: `limits` the topic's (None when it is not collected), `lost_messages` the records
    between the group's committed offsets and the log start now (deleted unread)."""
    catch_up = None if estimate is None else estimate.seconds
    if limits is None:
        return Hop(KAFKA, UNKNOWN, None, None, None, catch_up, "the topic is not collected")
    if lost_messages > 0 or (margin is not None and margin.method == retention.DELETED):
        return Hop(
            KAFKA,
            LOST,
            0.0,
            None if margin is None else margin.limit,
            retention.DELETED,
            catch_up,
            f"{lost_messages} records deleted before the group read them",
        )
    if limits in ("compacted", "infinite"):
        return Hop(KAFKA, NONE, None, None, None, catch_up, f"the topic's retention is {limits}")
    if not isinstance(limits, retention.Retention):
        return Hop(KAFKA, UNKNOWN, None, None, None, catch_up, "the topic's configs were not read")
    if margin is None:
        why = "no margin for the group: no committed offset, or a partition's age unknown"
        return Hop(KAFKA, UNKNOWN, None, None, None, catch_up, why)
    risky = at_risk if at_risk is not None else margin.seconds <= 0
    return Hop(
        KAFKA, AT_RISK if risky else OK, margin.seconds, margin.limit, margin.method, catch_up
    )


def kafka_hop_of(view: RetentionView | None, group: str, topic: str) -> Hop:
    """`kafka_hop` from a collection's retention view (None before the first collection)."""
    if view is None:
        return Hop(KAFKA, UNKNOWN, None, None, None, None, "no collection yet")
    lost = sum(loss.missing for (g, t, _), loss in view.losses.items() if (g, t) == (group, topic))
    return kafka_hop(
        view.retention.get(topic),
        view.margins.get((group, topic)),
        view.catch_up.get((group, topic)),
        view.at_risk.get((group, topic)),
        lost,
    )


def checkpoint_hop() -> Hop:
    return Hop(CHECKPOINT, NONE, None, None, None, None, CHECKPOINT_REASON)


def horizon(hops: Sequence[Hop]) -> Horizon:
    """The leg's: lost when a hop lost measures; else the smallest margin, at risk when any hop
    is."""
    hops = tuple(hops)
    complete = all(h.state != UNKNOWN for h in hops)
    lost = [h for h in hops if h.state == LOST]
    if lost:
        return Horizon(LOST, 0.0, lost[0].hop, complete, hops)
    first = _first(h for h in hops if h.margin_seconds is not None)
    if first is None:
        return Horizon(NONE if complete else UNKNOWN, None, None, complete, hops)
    if any(h.state == AT_RISK for h in hops):
        state: State = AT_RISK
    else:
        state = OK
    return Horizon(state, first.margin_seconds, first.hop, complete, hops)


def _first(hops: Iterable[Hop]) -> Hop | None:
    return min(hops, key=lambda h: h.margin_seconds or 0.0, default=None)
