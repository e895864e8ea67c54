"""The pipeline page in headless Chromium against real backends on loopback.

Prometheus (Debian binary) holds 40 minutes of the monitoring suite's history
(tests/monitoring/history.py), which loops the recorded Kafka, ingest and Connect/Debezium/HES
states through the real exporter, ingest and Connect collectors; the exporter's /api/v1/cluster
adds the `connect` section its Connect collector builds from a recorded state beside a moving
flow, and that flow (`source.flow`); the dashboard is the real `vigia-dashboard` CLI. The
screenshot goes to $VIGIA_DASHBOARD_SCREENSHOTS.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.conftest import free_port
from tests.connect.recorded import STATES
from tests.connect.test_connect_model import DENIED, recorded_reports
from tests.dashboard.backends import ClusterJsonServer, RealAlertmanager, start_dashboard
from tests.dashboard.horizon_states import STATES as HORIZONS
from tests.dashboard.recorded import cluster_json
from tests.dashboard.test_dashboard_browser import (  # the module skips when Chromium is missing
    Stack,
    assert_no_console_errors,
    browser,
    open_page,
    screenshot,
    table,
    wait_for,
)
from tests.monitoring.history import write_history
from tests.servers import PROMTOOL, Server, run, start_prometheus
from vigia.exporter.connect.collector import connect_json
from vigia.exporter.connect.stall import Pipeline
from vigia.exporter.model.pipeline_flow import MOVING, Flow

pytestmark = [
    pytest.mark.browser,
    pytest.mark.prometheus,
    pytest.mark.filterwarnings("ignore:HTTPResponse.getheader:DeprecationWarning"),
]
__all__ = ["browser"]  # the shared Chromium fixture, driven by this module's `stack`

HISTORY_SECONDS = 40 * 60
REPORTS = dict(zip(STATES, recorded_reports(), strict=True))


class ExporterWithConnect(ClusterJsonServer):
    """The recorded cluster JSON plus the `connect` section of a recorded Connect state."""

    connect_state = "healthy"  # the state the history ends in (2,400 s = 300 s into a cycle)
    horizon_state = "binlog_first"  # tests/dashboard/horizon_states.py

    def body(self) -> bytes:
        now = time.time()
        document = cluster_json(self.scenario, collected_at=now - 5)
        flow = Flow(MOVING, now - 3, 119_310, now - 20, now - 3)
        document["connect"] = connect_json(
            [REPORTS[self.connect_state]], Pipeline("hes-measure", flow)
        )
        document["source"] = {
            "checked_at": flow.checked_at,
            "interval_seconds": 15.0,
            "flow": {"connector": "hes-measure", "stall_after_seconds": 30.0, "state": MOVING,
                     "checked_at": flow.checked_at, "topic_end_offsets": flow.end_offsets,
                     "moved_at": flow.moved_at, "pending_since": None},
            "loss_horizon": HORIZONS[self.horizon_state],
        }  # fmt: skip
        return json.dumps(document).encode()


class HistoryPrometheus:
    def __init__(self, work: object) -> None:
        from pathlib import Path

        assert PROMTOOL is not None
        self.work = Path(str(work))
        end = time.time() - 20
        source = self.work / "history.om"
        write_history(source, self.work / "recordings", end - HISTORY_SECONDS, end, lambda _: True)
        result = run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source),
                      str(self.work / "tsdb")])  # fmt: skip
        assert result.returncode == 0, result.stderr
        source.unlink()
        self.config = self.work / "prometheus.yml"
        self.config.write_text("global:\n  scrape_interval: 15s\n", encoding="utf-8")
        self.server: Server | None = None

    def start(self) -> str:
        self.server = start_prometheus(
            self.config, self.work / "tsdb", self.work / "prometheus.log", port=free_port()
        )
        return self.server.url

    def stop(self) -> None:
        if self.server:
            self.server.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("dashboard-pipeline")
    prometheus = HistoryPrometheus(work)
    exporter = ExporterWithConnect()
    alertmanager = RealAlertmanager(work)
    dashboard: Server | None = None
    try:
        prometheus_url = prometheus.start()
        exporter.start()
        alertmanager.start()
        dashboard = start_dashboard(
            work, prometheus_url, exporter.url, alertmanager.url, "--refresh-interval=30"
        )
        yield Stack(prometheus, exporter, alertmanager, dashboard, dashboard.url)  # type: ignore[arg-type]
    finally:
        if dashboard:
            dashboard.stop()
        alertmanager.stop()
        exporter.stop()
        prometheus.stop()


def hops(driver: object) -> dict[str, tuple[str, str]]:
    found = driver.execute_script(  # type: ignore[attr-defined]
        "return [...document.querySelectorAll('.hop')].map(h => ["
        "h.id.replace('hop-', ''),"
        "[...h.classList].find(c => /^light-(red|amber|green|grey)$/.test(c)).slice(6),"
        "h.querySelector('.hop-headline').innerText]);"
    )
    return {key: (colour, headline) for key, colour, headline in found}  # in page order


def test_pipeline_page_draws_every_hop_with_its_state(browser: object, stack: Stack) -> None:
    open_page(browser, stack, "/pipeline")  # type: ignore[arg-type]
    got = wait_for(browser, lambda: len(hops(browser)) == 5 and hops(browser), "five hops")  # type: ignore[arg-type]
    assert list(got) == ["hes", "connect", "kafka", "spark", "parquet"]
    # Every hop has data from the history; hes-broken's task is FAILED in every recorded state.
    assert all(colour != "grey" for colour, _ in got.values()), got
    assert got["connect"][0] == "red" and "FAILED" in got["connect"][1]
    rows = table(browser, "connect-tasks")  # type: ignore[arg-type]
    assert rows == [["connect", "hes-broken/0", "FAILED", DENIED]]
    assert table(browser, "connect-stalls") == [  # type: ignore[arg-type]
        ["connect", "hes-broken", "STALLED", "failed", "–"],
        ["connect", "hes-measure", "moving", "–", "–"],
    ]
    assert_no_console_errors(browser)  # type: ignore[arg-type]
    screenshot(browser, "pipeline")  # type: ignore[arg-type]


def _headline(driver: object) -> tuple[str, str] | None:
    found = driver.execute_script(  # type: ignore[attr-defined]
        "const h = document.getElementById('loss-horizon');"
        "if (!h) return null;"
        "return [document.getElementById('loss-horizon-headline').innerText,"
        "[...h.classList].find(c => /^light-(red|amber|green|grey)$/.test(c)).slice(6)];"
    )
    return None if found is None else (found[0], found[1])


@pytest.mark.parametrize(
    ("state", "headline", "colour"),
    [
        ("binlog_first", "Measures safe for 5 h 10 min: the HES purges binlog first", "green"),
        ("kafka_lost", "Measures LOST: Kafka deleted measures the ingest job had not read", "red"),
        ("no_purge", "Measures safe: no hop of the leg purges anything", "green"),
        ("binlog_unwatched", "Measures safe for at most 2 h: Kafka deletes unread", "amber"),
    ],
)
def test_pipeline_page_leads_with_the_loss_horizon(
    browser: object, stack: Stack, state: str, headline: str, colour: str
) -> None:
    exporter = stack.exporter
    assert isinstance(exporter, ExporterWithConnect)
    exporter.horizon_state = state
    try:
        open_page(browser, stack, "/pipeline")  # type: ignore[arg-type]
        got = wait_for(browser, lambda: _headline(browser), "the loss horizon")  # type: ignore[arg-type]
        assert got[0].startswith(headline), got
        assert got[1] == colour, got
        # It leads the page: above the hops.
        first = browser.execute_script(  # type: ignore[attr-defined]
            "return document.querySelector('#page-body [id=loss-horizon], #page-body .hops').id"
        )
        assert first == "loss-horizon"
        assert_no_console_errors(browser)  # type: ignore[arg-type]
        screenshot(browser, f"pipeline-horizon-{state}")  # type: ignore[arg-type]
    finally:
        exporter.horizon_state = "binlog_first"
