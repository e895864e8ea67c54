"""The leg's loss horizon, shown on the HES and the ingest boards: how long until a measure is
lost for good, and each hop's margin (docs/lag.md "The leg's loss horizon")."""

from __future__ import annotations

from generator.labels import C
from generator.panels import q, row, stat, table, timeseries

HORIZON = row(
    "Loss horizon: how long until a measure is lost, and where",
    stat(
        "Measures safe for",
        q(f"min by (hop) (vigia_leg_loss_horizon_seconds{{{C}}})", "{{hop}} first"),
        unit="s",
        width=6,
        description=(
            "The smallest hop margin of the leg HES → Parquet, a lower bound, naming the hop "
            "that purges first; 0 once a hop lost measures (repair: vigia-ingest repair --date "
            "D). Empty while a hop's margin is unknown or no hop purges (the hop states say "
            "which)."
        ),
    ),
    table(
        "Hop states",
        q(f"max by (hop, state) (vigia_leg_hop_state{{{C}}}) == 1"),
        width=6,
        description="ok, at_risk, none (purges nothing), lost, unknown, per hop.",
    ),
    timeseries(
        "Each hop's margin",
        q(f"min by (hop) (vigia_leg_hop_margin_seconds{{{C}}})", "margin {{hop}}"),
        q(f"max by (hop) (vigia_leg_hop_catchup_seconds{{{C}}})", "catch-up {{hop}}"),
        unit="s",
        description=(
            "hes_binlog: until the HES may purge binlog Connect has not read; kafka: until "
            "Kafka may delete what the ingest job has not read. A catch-up line above its "
            "margin line is a loss coming (the hop is at risk)."
        ),
    ),
)
