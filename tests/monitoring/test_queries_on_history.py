"""Every board query, board variable, recording rule and alert expression runs against a real
Prometheus holding two hours of realistic history (conftest.backfilled) and returns data."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tests.monitoring import boards
from tests.monitoring.community_7589 import QUERIES as COMMUNITY_QUERIES
from tests.monitoring.community_7589 import VARIABLES as COMMUNITY_VARIABLES
from tests.monitoring.conftest import Backfilled, rule_expressions
from tests.monitoring.promql import selectors

pytestmark = pytest.mark.prometheus

ALL = ".*"  # the boards' "All" value for every multi-value variable
RULES = rule_expressions()
RECORDED = [name for name in RULES if ":" in name]
ALERTS = [name for name in RULES if ":" not in name]

# What the history must make fire, and nothing else: the recorded states loop every 25 minutes
# (broker 1 stopped for 8 of them, then back without leaders for 6), the vigia-ingest group never
# commits, the log dirs grow at the recorded rate, and the ingest job reports yesterday 96.2 %
# complete (also at its deadline, in the history); the HES leg as described below. Alert
# expressions are evaluated without their `for:` (the promtool tests cover that). A broker that is
# down is no exporter failure, so VigiaExporterPartial stays quiet.
FIRING_IN_HISTORY = {
    "KafkaPartitionsUnderMinIsr": [{"topic": "events"}],
    "KafkaUnderReplicatedPartitions": [{"topic": t} for t in (
        "__consumer_offsets", "events", "measure", "measure-quarantine", "verify-6x3")],
    "KafkaBrokerDown": [{"broker": "1"}],
    "KafkaLeaderImbalance": [{"broker": "1"}],
    # Broker 1's probe partition is led by broker 2 while it is down (KafkaBrokerDown inhibits it).
    "KafkaProbeBrokerNotProbed": [{"broker": "1"}],
    "KafkaBrokerDiskWillFillIn7Days": [{"broker": b} for b in ("1", "2", "3")],
    "IngestBacklogGrowing": [{"consumergroup": "vigia-ingest"}],
    "IngestDayCompletenessLow": [{}],
    # The HES leg loops the Connect recordings (tests/monitoring/hes_history.py): hes-broken's task
    # is FAILED throughout and never has Debezium series; hes-measure's fails for 10 minutes after
    # the database outage, during which its Debezium series are first 0, then gone.
    "HesConnectorFailed": [{"connector": "hes-broken"}, {"connector": "hes-measure"}],
    # The worker's JMX view of the same failed tasks (held back by HesConnectorFailed).
    "HesConnectorFailedJmx": [{"connector": "hes-broken"}, {"connector": "hes-measure"}],
    # Both failed tasks are stalls (HesConnectorStalled holds the two alerts above and below back).
    "HesConnectorStalled": [{"connector": "hes-broken"}, {"connector": "hes-measure"}],
    # Connected 0 (the database down) and absent (the task failed) both name the connector.
    "HesCdcDisconnected": [
        {"server": "cdc", "connector": "hes-measure"},
        {"server": "cdcbroken", "connector": "hes-broken"},
    ],
    # When the database is back but the task still failed, the HES writes and Kafka does not: 17
    # minutes behind at the end (inhibited by HesConnectorFailed in Alertmanager).
    "HesToKafkaBehind": [{}],
    "HesDayIncomplete": [{}],
    # Yesterday's deadline passes half an hour in, at 96.2 % (the SLIs: history.IngestFeed).
    "IngestCompletenessFastBurn": [{"slo": "ingest-completeness"}],
    "IngestCompletenessSlowBurn": [{"slo": "ingest-completeness"}],
    "Watchdog": [{}],  # always, and about this Prometheus: no cluster
}  # fmt: skip


def has_values(result: list[dict[str, Any]]) -> bool:
    """At least one series with at least one real (not NaN) value."""
    for series in result:
        values = series.get("values") or [series.get("value")]
        if any(v is not None and not math.isnan(float(v[1])) for v in values):
            return True
    return False


def variable_values(backfilled: Backfilled, query: str) -> list[str]:
    """What Grafana's label_values(selector, label) offers, over the history."""
    inner = query.removeprefix("label_values(").removesuffix(")")
    selector, _, label = inner.rpartition(",")
    series = backfilled.api.series(selector.strip(), backfilled.start, backfilled.end())
    return sorted({s[label.strip()] for s in series if label.strip() in s})


