"""Inhibitions only hide what their cause explains (prometheus/alertmanager.yml).

For each alert the jobs its expression reads are derived (tests/monitoring/alert_sources.py). An
inhibition whose cause is a job's data going missing (VigiaExporterDown) may hold back only alerts
whose every series comes from that job: one that also reads Connect's JMX, the ingest job or the HES
database's exporter sees what it reports without the exporter, and must keep paging. The other
inhibitions hold back symptoms their cause explains; what can be checked of them is that a ticket
never holds back a page, and that nothing holds back the Watchdog heartbeat."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.monitoring.alert_sources import (
    EXPORTER,
    PROMETHEUS_DIR,
    alerts,
    jobs_of_metric,
    jobs_read,
    scrape_jobs,
)
from tests.monitoring.promql import metric_name, selectors

CONFIG = yaml.safe_load((PROMETHEUS_DIR / "alertmanager.yml").read_text())
ALERTS = alerts()
# Inhibiting alerts that say a job's data is gone -> that job.
DATA_LOST = {"VigiaExporterDown": EXPORTER}
RANK = {"none": -1, "info": 0, "warning": 1, "critical": 2}


def _labels(name: str) -> dict[str, str]:
    return {"alertname": name, **ALERTS[name]["labels"]}


def _matches(matcher: str, labels: dict[str, str]) -> bool:
    """Alertmanager's matcher on an alert's static labels (absent = empty)."""
    found = re.fullmatch(r'\s*(\w+)\s*(=~|!~|!=|=)\s*"(.*)"\s*', matcher)
    assert found, f"cannot read matcher {matcher!r}"
    label, op, value = found.groups()
    got = labels.get(label, "")
    hit = re.fullmatch(value, got) is not None if "~" in op else got == value
    return hit if op in ("=", "=~") else not hit


def _matched(matchers: list[str]) -> list[str]:
    return [n for n in ALERTS if all(_matches(m, _labels(n)) for m in matchers)]


def _violations(rule: dict[str, Any]) -> list[str]:
    """What an inhibit rule could hide that its cause does not explain."""
    found = []
    for source in _matched(rule["source_matchers"]):
        for target in _matched(rule["target_matchers"]):
            reads = jobs_read(ALERTS[target]["expr"])
            if source in DATA_LOST and reads != {DATA_LOST[source]}:
                found.append(f"{source} hides {target}, which reads {sorted(reads)}")
            elif (
                source not in DATA_LOST
                and RANK[_labels(target)["severity"]] > RANK[_labels(source)["severity"]]
            ):
                found.append(f"{source} ({_labels(source)['severity']}) hides page {target}")
    return found


def test_every_series_an_alert_reads_comes_from_a_scraped_job() -> None:
    for name, rule in ALERTS.items():
        for selector in selectors(rule["expr"]):
            name_ = metric_name(selector)
            assert name_, (name, selector)
        assert jobs_read(rule["expr"]) - {"prometheus (scrape)"} <= scrape_jobs(), name
    # The derivation knows the jobs apart: the exporter's Connect families, the worker's JMX.
    assert jobs_of_metric("kafka_connect_task_state") == {EXPORTER}
    assert jobs_of_metric("kafka_connect_task_status") == {"kafka-connect"}
    assert jobs_of_metric("vigia_ingest_day_measures") == {"vigia-ingest"}
    assert jobs_of_metric("vigia_hes_day_rows") == {EXPORTER}


@pytest.mark.parametrize("name", sorted(ALERTS))
def test_exporter_only_label_says_what_the_expression_reads(name: str) -> None:
    reads = jobs_read(ALERTS[name]["expr"])
    labelled = ALERTS[name]["labels"].get("exporter_only")
    assert labelled in (None, "true"), name
    wanted = '"true"' if reads == {EXPORTER} else "absent"
    assert (labelled == "true") == (reads == {EXPORTER}), (
        f"{name} reads {sorted(reads)}: exporter_only must be {wanted}"
    )


def test_a_lost_job_hides_only_alerts_that_read_nothing_else_and_no_ticket_hides_a_page() -> None:
    problems = [v for rule in CONFIG["inhibit_rules"] for v in _violations(rule)]
    assert problems == []


def test_the_check_catches_the_broad_source_inhibition() -> None:
    """The rule as it was (`source="exporter"`) hid an alert that also reads the ingest job."""
    broad = {
        "source_matchers": ['alertname="VigiaExporterDown"'],
        "target_matchers": ['source="exporter"'],
    }
    assert (
        "VigiaExporterDown hides HesDayIncomplete, which reads ['vigia-exporter', 'vigia-ingest']"
        in _violations(broad)
    )
    assert _violations({**broad, "target_matchers": ['alertname="HesConnectorFailedJmx"']})
    ticket = {
        "source_matchers": ['alertname="KafkaBrokerDown"'],
        "target_matchers": ['alertname="KafkaPartitionsUnderMinIsr"'],
    }
    assert _violations(ticket) == [
        "KafkaBrokerDown (warning) hides page KafkaPartitionsUnderMinIsr"
    ]


def test_every_inhibit_rule_matches_real_alerts_and_none_reaches_the_heartbeat() -> None:
    for rule in CONFIG["inhibit_rules"]:
        assert _matched(rule["source_matchers"]), rule
        targets = _matched(rule["target_matchers"])
        assert targets, rule
        assert "Watchdog" not in targets, rule
    # And the exporter-down rule hides exactly the exporter-only alerts.
    (down,) = [
        r
        for r in CONFIG["inhibit_rules"]
        if _matched(r["source_matchers"]) == ["VigiaExporterDown"]
    ]
    assert sorted(_matched(down["target_matchers"])) == sorted(
        n for n in ALERTS if jobs_read(ALERTS[n]["expr"]) == {EXPORTER}
    )
