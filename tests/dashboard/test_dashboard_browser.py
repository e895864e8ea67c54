"""Every page in headless Chromium against real backends on loopback.

- Prometheus: the Debian binary on a tsdb backfilled (promtool) with the exporter expositions that
  `exporter.recording.replay()` builds from the shared Kafka 4.0 recordings, plus the brokers' real
  JMX scrapes, shifted to end 20 s before the suite starts.
- Exporter: a loopback server serving `replay()`'s /api/v1/cluster JSON for a chosen scenario
  (the exporter's HTTP app is not needed to produce that JSON; the pipeline that builds it is).
- Alertmanager: the Debian binary, with one alert posted to its API.
- The dashboard itself: the real `vigia-dashboard` CLI in a subprocess (waitress).

One Prometheus, one Alertmanager, one dashboard and one Chromium for the module. Screenshots of
every page go to $VIGIA_DASHBOARD_SCREENSHOTS (default: <tmp>/vigia-dashboard-screenshots).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, start_chromium
from tests.dashboard.backends import (
    BackfilledPrometheus,
    ClusterJsonServer,
    RealAlertmanager,
    start_dashboard,
)
from tests.servers import ALERTMANAGER, PROMETHEUS, PROMTOOL, Server
from vigia.dashboard.views.common import fmt_seconds

pytestmark = [
    pytest.mark.browser,
    pytest.mark.prometheus,
    # selenium 4.2 calls urllib3's deprecated getheader() on every command
    pytest.mark.filterwarnings("ignore:HTTPResponse.getheader:DeprecationWarning"),
]

SCREENSHOTS = Path(
    os.environ.get(
        "VIGIA_DASHBOARD_SCREENSHOTS",
        str(Path(tempfile.gettempdir()) / "vigia-dashboard-screenshots"),
    )
)
REFRESH = 3  # seconds: short, so the auto-refresh test does not wait long
TEST_ALERT = "IngestDataStale"  # a real rule name; the test posts it to Alertmanager itself

_missing = [
    name
    for name, path in (
        ("chromium", CHROMIUM),
        ("chromedriver", CHROMEDRIVER),
        ("prometheus", PROMETHEUS),
        ("promtool", PROMTOOL),
        ("prometheus-alertmanager", ALERTMANAGER),
    )
    if not path
]
if _missing:
    pytest.skip(f"browser suite needs {', '.join(_missing)} on PATH", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402


@dataclass
class Stack:
    prometheus: BackfilledPrometheus
    exporter: ClusterJsonServer
    alertmanager: RealAlertmanager
    dashboard: Server
    url: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("dashboard-browser")
    prometheus = BackfilledPrometheus(work)
    exporter = ClusterJsonServer()
    alertmanager = RealAlertmanager(work)
    dashboard: Server | None = None
    try:
        prometheus.start()
        exporter.start()
        alertmanager.start()
        alertmanager.fire(
            TEST_ALERT, "critical", "Newest stored measure is over 1 h old (posted by the test)"
        )
        dashboard = start_dashboard(
            work, prometheus.url, exporter.url, alertmanager.url, f"--refresh-interval={REFRESH}"
        )
        yield Stack(prometheus, exporter, alertmanager, dashboard, dashboard.url)
    finally:
        if dashboard:
            dashboard.stop()
        alertmanager.stop()
        exporter.stop()
        prometheus.stop()


@pytest.fixture(scope="module")
def browser(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"), 1400, log_console=True)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "failure.png").unlink(missing_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


# ------------------------------------------------------------------ helpers


def wait_for(driver: WebDriver, check: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    shot = SCREENSHOTS / "failure.png"
    driver.save_screenshot(str(shot))
    raise AssertionError(f"{what} not seen within {timeout:g} s (last: {last!r}; see {shot})")


def open_page(driver: WebDriver, stack: Stack, path: str) -> None:
    """Load a page and wait until a refresh has drawn it."""
    driver.get(stack.url + path)
    wait_for(
        driver,
        lambda: driver.execute_script(
            "const s = document.getElementById('status-line');"
            "return document.querySelector('#page-body .card')"
            " && s && s.innerText.includes('updated');"
        ),
        f"page {path}",
    )


def text(driver: WebDriver, element_id: str) -> str:
    return str(
        driver.execute_script(
            "const e = document.getElementById(arguments[0]); return e ? e.innerText : '';",
            element_id,
        )
    )


def table(driver: WebDriver, table_id: str) -> list[list[str]]:
    return list(
        driver.execute_script(
            "return [...document.querySelectorAll('#' + arguments[0] + ' tbody tr')]"
            ".map(r => [...r.cells].map(c => c.innerText.trim()));",
            table_id,
        )
    )


def plot(driver: WebDriver, graph_id: str) -> dict[str, list[Any]]:
    """{trace name: y values} of a drawn Plotly graph ({} while it is not drawn)."""
    return dict(
        driver.execute_script(
            "const g = document.querySelector('#' + arguments[0] + ' .js-plotly-plot');"
            "if (!g || !g.data) return {};"
            "return Object.fromEntries(g.data.map(t => [t.name || '', t.y || t.z || []]));",
            graph_id,
        )
        or {}
    )


def heatmap_counts(driver: WebDriver, graph_id: str) -> dict[str, list[str]]:
    """{row name: cell texts} of a drawn heatmap."""
    return dict(
        driver.execute_script(
            "const g = document.querySelector('#' + arguments[0] + ' .js-plotly-plot');"
            "if (!g || !g.data) return {};"
            "const h = g.data[0]; return Object.fromEntries(h.y.map((y, i) => [y, h.text[i]]));",
            graph_id,
        )
        or {}
    )


def plot_annotation(driver: WebDriver, graph_id: str) -> str:
    return str(
        driver.execute_script(
            "const g = document.querySelector('#' + arguments[0] + ' .js-plotly-plot');"
            "const a = g && g.layout && g.layout.annotations;"
            "return a && a.length ? a[0].text : '';",
            graph_id,
        )
    )


def grid_column(driver: WebDriver, name: str, col: str) -> list[str]:
    return list(
        driver.execute_script(
            "return [...document.querySelectorAll("
            "'#' + arguments[0] + ' .ag-center-cols-container .ag-row')]"
            ".sort((a, b) => +a.getAttribute('row-index') - +b.getAttribute('row-index'))"
            ".map(r => r.querySelector('[col-id=\"' + arguments[1] + '\"]').innerText.trim());",
            name,
            col,
        )
    )


def lights(driver: WebDriver) -> dict[str, tuple[str, str]]:
    """{light key: (colour, value)} from the overview."""
    found = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.light')].map(l => ["
        "l.id.replace('light-', ''),"
        "[[...l.classList].find(c => c.startsWith('light-')).replace('light-', ''),"
        "l.querySelector('.light-value').innerText]]));"
    )
    return {key: (colour, value) for key, (colour, value) in found.items()}


def screenshot(driver: WebDriver, name: str) -> Path:
    """A full-page PNG (the viewport is stretched to the page's height for the capture)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1400, "height": min(int(height), 6000), "deviceScaleFactor": 1, "mobile": False},
    )
    time.sleep(0.6)  # let Plotly resize to the new viewport
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return path


