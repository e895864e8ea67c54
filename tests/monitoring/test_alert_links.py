"""Every alert's links lead somewhere: runbook_url and dashboard_url are built from the external
label vigia_console_url (the Dash app), and the Dash app serves each runbook and page.

The convention is checked for every alert in every file under prometheus/rules/ (and the demo's
rules), so an alert added anywhere follows it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import free_port
from tests.dashboard.backends import start_dashboard
from tests.monitoring.servers import (
    PROMETHEUS_DIR,
    REPO,
    derived_prometheus_config,
    rules_firing_at_once,
)
from tests.servers import Server, start_prometheus, wait_until
from vigia.dashboard.pages import PAGE_BY_PATH
from vigia.launcher import cli
from vigia.launcher.demo import RULES as DEMO_RULES

CONSOLE = "{{ $externalLabels.vigia_console_url }}"
RUNBOOKS = REPO / "docs" / "runbooks"
RULE_FILES = sorted(PROMETHEUS_DIR.glob("rules/*.yml"))


def alerts(paths: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in paths:
        for group in (yaml.safe_load(path.read_text()) or {}).get("groups") or []:
            found += [(path.name, r) for r in group["rules"] if "alert" in r]
    return found


PRODUCTION = alerts(RULE_FILES)
EVERY = PRODUCTION + alerts([DEMO_RULES])


def test_rule_files_hold_alerts() -> None:
    assert len(PRODUCTION) >= 19, [name for _, r in PRODUCTION for name in [r["alert"]]]


@pytest.mark.parametrize(("file", "rule"), PRODUCTION, ids=[r["alert"] for _, r in PRODUCTION])
def test_production_alert_links_follow_the_convention(file: str, rule: dict[str, Any]) -> None:
    name, notes = rule["alert"], rule.get("annotations") or {}
    assert notes.get("runbook_url") == f"{CONSOLE}/runbooks/{name}", (
        f"{file}: {name}: runbook_url must be {CONSOLE}/runbooks/{name}"
    )
    assert (RUNBOOKS / f"{name}.md").is_file(), f"{file}: {name}: docs/runbooks/{name}.md missing"
    _check_dashboard_url(file, name, notes)


def test_demo_alert_links_lead_to_a_runbook_and_a_page() -> None:
    for file, rule in alerts([DEMO_RULES]):
        notes = rule["annotations"]
        runbook = re.fullmatch(re.escape(CONSOLE) + r"/runbooks/(\w+)", notes["runbook_url"])
        assert runbook and (RUNBOOKS / f"{runbook.group(1)}.md").is_file(), notes["runbook_url"]
        _check_dashboard_url(file, rule["alert"], notes)


def _check_dashboard_url(file: str, name: str, notes: dict[str, str]) -> None:
    url = notes.get("dashboard_url", "")
    assert url.startswith(CONSOLE), f"{file}: {name}: dashboard_url must start with {CONSOLE}"
    page = url.removeprefix(CONSOLE) or "/"
    assert page in PAGE_BY_PATH, f"{file}: {name}: {page} is not a page of the Dash app"


@pytest.fixture(scope="module")
def dash_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Backends that do not answer: the runbooks and pages must not need them.
    dead = f"http://127.0.0.1:{free_port()}"
    server = start_dashboard(tmp_path_factory.mktemp("dash"), dead, dead, dead)
    yield server
    server.stop()


def test_every_link_of_every_alert_opens_on_a_running_dash_app(dash_app: Server) -> None:
    """As Prometheus renders them with vigia_console_url set to the app's address."""
    for _, rule in EVERY:
        for key in ("runbook_url", "dashboard_url"):
            url = rule["annotations"][key].replace(CONSOLE, dash_app.url)
            response = httpx.get(url, timeout=10)
            assert response.status_code == 200, (rule["alert"], key, url)
        runbook = httpx.get(rule["annotations"]["runbook_url"].replace(CONSOLE, dash_app.url))
        assert "<h1>" in runbook.text and "What to do" in runbook.text, rule["alert"]


