"""The exporter down (a ticket) never keeps a page from being sent when the page's data does not
come from the exporter: the real Alertmanager with the rendered prometheus/alertmanager.yml (fast
timers, conftest.alertmanager), given the alerts of an exporter outage during which a Connect task
fails, pages the worker's JMX view of the failure and holds back only exporter-only alerts. amtool
routes the same labels to the pager."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.monitoring.alert_sources import alerts
from tests.monitoring.servers import PROMETHEUS_DIR, Receiver
from tests.servers import AMTOOL, Server, run, wait_until

pytestmark = pytest.mark.prometheus

CLUSTER = "exporter-down-drill"
RULES = alerts()
# (alert, labels its expression adds) during the outage. The exporter's instant series go stale
# with its first failed scrape, so what still fires from its data reads a window of the past.
FIRING = [
    ("VigiaExporterDown", {"job": "vigia-exporter"}),
    ("HesConnectorFailedJmx", {"connector": "hes-measure"}),  # the worker's JMX: pages
    ("HesCdcDisconnected", {"server": "cdc"}),  # JMX; no connector name without the exporter
    ("HesDayIncomplete", {"measure_date": "2026-11-27"}),  # reads the ingest job too: a ticket
    # Exporter-only, from the hour / 10 minutes before it went down.
    ("IngestMeasuresLost", {"consumergroup": "vigia-ingest", "topic": "measure"}),
    ("KafkaProbeMessagesFailing", {"broker": "1"}),
]
PAGED = {"HesConnectorFailedJmx", "HesCdcDisconnected"}
TICKETED = {"VigiaExporterDown", "HesDayIncomplete"}
HELD_BACK = {"IngestMeasuresLost", "KafkaProbeMessagesFailing"}


def _labels(name: str, extra: dict[str, str]) -> dict[str, str]:
    return {"alertname": name, "cluster": CLUSTER, **RULES[name]["labels"], **extra}


def test_amtool_routes_the_jmx_failure_to_the_pager() -> None:
    assert AMTOOL is not None
    labels = _labels("HesConnectorFailedJmx", {"connector": "hes-measure"})
    result = run(
        [AMTOOL, "config", "routes", "test",
         f"--config.file={PROMETHEUS_DIR / 'alertmanager.yml'}",
         *(f"{k}={v}" for k, v in labels.items())]
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "pager"


def test_exporter_down_with_a_failed_task_still_pages(
    alertmanager: Server, receiver: Receiver
) -> None:
    alerts_ = [
        {"labels": _labels(name, extra), "annotations": {"summary": name}} for name, extra in FIRING
    ]
    httpx.post(f"{alertmanager.url}/api/v2/alerts", json=alerts_, timeout=5).raise_for_status()

    def delivered(path: str) -> set[str]:
        return {
            a["labels"]["alertname"]
            for payload in receiver.payloads(path)
            for a in payload["alerts"]
            if a["labels"].get("cluster") == CLUSTER and a["status"] == "firing"
        }

    wait_until(lambda: delivered("pager") >= PAGED, 30, f"pages for {sorted(PAGED)}")
    wait_until(lambda: delivered("ticket") >= TICKETED, 30, f"tickets for {sorted(TICKETED)}")

    found: list[dict[str, Any]] = httpx.get(
        f"{alertmanager.url}/api/v2/alerts", params={"filter": f'cluster="{CLUSTER}"'}, timeout=5
    ).json()
    state = {a["labels"]["alertname"]: a["status"] for a in found}
    assert {n for n, s in state.items() if s["state"] == "active"} == PAGED | TICKETED
    for name in HELD_BACK:
        assert state[name]["state"] == "suppressed" and state[name]["inhibitedBy"], state[name]
    # A second connector fails: its page comes a group interval later, after every group's flush
    # that could have sent what is held back.
    second = _labels("HesConnectorFailedJmx", {"connector": "hes-archive"})
    httpx.post(
        f"{alertmanager.url}/api/v2/alerts", json=[{"labels": second}], timeout=5
    ).raise_for_status()
    wait_until(
        lambda: any(a["labels"] == second for p in receiver.payloads("pager") for a in p["alerts"]),
        30,
        "the second connector's page",
    )
    assert not (delivered("pager") | delivered("ticket")) & HELD_BACK
    assert delivered("pager") == PAGED
