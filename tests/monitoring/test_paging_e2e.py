"""End to end: a real Prometheus evaluates the real rules against an ingest job that stops, a
real Alertmanager routes the page to a webhook receiver on loopback (with its runbook link),
inhibits what the outage explains, and sends the resolve when the job recovers.

The ingest target is the job's real metrics collector (ingest.metrics.IngestMetrics) served by
prometheus-client. Only timings differ from production: 1 s scrapes and evaluations, `for:` of 2 s,
Alertmanager group timers of 1-2 s (servers.fast_alertmanager_config)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry, start_http_server

from tests.conftest import free_port
from tests.monitoring.servers import (
    PROMETHEUS_DIR,
    PromAPI,
    Receiver,
    derived_prometheus_config,
)
from tests.servers import Server, start_prometheus, wait_until

pytestmark = pytest.mark.prometheus

PAGE_WITHIN = 45.0  # seconds from the query stopping to the page, with 1-2 s timers everywhere
# Links start with the repository's external label vigia_console_url (the Dash app).
RUNBOOK = "http://localhost:8050/runbooks/IngestQueryDown"


class IngestTarget:
    """The ingest job's real collector on a loopback port, driven like the Spark listener would."""

    def __init__(self) -> None:
        from vigia.ingest.metrics import IngestMetrics

        self.metrics = IngestMetrics("measure-ingest")
        self.registry = CollectorRegistry()
        self.registry.register(self.metrics)
        self.port = free_port()
        self.server, self.thread = start_http_server(
            self.port, addr="127.0.0.1", registry=self.registry
        )
        self.metrics.query_started()
        self._batch = 0

    def progress(self, newest_measure: float | None) -> None:
        from vigia.ingest.metrics import ProgressSample

        now = time.time()
        self.metrics.progress(
            ProgressSample(
                batch_id=self._batch, timestamp=now, input_rows=100, input_rows_per_second=3.0,
                processed_rows_per_second=50.0, batch_duration_seconds=2.0, phase_seconds={},
                invalid_by_reason={}, newest_measure_timestamp=newest_measure, offsets_behind={},
                end_offsets={},
            )
        )  # fmt: skip
        self._batch += 1

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def ingest_target() -> Iterator[IngestTarget]:
    target = IngestTarget()
    yield target
    target.stop()


def fast_rules(out: Path) -> list[Path]:
    """The real rule files, alerts with `for: 2s`."""
    alerts = yaml.safe_load((PROMETHEUS_DIR / "rules" / "alerts.yml").read_text())
    for group in alerts["groups"]:
        for rule in group["rules"]:
            rule["for"] = "2s"
    path = out / "alerts.yml"
    path.write_text(yaml.safe_dump(alerts, sort_keys=False))
    return [PROMETHEUS_DIR / "rules" / "recording.yml", path]


@pytest.fixture
def prometheus(
    binaries: None, alertmanager: Server, ingest_target: IngestTarget, tmp_path: Path
) -> Iterator[PromAPI]:
    config = derived_prometheus_config(
        tmp_path,
        {"vigia-ingest": [f"127.0.0.1:{ingest_target.port}"]},
        fast_rules(tmp_path),
        alertmanager=alertmanager.url.removeprefix("http://"),
    )
    server = start_prometheus(config, tmp_path / "data", tmp_path / "prometheus.log")
    api = PromAPI(server.url)
    wait_until(lambda: api.instant('up{job="vigia-ingest"} == 1'), 30, "the first scrape")
    yield api
    server.stop()


def notifications(
    receiver: Receiver, path: str, alertname: str, status: str
) -> list[dict[str, Any]]:
    return [
        alert
        for payload in receiver.payloads(path)
        for alert in payload["alerts"]
        if alert["labels"]["alertname"] == alertname and alert["status"] == status
    ]


def firing_in_prometheus(api: PromAPI, alertname: str) -> bool:
    alerts = api.client.get("/api/v1/alerts").json()["data"]["alerts"]
    return any(a["labels"]["alertname"] == alertname and a["state"] == "firing" for a in alerts)


def test_ingest_outage_pages_with_runbook_inhibits_symptoms_and_resolves(
    prometheus: PromAPI, alertmanager: Server, receiver: Receiver, ingest_target: IngestTarget
) -> None:
    # Healthy: the query runs and reports progress (no measure written yet, so no freshness).
    ingest_target.progress(newest_measure=None)
    time.sleep(3)
    assert not notifications(receiver, "pager", "IngestQueryDown", "firing")

    # The streaming query dies; the process keeps serving its metrics.
    stopped = time.monotonic()
    ingest_target.metrics.query_terminated()
    (page,) = wait_until(
        lambda: notifications(receiver, "pager", "IngestQueryDown", "firing"),
        PAGE_WITHIN,
        "the IngestQueryDown page at the pager receiver",
    )
    assert time.monotonic() - stopped < PAGE_WITHIN
    assert page["labels"] == {
        "alertname": "IngestQueryDown", "product": "vigia", "severity": "critical",
        "source": "ingest", "cluster": "smartmeter", "job": "vigia-ingest", "env": "dev",
        "vigia_console_url": "http://localhost:8050",
    }  # fmt: skip
    assert page["annotations"]["runbook_url"] == RUNBOOK
    assert page["annotations"]["dashboard_url"] == "http://localhost:8050/ingest"
    assert page["annotations"]["summary"] == (
        "Ingest job is not running its streaming query (smartmeter)"
    )
    assert not notifications(receiver, "ticket", "IngestQueryDown", "firing"), "not a ticket"

    # Data goes stale as a consequence: Prometheus fires it, Alertmanager holds it back.
    ingest_target.progress(newest_measure=time.time() - 2 * 3600)
    wait_until(lambda: firing_in_prometheus(prometheus, "IngestDataStale"), 30, "IngestDataStale")

    def suppressed() -> bool:
        alerts = httpx.get(f"{alertmanager.url}/api/v2/alerts", timeout=5).json()
        return any(
            a["labels"]["alertname"] == "IngestDataStale"
            and a["status"]["state"] == "suppressed"
            and a["status"]["inhibitedBy"]
            for a in alerts
        )

    wait_until(suppressed, 30, "Alertmanager to inhibit IngestDataStale")
    time.sleep(3)  # two group intervals: it would have been sent by now
    assert not notifications(receiver, "pager", "IngestDataStale", "firing")

    # The job recovers: the page resolves.
    ingest_target.metrics.idle(time.time())
    ingest_target.progress(newest_measure=time.time())
    ingest_target.metrics.query_started()
    (resolved,) = wait_until(
        lambda: notifications(receiver, "pager", "IngestQueryDown", "resolved"),
        PAGE_WITHIN,
        "the IngestQueryDown resolve at the pager receiver",
    )
    assert resolved["annotations"]["runbook_url"] == RUNBOOK
    assert resolved["endsAt"] > resolved["startsAt"]
