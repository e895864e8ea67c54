"""The Pipeline page's first line: how long until a measure is lost for good, and where — the
exporter's loss horizon (`source.loss_horizon` of /api/v1/cluster, docs/lag.md "The leg's loss
horizon"), in words. Pure but for `banner`'s Dash elements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dash import html

from vigia.dashboard.data import Unreachable
from vigia.dashboard.views.common import Status

# What purges first, per hop: the end of "measures safe for 5 h 10 min: …".
FIRST = {
    "hes_binlog": "the HES purges binlog first",
    "kafka": "Kafka deletes unread measures first",
    "checkpoint": "the job's checkpoint loses them first",
}
LOSS = {
    "hes_binlog": "the HES purged binlog Connect had not read",
    "kafka": "Kafka deleted measures the ingest job had not read",
    "checkpoint": "the job's checkpoint lost its place",
}
HOP_NAMES = {"hes_binlog": "the HES binlog", "kafka": "Kafka", "checkpoint": "the checkpoint"}
RUNBOOK = {"hes_binlog": "HesBinlogLost", "kafka": "IngestMeasuresLost"}


@dataclass(frozen=True)
class Headline:
    text: str
    status: Status
    detail: str  # per hop, its margin or why it has none


def duration(seconds: float) -> str:
    """'5 h 10 min', '3 d 4 h', '42 min', '35 s': two units at most, rounded down (a lower
    bound stays one)."""
    s = max(0, int(seconds))
    days, hours, minutes = s // 86400, s % 86400 // 3600, s % 3600 // 60
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min" if minutes else f"{s} s"


def headline(raw: Mapping[str, Any] | Unreachable | None) -> Headline:
    """The exporter's JSON (None or Unreachable when it did not answer) in one sentence."""
    if not isinstance(raw, Mapping):
        return Headline("Loss horizon unknown: the exporter does not answer", "grey", "")
    source = raw.get("source")
    if source is None:
        return Headline(
            "Loss horizon not watched: the exporter does not watch the HES (--hes-dsn)", "grey", ""
        )
    leg = source.get("loss_horizon") or {}
    hops = leg.get("hops") or []
    detail = "; ".join(_hop_detail(h) for h in hops)
    state, seconds, hop = leg.get("state"), leg.get("seconds"), str(leg.get("hop") or "")
    if state == "lost":
        runbook = RUNBOOK.get(hop, "IngestDayCompletenessLow")
        repair = f"repair the day: vigia-ingest repair --date D (runbook {runbook})"
        return Headline(f"Measures LOST: {LOSS.get(hop, hop)}; {repair}", "red", detail)
    if state == "none":
        return Headline("Measures safe: no hop of the leg purges anything", "green", detail)
    if seconds is None or not hop:
        why = "; ".join(
            f"{HOP_NAMES.get(h['hop'], h['hop'])}: {h.get('reason') or 'unknown'}"
            for h in hops
            if h.get("state") == "unknown"
        )
        return Headline(f"Loss horizon unknown ({why or 'no round yet'})", "grey", detail)
    bound = "" if leg.get("complete") else "at most "
    text = f"measures safe for {bound}{duration(seconds)}: {FIRST.get(hop, hop)}"
    unknown = [HOP_NAMES.get(h["hop"], h["hop"]) for h in hops if h.get("state") == "unknown"]
    if unknown:
        text += f" ({' and '.join(unknown)}: margin unknown)"
    if state == "at_risk":
        text = f"AT RISK: measures lost in {bound}{duration(seconds)} unless caught up before"
        return Headline(f"{text}: {FIRST.get(hop, hop)}", "red", detail)
    return Headline(text[0].upper() + text[1:], "green" if not unknown else "amber", detail)


def _hop_detail(hop: Mapping[str, Any]) -> str:
    name = HOP_NAMES.get(hop.get("hop", ""), hop.get("hop", "?"))
    margin = hop.get("margin")
    state = hop.get("state")
    if margin is not None and state in ("ok", "at_risk"):
        text = f"{name} ≥ {duration(margin['seconds'])}"
        catch_up = hop.get("catch_up_seconds")
        if catch_up:
            text += f" (catch-up {duration(catch_up)})"
        return text + (" AT RISK" if state == "at_risk" else "")
    if state == "none":
        return f"{name}: purges nothing"
    return f"{name}: {state}"


def banner(raw: Mapping[str, Any] | Unreachable | None) -> html.Div:
    line = headline(raw)
    return html.Div(
        [
            html.Div("Loss horizon", className="light-label"),
            html.Div(line.text, className="hop-headline", id="loss-horizon-headline"),
            html.Div(line.detail, className="light-detail", id="loss-horizon-hops"),
        ],
        id="loss-horizon",
        className=f"light light-{line.status}",
    )
