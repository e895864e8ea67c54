"""The Promises page and the Capacity page's glance in headless Chromium, against a real
Prometheus holding four hours of the freshness SLI's series (an incident 50 to 20 minutes ago:
6 % of live measures late, a burn rate of 6 against a 99 % objective) and no completeness-by-
deadline series at all: that promise must read "no data", not a perfect score. The screenshot goes
to $VIGIA_DASHBOARD_SCREENSHOTS."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.dashboard.backends import start_dashboard
from tests.dashboard.test_dashboard_browser import (  # the module skips when Chromium is missing
    Stack,
    assert_no_console_errors,
    browser,
    open_page,
    plot,
    screenshot,
    table,
    wait_for,
)
from tests.servers import PROMTOOL, Server, run, start_prometheus

pytestmark = [
    pytest.mark.browser,
    pytest.mark.prometheus,
    pytest.mark.filterwarnings("ignore:HTTPResponse.getheader:DeprecationWarning"),
]
__all__ = ["browser"]  # the shared Chromium fixture, driven by this module's `stack`

SCRAPE = 15
HISTORY = 4 * 3600
PER_SCRAPE = 1000  # live measures stored per scrape interval
LATE_IN_INCIDENT = 60  # of them older than 1,800 s, during the incident
INCIDENT = (50 * 60, 20 * 60)  # seconds before the end


def history(end: float) -> str:
    """The ingest job's freshness series as Prometheus would have scraped them (only the buckets
    the SLO reads), plus a redelivered cohort whose measures are all late: it must not count."""
    lines = []
    good = total = 0
    labels = 'instance="127.0.0.1:9310",job="vigia-ingest",query="vigia-ingest"'
    steps = HISTORY // SCRAPE
    for i in range(steps + 1):
        at = end - (steps - i) * SCRAPE
        before_end = end - at
        late = LATE_IN_INCIDENT if INCIDENT[1] < before_end <= INCIDENT[0] else 0
        if i:
            total += PER_SCRAPE
            good += PER_SCRAPE - late
        fresh = "vigia_ingest_measure_freshness_seconds"
        lines += [
            f'{fresh}_bucket{{cohort="live",{labels},le="1800"}} {good} {at:.3f}',
            f'{fresh}_count{{cohort="live",{labels}}} {total} {at:.3f}',
            f'{fresh}_bucket{{cohort="redelivered",{labels},le="1800"}} 0 {at:.3f}',
            f'{fresh}_count{{cohort="redelivered",{labels}}} {i * 500} {at:.3f}',
        ]
    return "\n".join(lines) + "\n# EOF\n"


class NoBackend:
    """An address nothing listens on (the exporter and Alertmanager: not what this page reads)."""

    url = f"http://127.0.0.1:{free_port()}"

    def stop(self) -> None:
        pass


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    assert PROMTOOL is not None
    work = Path(str(tmp_path_factory.mktemp("dashboard-promises")))
    source = work / "history.om"
    source.write_text(history(time.time() - 20), encoding="utf-8")
    result = run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source),
                  str(work / "tsdb")])  # fmt: skip
    assert result.returncode == 0, result.stderr
    config = work / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\n", encoding="utf-8")
    prometheus: Server | None = None
    dashboard: Server | None = None
    try:
        prometheus = start_prometheus(config, work / "tsdb", work / "prometheus.log", free_port())
        dashboard = start_dashboard(
            work, prometheus.url, NoBackend.url, NoBackend.url, "--refresh-interval=30"
        )
        yield Stack(prometheus, NoBackend(), NoBackend(), dashboard, dashboard.url)  # type: ignore[arg-type]
    finally:
        if dashboard:
            dashboard.stop()
        if prometheus:
            prometheus.stop()


def headline(driver: object, key: str) -> str:
    return str(
        driver.execute_script(  # type: ignore[attr-defined]
            "const e = document.getElementById(arguments[0]); return e ? e.innerText : '';",
            key,
        )
    )


def test_promises_page_shows_compliance_burn_and_incidents_and_no_data_as_such(
    browser: object, stack: Stack
) -> None:
    open_page(browser, stack, "/promises")  # type: ignore[arg-type]
    # 7,200 late of 960,000 live measures: 99.250 % met, a quarter of the budget left.
    got = wait_for(browser, lambda: headline(browser, "slo-ingest-freshness-headline"), "headline")  # type: ignore[arg-type]
    assert "99.250 % over 28d" in got and "budget left 25.0 %" in got, got
    burn = dict(tuple(row) for row in table(browser, "slo-ingest-freshness-burn"))  # type: ignore[arg-type]
    assert burn["5m"] == "0.00×" and burn["1h"].startswith("3.0"), burn  # half the hour late
    incidents = table(browser, "slo-ingest-freshness-incidents")  # type: ignore[arg-type]
    assert len(incidents) == 1 and incidents[0][2] == "6.00×", incidents
    nodata = headline(browser, "slo-ingest-completeness-nodata")
    assert "No data" in nodata and "not a perfect score" in nodata, nodata
    assert headline(browser, "slo-ingest-completeness-headline") == ""
    drawn = wait_for(browser, lambda: plot(browser, "fig-slo-ingest-freshness-burn"), "burn chart")  # type: ignore[arg-type]
    assert max(v for v in drawn["burn rate"] if v is not None) == pytest.approx(6.0)
    screenshot(browser, "promises")  # type: ignore[arg-type]
    assert_no_console_errors(browser)  # type: ignore[arg-type]


def test_capacity_page_has_the_promises_month_at_a_glance(browser: object, stack: Stack) -> None:
    open_page(browser, stack, "/capacity")  # type: ignore[arg-type]
    rows = wait_for(browser, lambda: table(browser, "capacity-slo-glance"), "glance")  # type: ignore[arg-type]
    assert rows == [
        ["Measures stored within 30 minutes", "99.0 %", "99.250 %", "25.0 %"],
        ["Each day complete by its deadline", "99.9 %", "no data", "no data"],
    ]
