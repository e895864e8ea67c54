"""Vigía dropped into a Prometheus and Alertmanager an operator already runs, the documented way
(docs/prometheus-drop-in.md): `vigia-stack --drop-in DIR`, then DIR's pieces merged into
configurations that have their own jobs, rules, routes and inhibitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import free_port
from tests.monitoring.servers import PROMETHEUS_DIR, rules_firing_at_once
from tests.monitoring.test_alert_links import EVERY
from tests.servers import AMTOOL, run, start_prometheus, wait_until
from vigia.dashboard.pages import PAGE_BY_PATH
from vigia.launcher import cli, drop_in

ON_CALL = "https://vigia.example.org"
CLUSTER = "production"
OPERATORS_RULES = {
    "groups": [
        {
            "name": "their-team",
            "rules": [
                {
                    "alert": "TheirAppDown",
                    "expr": 'up{job="their-app"} == 0',
                    "labels": {"severity": "critical", "team": "apps"},
                }
            ],
        }
    ]
}


def test_every_vigia_alert_carries_the_label_its_route_matches() -> None:
    for _, rule in EVERY:
        assert rule["labels"].get("product") == "vigia", rule["alert"]


def test_the_drop_in_needs_the_console_url(tmp_path: Path) -> None:
    assert cli.main(["--drop-in", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()


def test_vigias_inhibitions_are_confined_to_vigias_alerts() -> None:
    ours = yaml.safe_load((PROMETHEUS_DIR / "alertmanager.yml").read_text())
    pieces = drop_in.alertmanager_route(ours)
    assert len(pieces["inhibit_rules"]) == len(ours["inhibit_rules"])
    for rule in pieces["inhibit_rules"]:
        assert drop_in.PRODUCT_MATCHER in rule["source_matchers"], rule
        assert drop_in.PRODUCT_MATCHER in rule["target_matchers"], rule
    names = {r["name"] for r in pieces["receivers"]}
    assert names == {"vigia-" + r["name"] for r in ours["receivers"]}

    def receivers(route: dict[str, Any]) -> set[str]:
        return {route["receiver"]}.union(*(receivers(r) for r in route.get("routes", [])))

    assert receivers(pieces["route"]["routes"][0]) <= names


def _drop_in(out: Path) -> Path:
    argv = ["--drop-in", str(out), "--console-url", ON_CALL + "/", "--cluster", CLUSTER]
    assert cli.main(argv) == 0
    return out


def _operators_prometheus(tmp_path: Path, pieces: Path) -> Path:
    """The operator's own configuration, with Vigía's pieces added as the guide says. Every
    target refuses connections, and Vigía's rules fire without waiting for their `for:`."""
    closed = f"127.0.0.1:{free_port()}"
    (tmp_path / "their-rules.yml").write_text(yaml.safe_dump(OPERATORS_RULES))
    vigia_rules = rules_firing_at_once(sorted((pieces / "rules").glob("*.yml")), tmp_path)
    jobs = yaml.safe_load((pieces / "scrape-configs.yml").read_text())["scrape_configs"]
    for job in jobs:
        for sd in job["file_sd_configs"]:
            for targets in sd["files"]:
                Path(targets).write_text(json.dumps([{"targets": [closed]}]))
    labels = yaml.safe_load((pieces / "external-labels.yml").read_text())
    config = {
        "global": {
            "scrape_interval": "1s",
            "evaluation_interval": "1s",
            "external_labels": {"site": "lab", **labels["global"]["external_labels"]},
        },
        "rule_files": [str(tmp_path / "their-rules.yml"), *vigia_rules],
        "scrape_configs": [
            {"job_name": "their-app", "static_configs": [{"targets": [closed]}]},
            *jobs,
        ],
    }
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.prometheus
def test_an_operators_prometheus_evaluates_vigias_alerts_with_their_links(
    binaries: None, tmp_path: Path
) -> None:
    config = _operators_prometheus(tmp_path, _drop_in(tmp_path / "vigia"))
    server = start_prometheus(config, tmp_path / "data", tmp_path / "prometheus.log")
    try:

        def firing() -> list[dict[str, Any]]:
            alerts = httpx.get(f"{server.url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
            found = [a for a in alerts if a["state"] == "firing"]
            # Until the first scrape, VigiaExporterDown fires through absent(), without a cluster.
            names = {
                a["labels"]["alertname"]
                for a in found
                if a["labels"]["alertname"] != "VigiaExporterDown" or "cluster" in a["labels"]
            }
            return found if {"VigiaExporterDown", "TheirAppDown"} <= names else []

        alerts = wait_until(firing, 60, "VigiaExporterDown and the operator's alert to fire")
    finally:
        server.stop()
    for alert in alerts:
        name, labels = alert["labels"]["alertname"], alert["labels"]
        if name == "TheirAppDown":
            assert "product" not in labels, alert
            continue
        assert labels["product"] == "vigia", name
        assert alert["annotations"]["runbook_url"] == f"{ON_CALL}/runbooks/{name}"
        page = alert["annotations"]["dashboard_url"].removeprefix(ON_CALL) or "/"
        assert page in PAGE_BY_PATH, (name, alert["annotations"]["dashboard_url"])
    # The scrape jobs' relabelling names the operator's cluster on what their targets report.
    down = [
        a["labels"].get("cluster")
        for a in alerts
        if a["labels"]["alertname"] == "VigiaExporterDown"
    ]
    assert CLUSTER in down, down


OPERATORS_ALERTMANAGER = {
    "route": {
        "receiver": "their-default",
        "group_by": ["alertname"],
        "routes": [
            {"matchers": ['alertname="Watchdog"'], "receiver": "their-deadman"},
            {"matchers": ['severity="critical"'], "receiver": "their-oncall"},
        ],
    },
    "inhibit_rules": [
        {
            "source_matchers": ['alertname="TheirMaintenance"'],
            "target_matchers": ['team="apps"'],
            "equal": ["site"],
        }
    ],
    "receivers": [
        {"name": name, "webhook_configs": [{"url": f"http://{name}.example.invalid/"}]}
        for name in ("their-default", "their-deadman", "their-oncall")
    ],
}


def _merged_alertmanager(pieces: dict[str, Any]) -> dict[str, Any]:
    """As the guide says: the route first under the root, inhibitions and receivers appended."""
    merged = json.loads(json.dumps(OPERATORS_ALERTMANAGER))
    merged["route"]["routes"][:0] = pieces["route"]["routes"]
    merged["inhibit_rules"] += pieces["inhibit_rules"]
    merged["receivers"] += pieces["receivers"]
    return merged


@pytest.mark.prometheus
@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        ("product=vigia alertname=IngestQueryDown severity=critical", "vigia-pager"),
        ("product=vigia alertname=VigiaExporterDown severity=warning", "vigia-ticket"),
        ("product=vigia alertname=Watchdog severity=none", "vigia-heartbeat"),
        ("product=vigia alertname=KafkaTopicInfo severity=info", "vigia-blackhole"),
        ("alertname=Watchdog severity=none", "their-deadman"),
        ("alertname=KafkaBrokerDown severity=critical", "their-oncall"),
        ("alertname=Something team=apps", "their-default"),
    ],
)  # fmt: skip
def test_vigias_route_inside_an_operators_tree(
    binaries: None, tmp_path: Path, labels: str, receiver: str
) -> None:
    pieces = yaml.safe_load((_drop_in(tmp_path / "vigia") / "alertmanager.yml").read_text())
    config = tmp_path / "alertmanager.yml"
    config.write_text(yaml.safe_dump(_merged_alertmanager(pieces), sort_keys=False))
    assert AMTOOL is not None
    checked = run([AMTOOL, "check-config", str(config)])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    routed = run(
        [AMTOOL, "config", "routes", "test", f"--config.file={config}",
         f"--verify.receivers={receiver}", *labels.split()]
    )  # fmt: skip
    assert routed.returncode == 0, routed.stdout + routed.stderr
