"""One Dash app over two real Kafka clusters, in headless Chromium.

Two single-node KRaft clusters from the harness (`prod` and `dr`), a real vigia-exporter on each,
a real Prometheus scraping both as prometheus/examples/two-clusters.yml does (targets swapped for
these), a real Alertmanager with one alert per cluster, and the real `vigia-dashboard` CLI with
`--cluster prod=… --cluster dr=…`. Each page shows the chosen cluster only; stopping `dr`'s broker
shows on `dr`'s pages, while `prod`'s stay healthy.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import free_port
from tests.dashboard.backends import RealAlertmanager, start_dashboard
from tests.dashboard.test_dashboard_browser import (  # the module skips when Chromium is missing
    Stack,
    browser,
    lights,
    open_page,
    screenshot,
    wait_for,
)
from tests.realstack.exporters import exporter_argv, running, wait_listening
from tests.realstack.kafka_cluster import KafkaCluster
from tests.realstack.plugin import KAFKA_HOME_ENV, NO_KAFKA
from tests.servers import Server, start_prometheus, wait_until
from vigia.dashboard.clusters import ClusterTarget
from vigia.dashboard.config import DashboardConfig
from vigia.dashboard.data import scalar
from vigia.dashboard.sources import Sources

pytestmark = [
    pytest.mark.integration,  # runs with the real-stack tests, apart from the unit suites
    pytest.mark.browser,
    pytest.mark.prometheus,
    pytest.mark.filterwarnings("ignore:HTTPResponse.getheader:DeprecationWarning"),
]
__all__ = ["browser"]  # the shared Chromium fixture, driven by this module's `stack`

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "prometheus" / "examples" / "two-clusters.yml"
CLUSTERS = ("prod", "dr")
# Each cluster's own topics: 2 partitions in prod, 5 in dr, so their sums tell them apart.
TOPICS = {"prod": ("only-in-prod", 2), "dr": ("only-in-dr", 5)}
STARTED_IN = 240.0  # a single KRaft node and its JVM on a loaded 2-core machine


@dataclass
class Clusters:
    kafka: dict[str, KafkaCluster]
    exporters: dict[str, str]  # name -> base URL
    prometheus: str


def _start_both(kafka: dict[str, KafkaCluster]) -> None:
    """Both single-node clusters at once: the JVMs' start-up is most of the test's time."""
    failures: list[BaseException] = []

    def start(cluster: KafkaCluster) -> None:
        try:
            cluster.start_all(STARTED_IN)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(c,)) for c in kafka.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def _prometheus_config(work: Path, exporters: dict[str, str]) -> Path:
    """The shipped example with these exporters as its targets and a 2 s scrape."""
    config = yaml.safe_load(EXAMPLE.read_text())
    config["global"].update(scrape_interval="2s", scrape_timeout="2s", evaluation_interval="2s")
    config["rule_files"] = [str(REPO / "prometheus" / "rules" / "*.yml")]
    config.pop("alerting")
    jobs = [j for j in config["scrape_configs"] if j["job_name"] == "vigia-exporter"]
    for group in jobs[0]["static_configs"]:
        group["targets"] = [exporters[group["labels"]["cluster"]].removeprefix("http://")]
    config["scrape_configs"] = jobs
    path = work / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    home = os.environ.get(KAFKA_HOME_ENV, "").strip()
    if not home:
        pytest.skip(NO_KAFKA)
    work = tmp_path_factory.mktemp("two-clusters")
    kafka = {name: KafkaCluster(Path(home), work / name, node_ids=(1,)) for name in CLUSTERS}
    exporters = ExitStack()
    prometheus: Server | None = None
    try:
        began = time.monotonic()
        _start_both(kafka)
        print(f"\ntwo single-node clusters up in {time.monotonic() - began:.1f} s", end="")
        urls: dict[str, str] = {}
        for name, cluster in kafka.items():
            _create_topic(cluster.bootstrap, *TOPICS[name])
            port = free_port()
            argv = exporter_argv(
                cluster.bootstrap,
                port,
                "--listen-address=127.0.0.1",
                "--collection-interval=2",
                "--collection-timeout=3",
                "--no-probe",
                f"--cluster={name}",
            )
            exporters.enter_context(running(f"exporter-{name}", argv, work))
            urls[name] = f"http://127.0.0.1:{port}"
        for url in urls.values():
            wait_listening(url)
        prometheus = start_prometheus(
            _prometheus_config(work, urls), work / "tsdb", work / "prometheus.log"
        )
        yield Clusters(kafka, urls, prometheus.url)
    finally:
        if prometheus:
            prometheus.stop()
        exporters.close()
        for cluster in kafka.values():
            cluster.close()


@pytest.fixture(scope="module")
def stack(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("two-clusters-dashboard")
    alertmanager = RealAlertmanager(work)
    dashboard: Server | None = None
    try:
        alertmanager.start()
        for name in CLUSTERS:
            _fire(alertmanager.url, f"TestAlertOf{name.capitalize()}", name)
        flags = [f"--cluster={name}={url}" for name, url in clusters.exporters.items()]
        dashboard = start_dashboard(
            work, clusters.prometheus, "", alertmanager.url, "--refresh-interval=2", *flags
        )
        yield Stack(None, None, alertmanager, dashboard, dashboard.url)  # type: ignore[arg-type]
    finally:
        if dashboard:
            dashboard.stop()
        alertmanager.stop()


def _fire(url: str, name: str, cluster: str) -> None:
    alert = {"labels": {"alertname": name, "severity": "warning", "cluster": cluster}}
    httpx.post(f"{url}/api/v2/alerts", json=[alert], timeout=5).raise_for_status()


def _page_text(driver: Any) -> str:
    return str(driver.execute_script("return document.getElementById('page-body').innerText"))


def _chosen(driver: Any) -> str:
    return str(
        driver.execute_script(
            "const v = document.querySelector('#cluster .Select-value-label, #cluster');"
            "return location.search + '|' + (v ? v.innerText : '');"
        )
    )


def test_each_cluster_shows_its_own_topics_series_and_alerts(
    browser: Any, stack: Stack, clusters: Clusters
) -> None:
    # Prometheus: the same query, kept to each cluster, counts each one's partitions.
    config = DashboardConfig(
        prometheus_url=clusters.prometheus,
        clusters=tuple(ClusterTarget(n, u) for n, u in clusters.exporters.items()),
    )
    sources = Sources(config)
    query = 'sum(kafka_topic_partitions{topic=~"only-in-.*"})'
    for target in config.targets:
        scoped = sources.scoped(target)
        expected = float(TOPICS[target.name][1])
        wait_until(
            lambda s=scoped, e=expected: scalar(s.instant(query)) == e, 60, f"{target.name} sum"
        )
    sources.close()

    for name, url in clusters.exporters.items():  # each exporter says which cluster it watches
        assert httpx.get(f"{url}/api/v1/cluster", timeout=5).json()["cluster"]["name"] == name
    for name, other in (("prod", "dr"), ("dr", "prod")):
        open_page(browser, stack, f"/topics?cluster={name}")
        wait_for(browser, lambda n=name: TOPICS[n][0] in _page_text(browser), f"{name}'s topic")
        assert TOPICS[other][0] not in _page_text(browser)
        assert f"?cluster={name}|" in _chosen(browser) and name in _chosen(browser)
        assert not browser.find_elements("id", "banner-cluster")
        # The navigation keeps the choice: the Overview lists this cluster's alert only.
        browser.find_element("id", "nav-overview").click()
        alert = f"TestAlertOf{name.capitalize()}"
        wait_for(browser, lambda a=alert: a in _page_text(browser), f"{name}'s alert", 30)
        assert f"TestAlertOf{other.capitalize()}" not in _page_text(browser)
        assert browser.current_url.endswith(f"/?cluster={name}")
    # No choice in the URL: the first cluster, written into it.
    open_page(browser, stack, "/brokers")
    wait_for(browser, lambda: "?cluster=prod|" in _chosen(browser), "the first cluster chosen")
    screenshot(browser, "clusters-prod-brokers")


def test_an_outage_in_one_cluster_is_attributed_to_it(
    browser: Any, stack: Stack, clusters: Clusters
) -> None:
    began = time.monotonic()
    clusters.kafka["dr"].stop(1)

    def exporter_up(name: str) -> bool:
        return bool(httpx.get(f"{clusters.exporters[name]}/api/v1/cluster", timeout=5).json()["up"])

    wait_until(lambda: not exporter_up("dr"), 60, "dr's exporter reporting the outage")
    assert exporter_up("prod")
    open_page(browser, stack, "/?cluster=dr")
    down = wait_for(
        browser,
        lambda: (
            lights(browser).get("exporter", ("", ""))[0] in ("amber", "red")
            and lights(browser)["exporter"]
        ),
        "dr's outage on its Overview",
        60,
    )
    screenshot(browser, "clusters-dr-down")
    open_page(browser, stack, "/?cluster=prod")
    healthy = wait_for(
        browser,
        lambda: lights(browser).get("exporter", ("", ""))[0] == "green" and lights(browser),
        "prod healthy",
        30,
    )
    assert healthy["exporter"] == ("green", "up"), (down, healthy)
    assert healthy["offline"] == ("green", "0"), healthy
    assert "unreachable" not in _page_text(browser).lower()
    print(f"\noutage seen on dr's page {time.monotonic() - began:.1f} s after the stop", end="")
