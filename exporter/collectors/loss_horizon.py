"""The leg's loss horizon families (exporter.model.loss_horizon): per hop (hes_binlog, kafka,
checkpoint) 5 state series, at most one margin and one catch-up, and the horizon: at most 20
series per exporter (docs/metrics.md#the-legs-loss-horizon)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import gauge
from vigia.exporter.model.loss_horizon import LOST, STATES, Horizon


class LossHorizonCollector:
    def __init__(self, horizon: Horizon) -> None:
        self._horizon = horizon

    def collect(self) -> Iterator[Metric]:
        h = self._horizon
        # Only a complete horizon is a lower bound: with a hop unknown, the minimum over the
        # others could hide the first to purge (as the Kafka minimum margin does).
        yield gauge(
            "vigia_leg_loss_horizon_seconds",
            "Seconds until a measure may be lost for good anywhere in the leg HES → Parquet: the "
            "smallest hop margin (a lower bound; 0 once a hop lost measures); hop names the first "
            "to purge. No series while a hop's margin is unknown (unless one lost measures) or no "
            "hop purges.",
            ["hop"],
            # A loss is certain whatever the unknown hops hide: 0 is then a lower bound too.
            {h.hop: h.seconds}
            if h.hop and h.seconds is not None and (h.complete or h.state == LOST)
            else {},
        )
        yield gauge(
            "vigia_leg_hop_state",
            "1 for each hop's state, 0 for the others: ok, at_risk, none (it purges nothing), "
            "lost, unknown.",
            ["hop", "state"],
            {(hop.hop, s): float(s == hop.state) for hop in h.hops for s in STATES},
        )
        yield gauge(
            "vigia_leg_hop_margin_seconds",
            "Seconds until the hop's store may purge a measure the next hop has not read (a lower "
            "bound; the hop's own family has its limit and method). No series when none or "
            "unknown.",
            ["hop"],
            {hop.hop: hop.margin_seconds for hop in h.hops if hop.margin_seconds is not None},
        )
        yield gauge(
            "vigia_leg_hop_catchup_seconds",
            "Seconds until the hop's reader has caught up at its drain rate over the catch-up "
            "window; 0 when caught up; no series while its backlog does not shrink.",
            ["hop"],
            {hop.hop: hop.catch_up_seconds for hop in h.hops if hop.catch_up_seconds is not None},
        )
