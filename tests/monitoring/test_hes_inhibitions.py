"""One stall, one page: the real Alertmanager with prometheus/alertmanager.yml, given the HES
alerts each kind of stall fires (labels as prometheus/rules/hes.yml makes them), leaves exactly
one of them active. promtool tests when each alert fires; this tests what Alertmanager keeps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.monitoring.servers import PROMETHEUS_DIR
from tests.servers import MISSING, Server, start_alertmanager, wait_until

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"),
]

RULE_LABELS = {
    r["alert"]: r["labels"]
    for g in yaml.safe_load((PROMETHEUS_DIR / "rules" / "hes.yml").read_text())["groups"]
    for r in g["rules"]
}
MEASURE = {"connect": "connect", "connector": "hes-measure"}
CDC = {"server": "cdc", "connector": "hes-measure"}  # the exporter names the connector

# What fires during each kind of stall (alert name, its expression's labels), and what must page.
SCENARIOS: dict[str, tuple[list[tuple[str, dict[str, str]]], list[tuple[str, dict[str, str]]]]] = {
    # Issue 23: REST RUNNING, no worker runs the task, the Debezium series gone.
    "silent": (
        [("HesConnectorStalled", MEASURE), ("HesCdcDisconnected", CDC), ("HesToKafkaBehind", {})],
        [("HesConnectorStalled", MEASURE)],
    ),
    "failed": (
        [
            ("HesConnectorStalled", MEASURE),
            ("HesConnectorFailed", {"connector": "hes-measure"}),
            ("HesConnectorFailedJmx", {"connector": "hes-measure"}),  # the worker's own view
            ("HesCdcDisconnected", CDC),
            ("HesToKafkaBehind", {}),
        ],
        [("HesConnectorStalled", MEASURE)],
    ),
    "binlog-lost": (  # Connected 0 while the HES (and the exporter's reads) are fine
        [("HesConnectorStalled", MEASURE), ("HesCdcDisconnected", CDC)],
        [("HesConnectorStalled", MEASURE)],
    ),
    "worker-gone": (
        [
            ("HesConnectorStalled", MEASURE),
            ("HesConnectWorkerDown", {"connect": "connect"}),
            ("HesToKafkaBehind", {}),
        ],
        [("HesConnectorStalled", MEASURE)],
    ),
    # Without the exporter's REST view (the exporter run without --connect-url), the worker's JMX
    # view pages once; Debezium's series are gone with the task, so HesCdcDisconnected is quiet.
    "failed-jmx-only": (
        [("HesConnectorFailedJmx", {"connector": "hes-measure"}), ("HesToKafkaBehind", {})],
        [("HesConnectorFailedJmx", {"connector": "hes-measure"})],
    ),
    "hes-database-down": (  # no flow to judge: the disconnect pages alone
        [("HesCdcDisconnected", CDC)],
        [("HesCdcDisconnected", CDC)],
    ),
    "another-connector": (  # hes-broken's stall never hides hes-measure's disconnect
        [
            ("HesConnectorStalled", {"connect": "connect", "connector": "hes-broken"}),
            ("HesConnectorFailed", {"connector": "hes-broken"}),
            ("HesCdcDisconnected", CDC),
        ],
        [
            ("HesCdcDisconnected", CDC),
            ("HesConnectorStalled", {"connect": "connect", "connector": "hes-broken"}),
        ],
    ),
}


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The committed config: its placeholder receivers fail to deliver, which inhibition ignores."""
    work: Path = tmp_path_factory.mktemp("hes-inhibitions")
    server = start_alertmanager(
        PROMETHEUS_DIR / "alertmanager.yml", work / "data", work / "alertmanager.log"
    )
    yield server
    server.stop()


def _alert(cluster: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    every = {"alertname": name, "cluster": cluster, **RULE_LABELS[name], **labels}
    return {"labels": every, "annotations": {"summary": name}}


def _key(name: str, labels: dict[str, str]) -> tuple[str, str]:
    return name, labels.get("connector") or labels.get("connect") or ""


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_one_stall_pages_once(alertmanager: Server, scenario: str) -> None:
    firing, paging = SCENARIOS[scenario]
    alerts = [_alert(scenario, name, labels) for name, labels in firing]
    httpx.post(f"{alertmanager.url}/api/v2/alerts", json=alerts, timeout=5).raise_for_status()

    def listed() -> list[dict[str, Any]]:
        found = httpx.get(
            f"{alertmanager.url}/api/v2/alerts",
            params={"filter": f'cluster="{scenario}"'},
            timeout=5,
        ).json()
        return found if len(found) == len(alerts) else []

    found = wait_until(listed, 10, f"the {scenario} alerts")
    active = sorted(
        _key(a["labels"]["alertname"], a["labels"])
        for a in found
        if a["status"]["state"] == "active"
    )
    assert active == sorted(_key(n, labels) for n, labels in paging)
    for held in (a for a in found if a["status"]["state"] != "active"):
        assert held["status"]["state"] == "suppressed" and held["status"]["inhibitedBy"], held