def assert_no_console_errors(driver: WebDriver) -> None:
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], severe


# ------------------------------------------------------------------ healthy cluster


def test_overview_healthy(browser: WebDriver, stack: Stack) -> None:
    stack.exporter.scenario = "healthy"
    open_page(browser, stack, "/")
    state = lights(browser)
    # The ingest backlog in seconds: the exporter's lag-in-seconds series, last recording's value.
    ingest_lag = stack.prometheus.query(
        'max(kafka_consumergroup_max_lag_seconds{consumergroup="vigia-ingest"})'
    )
    seconds = float(ingest_lag[0]["value"][1])
    assert state.pop("backlog") == ("green", fmt_seconds(seconds)), seconds
    # Freshness: the recorded batches wrote measures a day older than the run, hence red.
    newest = stack.prometheus.query("max(vigia_ingest_newest_measure_timestamp_seconds)")
    age = time.time() - float(newest[0]["value"][1])
    assert state.pop("freshness")[0] == "red" and 20 * 3600 < age < 25 * 3600
    assert state == {
        "brokers": ("green", "3 / 3"),
        "controller": ("green", "broker 2"),
        "offline": ("green", "0"),
        "under_min_isr": ("green", "0"),
        "urp": ("green", "0"),
        "preferred": ("green", "0"),
        "alerts": ("red", "1"),
        "exporter": ("green", "up"),
    }
    # the backlog light reads Prometheus (the last recording, rebalanced) for both its numbers
    assert "295,914 messages behind" in text(browser, "light-backlog")
    assert TEST_ALERT in text(browser, "alerts-table")
    throughput = wait_for(browser, lambda: plot(browser, "fig-overview-throughput"), "throughput")
    assert 1900 < max(v for v in throughput["all topics"] if v is not None) < 2100
    assert text(browser, "banner") == ""
    assert "1 alert firing" in text(browser, "status-line")
    assert_no_console_errors(browser)
    screenshot(browser, "overview-healthy")


