"""Loss horizons as the exporter's /api/v1/cluster serves them (`source.loss_horizon`), built by
the exporter's own model and JSON, for the Pipeline page's tests."""

from __future__ import annotations

from typing import Any

from vigia.exporter.model import binlog, retention
from vigia.exporter.model.loss_horizon import (
    binlog_hop,
    checkpoint_hop,
    horizon,
    kafka_hop,
)
from vigia.exporter.web.api import loss_horizon_json

WEEK = retention.Retention(ms=7 * 86_400_000, bytes=None)


def _binlog(state: binlog.State, seconds: float | None) -> binlog.BinlogVerdict:
    margin = None if seconds is None else binlog.Margin(seconds, binlog.TIME, binlog.OFFSET_TS)
    return binlog.BinlogVerdict(
        0.0, state, margin, 0, None, 0.0, 0, 0, 1000, "b.000001",
        "the connector's file b.000001 is gone" if state == binlog.LOST else None,
    )  # fmt: skip


def _kafka(seconds: float, *, lost: int = 0, risky: bool = False) -> Any:
    method = retention.DELETED if lost else "interpolated"
    estimate = retention.CatchUpEstimate(retention.CatchUp.GROWING, 500, -2.0, False, None)
    return kafka_hop(WEEK, retention.Margin(seconds, retention.TIME, method), estimate, risky, lost)


# name -> the JSON; the headline each one must give is the tests'.
STATES: dict[str, dict[str, Any]] = {
    # The HES keeps binlog 5 h 10 min past the connector's file's rotation; Kafka a week.
    "binlog_first": loss_horizon_json(
        horizon([binlog_hop(_binlog("ok", 18_600), ""), _kafka(604_000), checkpoint_hop()])
    ),
    "kafka_at_risk": loss_horizon_json(
        horizon(
            [binlog_hop(_binlog("ok", 86_400), ""), _kafka(3_720, risky=True), checkpoint_hop()]
        )
    ),
    "kafka_lost": loss_horizon_json(
        horizon([binlog_hop(_binlog("ok", 86_400), ""), _kafka(0.0, lost=120), checkpoint_hop()])
    ),
    "binlog_lost": loss_horizon_json(
        horizon([binlog_hop(_binlog("lost", 0.0), ""), _kafka(604_000), checkpoint_hop()])
    ),
    "no_purge": loss_horizon_json(
        horizon(
            [
                binlog_hop(_binlog("none", None), ""),
                kafka_hop("infinite", None, None, None, 0),
                checkpoint_hop(),
            ]
        )
    ),
    "binlog_unwatched": loss_horizon_json(
        horizon([binlog_hop(None, "the binlog is not watched"), _kafka(7_200), checkpoint_hop()])
    ),
    "nothing_known": loss_horizon_json(
        horizon(
            [
                binlog_hop(None, "no binlog round yet"),
                kafka_hop(None, None, None, None, 0),
                checkpoint_hop(),
            ]
        )
    ),
}


def cluster(state: str) -> dict[str, Any]:
    """The part of the exporter's document the headline reads."""
    return {"source": {"loss_horizon": STATES[state]}}
