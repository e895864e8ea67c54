"""The leg's loss horizon (exporter.model.loss_horizon): each hop from its own margin, and the
smallest of them, naming the hop."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from vigia.exporter.collectors.loss_horizon import LossHorizonCollector
from vigia.exporter.collectors.text_format import text
from vigia.exporter.model import binlog, retention
from vigia.exporter.model.loss_horizon import (
    AT_RISK,
    CHECKPOINT,
    HES_BINLOG,
    KAFKA,
    LOST,
    NONE,
    OK,
    UNKNOWN,
    Hop,
    Horizon,
    binlog_hop,
    checkpoint_hop,
    horizon,
    kafka_hop,
    kafka_hop_of,
)
from vigia.exporter.model.retention_view import RetentionView

WEEK = retention.Retention(ms=7 * 86_400_000, bytes=None)
GROUP, TOPIC = "vigia-ingest", "measure"


def _verdict(
    state: binlog.State, seconds: float | None, catch_up: float | None = None
) -> binlog.BinlogVerdict:
    margin = None if seconds is None else binlog.Margin(seconds, binlog.TIME, binlog.OFFSET_TS)
    return binlog.BinlogVerdict(
        at=0.0,
        state=state,
        margin=margin,
        bytes_behind=1000,
        drain_bytes_per_second=None,
        catch_up_seconds=catch_up,
        losses=0,
        written_bytes=0,
        size_bytes=2000,
        file="b.000001",
        reason="purged" if state == LOST else None,
    )


def _estimate(state: retention.CatchUp, seconds: float | None) -> retention.CatchUpEstimate:
    return retention.CatchUpEstimate(state, 100, 1.0, True, seconds)


def _kafka_ok(seconds: float, risky: bool = False, catch_up: float | None = 0.0) -> Hop:
    margin = retention.Margin(seconds, retention.TIME, "interpolated")
    state = retention.CatchUp.DRAINING if catch_up else retention.CatchUp.CAUGHT_UP
    return kafka_hop(WEEK, margin, _estimate(state, catch_up), risky, 0)


def test_the_binlog_first_names_the_hes() -> None:
    leg = horizon([binlog_hop(_verdict(OK, 18_600), ""), _kafka_ok(604_000), checkpoint_hop()])
    assert (leg.state, leg.seconds, leg.hop, leg.complete) == (OK, 18_600, HES_BINLOG, True)
    assert [h.hop for h in leg.hops] == [HES_BINLOG, KAFKA, CHECKPOINT]
    assert leg.hops[0].method == binlog.OFFSET_TS and leg.hops[1].catch_up_seconds == 0.0


def test_kafka_first_and_at_risk_when_its_catch_up_ends_after_its_margin() -> None:
    kafka = _kafka_ok(3600, risky=True, catch_up=7200)
    leg = horizon([binlog_hop(_verdict(OK, 86_400), ""), kafka, checkpoint_hop()])
    assert (leg.state, leg.seconds, leg.hop) == (AT_RISK, 3600, KAFKA)
    assert kafka.state == AT_RISK and kafka.catch_up_seconds == 7200


def test_any_hop_at_risk_makes_the_leg_at_risk_even_when_another_purges_first() -> None:
    leg = horizon([binlog_hop(_verdict(AT_RISK, 7200), ""), _kafka_ok(600), checkpoint_hop()])
    assert (leg.state, leg.seconds, leg.hop) == (AT_RISK, 600, KAFKA)


def test_a_lost_hop_is_the_horizon_at_zero() -> None:
    kafka = kafka_hop(
        WEEK, retention.Margin(0.0, retention.TIME, retention.DELETED), None, True, 42
    )
    leg = horizon([binlog_hop(_verdict(OK, 86_400), ""), kafka, checkpoint_hop()])
    assert (leg.state, leg.seconds, leg.hop) == (LOST, 0.0, KAFKA)
    assert kafka.reason is not None and "42 records" in kafka.reason
    lost = horizon([binlog_hop(_verdict(LOST, 0.0), ""), _kafka_ok(600), checkpoint_hop()])
    assert (lost.state, lost.seconds, lost.hop) == (LOST, 0.0, HES_BINLOG)


def test_no_hop_purging_is_none_and_the_checkpoint_never_purges() -> None:
    infinite = kafka_hop("infinite", None, None, None, 0)
    leg = horizon([binlog_hop(_verdict(NONE, None), ""), infinite, checkpoint_hop()])
    assert (leg.state, leg.seconds, leg.hop, leg.complete) == (NONE, None, None, True)
    assert checkpoint_hop().state == NONE and checkpoint_hop().margin_seconds is None
    assert kafka_hop("compacted", None, None, None, 0).state == NONE


def test_an_unknown_hop_leaves_the_horizon_an_upper_bound() -> None:
    leg = horizon([binlog_hop(None, "not watched"), _kafka_ok(3600), checkpoint_hop()])
    assert (leg.state, leg.seconds, leg.hop, leg.complete) == (OK, 3600, KAFKA, False)
    assert leg.hops[0].reason == "not watched" and leg.hops[0].state == UNKNOWN
    nothing = horizon([binlog_hop(None, "no round yet"), kafka_hop_of(None, GROUP, TOPIC)])
    assert (nothing.state, nothing.seconds, nothing.complete) == (UNKNOWN, None, False)


def test_the_kafka_hop_is_unknown_without_a_margin_or_the_topic() -> None:
    assert kafka_hop(None, None, None, None, 0).state == UNKNOWN
    assert kafka_hop("unknown", None, None, None, 0).state == UNKNOWN
    assert kafka_hop(WEEK, None, None, None, 0).state == UNKNOWN
    # No catch-up estimate yet: at risk only at 0.
    margin = retention.Margin(0.0, retention.TIME, "record")
    assert kafka_hop(WEEK, margin, None, None, 0).state == AT_RISK
    later = retention.Margin(5.0, retention.TIME, "record")
    assert kafka_hop(WEEK, later, None, None, 0).state == OK


def test_the_kafka_hop_of_a_retention_view_reads_the_jobs_group_only() -> None:
    key = (GROUP, TOPIC)
    view = RetentionView(
        retention={TOPIC: WEEK},
        partition_margins={},
        margins={
            key: retention.Margin(120.0, retention.TIME, "record"),
            ("other", TOPIC): retention.Margin(1.0, retention.TIME, "record"),
        },
        catch_up={key: _estimate(retention.CatchUp.GROWING, None)},
        at_risk={key: True},
        losses={
            (GROUP, TOPIC, 0): retention.Loss(0, 0),
            ("other", TOPIC, 0): retention.Loss(9, 9),
        },
        outage_budgets={},
    )
    hop = kafka_hop_of(view, GROUP, TOPIC)
    assert (hop.state, hop.margin_seconds, hop.catch_up_seconds) == (AT_RISK, 120.0, None)
    assert kafka_hop_of(view, "other", TOPIC).state == LOST


def _served(leg: Horizon) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text(LossHorizonCollector(leg).collect()))
        for s in f.samples
    }


def test_the_horizon_metric_only_when_it_is_a_lower_bound() -> None:
    known = _served(horizon([binlog_hop(_verdict(OK, 18_600), ""), _kafka_ok(604_000)]))
    assert known[("vigia_leg_loss_horizon_seconds", (("hop", HES_BINLOG),))] == 18_600
    assert known[("vigia_leg_hop_margin_seconds", (("hop", KAFKA),))] == 604_000
    assert known[("vigia_leg_hop_state", (("hop", KAFKA), ("state", OK)))] == 1
    partial = _served(horizon([binlog_hop(None, "not watched"), _kafka_ok(3600)]))
    assert not [k for k in partial if k[0] == "vigia_leg_loss_horizon_seconds"]
    lost = kafka_hop(WEEK, None, None, None, 7)
    certain = _served(horizon([binlog_hop(None, "not watched"), lost, checkpoint_hop()]))
    assert certain[("vigia_leg_loss_horizon_seconds", (("hop", KAFKA),))] == 0
    # Three hops, five states each; the checkpoint never has a margin.
    assert len([k for k in certain if k[0] == "vigia_leg_hop_state"]) == 15
    assert ("vigia_leg_hop_margin_seconds", (("hop", CHECKPOINT),)) not in certain