def test_brokers_healthy(browser: WebDriver, stack: Stack) -> None:
    open_page(browser, stack, "/brokers")
    rows = table(browser, "brokers-table")
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("1", "up", "23", "44"),
        ("2 ★", "up", "22", "45"),
        ("3", "up", "23", "44"),
    ]
    cpu = wait_for(browser, lambda: plot(browser, "fig-brokers-cpu"), "CPU chart")
    assert sorted(cpu) == ["broker 1", "broker 2", "broker 3"]
    leaders = plot(browser, "fig-brokers-leaders-history")
    assert 0 in leaders["broker 1"] and 35 in leaders["broker 2"]  # the broker-down history
    assert [r[2] for r in table(browser, "log-dirs-table")] == ["32.6 MB"] * 3
    assert_no_console_errors(browser)
    screenshot(browser, "brokers")


def test_topics_search_and_leader_matrix(browser: WebDriver, stack: Stack) -> None:
    open_page(browser, stack, "/topics")
    assert "Partitions (68)" in browser.find_element(By.TAG_NAME, "main").text
    wait_for(browser, lambda: grid_column(browser, "partitions-table", "topic"), "partition grid")
    counts = wait_for(
        browser, lambda: heatmap_counts(browser, "fig-topics-leader-matrix"), "matrix"
    )
    assert counts["__consumer_offsets"] == ["17", "16", "17"]
    assert counts["measure"] == ["2", "2", "2"]
    search = browser.find_element(By.CSS_SELECTOR, "#partitions-table input")
    search.send_keys("quarantine 2,3,1")  # every word must match some column of the row
    wait_for(
        browser,
        lambda: grid_column(browser, "partitions-table", "partition") == ["1"],
        "quick filter",
    )
    assert grid_column(browser, "partitions-table", "leader") == ["2"]
    search.send_keys(Keys.CONTROL, "a", Keys.DELETE)
    search.send_keys("measure")
    wait_for(
        browser,
        lambda: (
            grid_column(browser, "partitions-table", "topic")
            == ["measure"] * 6 + ["measure-quarantine"] * 3
        ),
        "the partitions of measure and measure-quarantine",
    )
    rates = plot(browser, "fig-topics-rate")
    assert 1900 < max(v for v in rates["measure"] if v is not None) < 2100
    assert_no_console_errors(browser)
    screenshot(browser, "topics")