def test_runbook_index_links_every_runbook_and_unknown_names_are_404(dash_app: Server) -> None:
    index = httpx.get(f"{dash_app.url}/runbooks/", timeout=10)
    assert index.status_code == 200
    for _, rule in PRODUCTION:
        link = f'href="{rule["alert"]}.md"'
        assert link in index.text, rule["alert"]
        assert httpx.get(f"{dash_app.url}/runbooks/{rule['alert']}.md").status_code == 200
    for bad in ("NoSuchAlert", "Bad-Name", "README.md.md", "a.b"):
        assert httpx.get(f"{dash_app.url}/runbooks/{bad}", timeout=10).status_code == 404, bad


def test_the_runbooks_ship_with_the_dashboard_package() -> None:
    """An installed Dash app (wheel, Docker image) finds them without the repository."""
    link = REPO / "dashboard" / "runbooks"
    assert link.is_symlink() and link.resolve() == RUNBOOKS.resolve()
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^"vigia\.dashboard" = \["runbooks/\*\.md"\]$', pyproject, re.M)
    dockerfile = (REPO / "docker" / "vigia" / "Dockerfile").read_text()
    assert "COPY docs/runbooks ./docs/runbooks" in dockerfile
    ignore = (REPO / "docker" / "vigia" / "Dockerfile.dockerignore").read_text()
    assert "!docs/runbooks/**" in ignore.splitlines()


# ------------------------------------------------ a real Prometheus renders the links

ON_CALL = "https://vigia.example.org"


def _compose_config(out: Path) -> Path:
    """The repository's prometheus.yml, with its `${VIGIA_CONSOLE_URL}` left for Prometheus."""
    return derived_prometheus_config(
        out, {}, [Path(p) for p in rules_firing_at_once(RULE_FILES, out)]
    )


def _vigia_stack_config(out: Path) -> Path:
    """What `vigia-stack --listen-address 0.0.0.0 --console-url ...` writes, without scrapes."""
    argv = ["--dry-run", "--run-dir", str(out / "run"), "--only", "prometheus"]
    argv += ["--prometheus-binary", "/usr/bin/prometheus", "--listen-address", "0.0.0.0"]
    assert cli.main([*argv, "--console-url", ON_CALL + "/"]) == 0
    path = out / "run" / "prometheus" / "prometheus.yml"
    config = yaml.safe_load(path.read_text())
    config["global"].update({"evaluation_interval": "1s"})
    config["scrape_configs"] = []  # alerts on absent targets are enough
    config["rule_files"] = rules_firing_at_once(RULE_FILES, out)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.prometheus
@pytest.mark.parametrize(
    ("deployment", "config", "environment"),
    [
        # compose: the label comes from the environment compose gives Prometheus
        ("compose", _compose_config, ON_CALL),
        # vigia-stack: the label is written into the config; the environment plays no part
        ("vigia-stack", _vigia_stack_config, "http://127.0.0.1:1"),
    ],
)
def test_prometheus_renders_every_firing_alerts_links_with_the_console_url(
    binaries: None, tmp_path: Path, deployment: str, config: Any, environment: str
) -> None:
    server = start_prometheus(
        config(tmp_path), tmp_path / "data", tmp_path / "prometheus.log", console_url=environment
    )
    try:

        def firing() -> list[dict[str, Any]]:
            alerts = httpx.get(f"{server.url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
            names = {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}
            return alerts if "VigiaExporterDown" in names else []

        alerts = wait_until(firing, 60, "VigiaExporterDown to fire")
    finally:
        server.stop()
    for alert in alerts:
        name, notes = alert["labels"]["alertname"], alert["annotations"]
        assert notes["runbook_url"] == f"{ON_CALL}/runbooks/{name}", deployment
        page = notes["dashboard_url"].removeprefix(ON_CALL) or "/"
        assert page in PAGE_BY_PATH, (deployment, notes["dashboard_url"])