@pytest.mark.parametrize("variable", boards.variables(), ids=lambda v: f"{v.board}${v.name}")
def test_board_variables_offer_values(backfilled: Backfilled, variable: boards.Variable) -> None:
    query = boards.substitute(variable.query, {"cluster": ALL})
    values = variable_values(backfilled, query)
    assert values, f"{variable.query} offers nothing"
    expected = {
        "cluster": {"smartmeter"},
        "broker": {"1", "2", "3"},
        "topic": {"measure", "events", "__consumer_offsets"},
        "group": {"vigia-ingest", "billing", "verify-group-848"},
        "query": {"measure-ingest"},
        "connector": {"hes-measure", "hes-broken"},
    }[variable.name]
    assert expected <= set(values), values


@pytest.mark.parametrize("target", boards.targets(), ids=lambda t: t.id)
def test_board_queries_return_data(backfilled: Backfilled, target: boards.Target) -> None:
    expr = boards.substitute(
        target.expr,
        {"cluster": ALL, "broker": ALL, "topic": ALL, "group": ALL, "query": ALL, "connector": ALL},
    )
    if target.instant:
        result = backfilled.api.instant(expr, backfilled.history.end)
    else:
        result = backfilled.api.range(expr, backfilled.start, backfilled.end())
    assert has_values(result), f"no data for {expr}"


@pytest.mark.parametrize("name", RECORDED)
def test_recording_rules_return_data(backfilled: Backfilled, name: str) -> None:
    """Both the expression itself and the series backfilled from it by promtool."""
    for expr in (RULES[name], name):
        result = backfilled.api.range(expr, backfilled.start, backfilled.history.end)
        assert has_values(result), f"no data for {expr}"


@pytest.mark.parametrize("name", ALERTS)
def test_alert_selectors_return_data(backfilled: Backfilled, name: str) -> None:
    """Every series an alert reads exists in the history, so a quiet alert is quiet for a reason."""
    for selector in selectors(RULES[name]):
        result = backfilled.api.range(f"count({selector})", backfilled.start, backfilled.end())
        assert has_values(result), f"{name}: nothing matches {selector}"


def test_alerts_firing_on_recorded_history(backfilled: Backfilled) -> None:
    fired = {}
    for name in ALERTS:
        # Up to the history's end: later, the backfilled exporter's last collection only ages
        # (VigiaExporterPartial's staleness half would fire as soon as the suite runs long).
        result = backfilled.api.range(RULES[name], backfilled.start, backfilled.history.end)
        if result:
            fired[name] = [r["metric"] for r in result]
    assert sorted(fired) == sorted(FIRING_IN_HISTORY), f"fired: {sorted(fired)}"
    for name, expected in FIRING_IN_HISTORY.items():
        keys = {k for labels in expected for k in labels}
        got = [{k: m.get(k, "") for k in keys} for m in fired[name]]  # missing = empty
        assert sorted(map(sorted, map(dict.items, got))) == sorted(
            map(sorted, map(dict.items, expected))
        ), (name, fired[name])
        clusters = {m.get("cluster") for m in fired[name]}
        assert clusters == ({None} if name == "Watchdog" else {"smartmeter"}), fired[name]


def test_community_board_7589_works_unchanged(backfilled_community: Backfilled) -> None:
    """kafka_exporter's community board, on an exporter run with kafka_exporter's per-partition
    group series (--group-offsets-granularity partition): variables resolve and every panel
    returns data."""
    backfilled = backfilled_community
    values: dict[str, str] = {}
    for name, query in COMMUNITY_VARIABLES.items():
        offered = variable_values(backfilled, boards.substitute(query, values))
        assert offered, f"7589 variable ${name} offers nothing"
        values[name] = {"job": "vigia-exporter", "instance": "exporter:9308"}.get(name, "measure")
        assert values[name] in offered, (name, offered)
    for title, query in COMMUNITY_QUERIES.items():
        expr = boards.substitute(query, values)
        result = backfilled.api.range(expr, backfilled.start, backfilled.end())
        assert has_values(result), f"7589 panel {title!r}: no data for {expr}"