def test_consumers(browser: WebDriver, stack: Stack) -> None:
    open_page(browser, stack, "/consumers")
    rows = table(browser, "groups-table")
    assert {r[0]: r[2] for r in rows}["verify-group-848"] == "consumer · uniform"
    lag = {r[0]: r[6] for r in rows}
    assert lag == {
        "billing": "1,055",
        "events-reader": "0",
        "verify-group": "2,000",
        "verify-group-848": "0",
        "vigia-ingest": "104,555",
    }
    flow = wait_for(browser, lambda: plot(browser, "fig-consumers-flow"), "produced vs consumed")
    assert set(flow) == {
        "produced · measure",
        "consumed · billing · measure",
        "consumed · vigia-ingest · measure",
    }
    # the exporter's lag in seconds: vigia-ingest falls further behind, billing keeps up
    seconds = wait_for(browser, lambda: plot(browser, "fig-consumers-lag-seconds"), "lag (s)")
    unit = browser.execute_script(
        "return document.querySelector('#fig-consumers-lag-seconds .js-plotly-plot')"
        ".layout.yaxis.title.text;"
    )
    assert unit == "minutes"  # vigia-ingest ends 148 s behind
    ingest = [v for v in seconds["vigia-ingest · measure"] if v is not None]
    assert ingest == sorted(ingest) and ingest[-1] > 2
    assert max(v for v in seconds["billing · measure"] if v is not None) < 5 / 60
    assert {r[4] for r in table(browser, "groups-table")} == {"OK"}  # Burrow-style status
    assert_no_console_errors(browser)
    screenshot(browser, "consumers")


def test_ingest_batches_backlog_and_what_is_missing(browser: WebDriver, stack: Stack) -> None:
    open_page(browser, stack, "/ingest")
    rows = wait_for(browser, lambda: plot(browser, "fig-ingest-rows"), "rows per batch")
    assert {v for v in rows["vigia-ingest rows"] if v is not None} <= {12000, 11272}
    assert 11272 in rows["vigia-ingest rows"]  # the last recorded batch
    backlog = plot(browser, "fig-ingest-backlog")
    values = {v for v in backlog["vigia-ingest lag · measure"] if v is not None}
    # the lag of each recording (a coarse step may skip one), ending with rebalanced's
    assert values <= {104555, 134278, 200110, 238558, 295914} and max(values) == 295914
    assert table(browser, "invalid-table")[-1] == ["(valid rows written)", "23,040", "99.00%"]
    assert "vigia_ingest_day_measures" in plot_annotation(browser, "fig-ingest-completeness")
    assert_no_console_errors(browser)
    screenshot(browser, "ingest")


def test_capacity_outlook_and_calculator(browser: WebDriver, stack: Stack) -> None:
    open_page(browser, stack, "/capacity")
    outlook = table(browser, "disk-outlook-table")
    assert [r[0] for r in outlook] == ["1", "2", "3"]
    assert all(r[3].endswith("/day") and r[4] not in ("–", "not growing") for r in outlook)
    wait_for(browser, lambda: text(browser, "sizing-brokers"), "sizing result")

    def value(field: str) -> float:
        raw = browser.find_element(By.ID, f"sizing-{field}").get_attribute("value")
        return float(raw or "nan")

    # healthy is the exporter's first collection (no rates): the rate comes from Prometheus
    assert 1900 < value("target_messages_per_second") < 2100
    assert value("replication_factor") == 3
    target = browser.find_element(By.ID, "sizing-target_messages_per_second")
    target.send_keys(Keys.CONTROL, "a", Keys.DELETE)
    target.send_keys("20000", Keys.TAB)
    expected = math.ceil(20000 / value("per_consumer_messages_per_second"))
    wait_for(
        browser, lambda: text(browser, "sizing-partitions") == str(expected), "new partition count"
    )
    assert_no_console_errors(browser)
    screenshot(browser, "capacity")


def test_filters_are_shared_by_the_pages(browser: WebDriver, stack: Stack) -> None:
    open_page(browser, stack, "/topics")
    try:
        dropdown = browser.find_element(By.CSS_SELECTOR, "#filter-topics input")
        dropdown.send_keys("events", Keys.ENTER)
        wait_for(
            browser,
            lambda: "Partitions (3)" in browser.find_element(By.TAG_NAME, "main").text,
            "topic filter on the topics page",
        )
        browser.find_element(By.ID, "nav-consumers").click()  # client-side: the store stays
        wait_for(
            browser,
            lambda: [r[0] for r in table(browser, "groups-table")] == ["events-reader"],
            "the consumers page filtered to the groups reading events",
        )
        rows = wait_for(
            browser, lambda: grid_column(browser, "group-partitions-table", "group"), "grid"
        )
        assert rows == ["events-reader"] * 3
        assert_no_console_errors(browser)
    finally:  # the next tests expect no filter
        browser.execute_script("window.sessionStorage.clear()")


# ------------------------------------------------------------------ a broker goes down


def test_broker_down_everywhere_with_auto_refresh(browser: WebDriver, stack: Stack) -> None:
    stack.exporter.scenario = "healthy"
    open_page(browser, stack, "/")
    assert lights(browser)["urp"] == ("green", "0")
    stack.exporter.scenario = "broker-down"
    wait_for(  # no reload: the interval refresh picks the change up
        browser, lambda: lights(browser).get("urp") == ("amber", "67"), "auto-refresh", REFRESH * 4
    )
    state = lights(browser)
    assert state["brokers"] == ("red", "2 / 3")
    assert state["under_min_isr"] == ("red", "2")
    assert state["exporter"] == ("green", "up")  # a broker down is a fact, not an exporter failure
    screenshot(browser, "overview-broker-down")

    open_page(browser, stack, "/brokers")
    rows = table(browser, "brokers-table")
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("1", "DOWN", "0"),
        ("2 ★", "up", "35"),
        ("3", "up", "33"),
    ]
    assert "broker down" in text(browser, "log-dirs-table")

    open_page(browser, stack, "/replication")
    assert "Out-of-sync replicas now: 67" in browser.find_element(By.TAG_NAME, "main").text
    assert table(browser, "out-of-sync-per-broker") == [["Out-of-sync replicas", "67", "0", "0"]]
    urp = wait_for(browser, lambda: plot(browser, "fig-replication-urp-history"), "URP history")
    assert max(v for v in urp["under-replicated"] if v is not None) == 67
    assert_no_console_errors(browser)
    screenshot(browser, "replication-broker-down")
    stack.exporter.scenario = "healthy"


# ------------------------------------------------------------------ backends go away (last)


def test_unreachable_backends_get_a_banner_and_the_page_stays(
    browser: WebDriver, stack: Stack
) -> None:
    stack.exporter.stop()
    open_page(browser, stack, "/")
    wait_for(browser, lambda: "Exporter unreachable" in text(browser, "banner-exporter"), "banner")
    assert "connection refused" in text(browser, "banner-exporter")
    assert lights(browser)["brokers"] == ("grey", "?")
    assert lights(browser)["exporter"] == ("red", "unreachable")
    # Prometheus still draws the history
    wait_for(browser, lambda: plot(browser, "fig-overview-throughput"), "throughput chart")
    screenshot(browser, "overview-exporter-down")

    stack.alertmanager.stop()
    stack.prometheus.stop()
    open_page(browser, stack, "/brokers")
    for backend in ("prometheus", "exporter", "alertmanager"):
        wait_for(browser, lambda b=backend: text(browser, f"banner-{b}"), f"{backend} banner")
    assert "Prometheus unreachable (connection refused)" in text(browser, "banner-prometheus")
    wait_for(browser, lambda: "no data" in plot_annotation(browser, "fig-brokers-cpu"), "no data")
    assert "alerts: ?" in text(browser, "status-line")
    assert_no_console_errors(browser)
    screenshot(browser, "brokers-all-backends-down")
