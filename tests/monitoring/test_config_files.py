"""The configuration files as the real tools see them: promtool, amtool, the render script."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.monitoring.servers import PROMETHEUS_DIR, REPO
from tests.servers import AMTOOL, MISSING, PROMTOOL, run

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"),
]

RENDER = PROMETHEUS_DIR / "render-alertmanager-config.sh"
RULE_FILES = sorted((PROMETHEUS_DIR / "rules").glob("*.yml"))
RECORDING_FILES = [PROMETHEUS_DIR / "rules" / name for name in ("recording.yml", "slo.yml")]
RECORDING_RULES = [
    r
    for path in RECORDING_FILES
    for g in yaml.safe_load(path.read_text())["groups"]
    for r in g["rules"]
    if "record" in r
]
ALERT_RULES = [
    r
    for path in RULE_FILES
    for g in yaml.safe_load(path.read_text())["groups"]
    for r in g["rules"]
    if "alert" in r
]
ALERT_NAMES = [r["alert"] for r in ALERT_RULES]
# The heartbeat (prometheus/rules/watchdog.yml): always firing, no cluster, severity none.
HEARTBEAT = "Watchdog"


def test_promtool_check_config_and_rules() -> None:
    assert PROMTOOL is not None
    result = run([PROMTOOL, "check", "config", str(PROMETHEUS_DIR / "prometheus.yml")])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(RULE_FILES)} rule files found" in result.stdout
    result = run([PROMTOOL, "check", "rules", *map(str, RULE_FILES)])
    assert result.returncode == 0, result.stdout + result.stderr
    found = sum(int(n) for n in re.findall(r"SUCCESS: (\d+) rules found", result.stdout))
    assert found == len(ALERT_RULES) + len(RECORDING_RULES)


def test_promtool_unit_tests_pass() -> None:
    """prometheus/tests/*.yml: every alert fires with its labels and annotations, blips do not."""
    assert PROMTOOL is not None
    tests = sorted((PROMETHEUS_DIR / "tests").glob("*.yml"))
    result = run([PROMTOOL, "test", "rules", *map(str, tests)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(tests)


def test_the_demo_alert_has_its_promtool_tests() -> None:
    """launcher/demo-rules.yml is loaded beside the production rules by `vigia-stack --demo`."""
    assert PROMTOOL is not None
    tests = REPO / "launcher" / "demo-rules_test.yml"
    result = run([PROMTOOL, "test", "rules", str(tests)])
    assert result.returncode == 0, result.stdout + result.stderr
    rules = yaml.safe_load((REPO / "launcher" / "demo-rules.yml").read_text())["groups"]
    alerts = {r["alert"] for g in rules for r in g["rules"] if "alert" in r}
    cases = [c for t in yaml.safe_load(tests.read_text())["tests"] for c in t["alert_rule_test"]]
    assert alerts == {c["alertname"] for c in cases if c["exp_alerts"]}
    assert alerts == {c["alertname"] for c in cases if not c["exp_alerts"]}


def test_every_alert_has_a_firing_and_a_quiet_unit_test() -> None:
    fires, quiet = set(), set()
    for path in sorted((PROMETHEUS_DIR / "tests").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["tests"]:
            by_alert: dict[str, list[list[object]]] = {}
            for case in group.get("alert_rule_test", []):
                by_alert.setdefault(case["alertname"], []).append(case.get("exp_alerts") or [])
            for name, expectations in by_alert.items():
                if any(expectations):
                    fires.add(name)
                    for alert in (a for e in expectations for a in e):
                        labels = alert["exp_labels"]
                        severities = ("none",) if name == HEARTBEAT else ("critical", "warning")
                        assert labels["severity"] in severities, (name, labels)
                        assert set(alert["exp_annotations"]) == {
                            "summary", "description", "runbook_url", "dashboard_url",
                        }  # fmt: skip
                else:
                    quiet.add(name)
    assert fires == set(ALERT_NAMES), set(ALERT_NAMES) ^ fires
    # The heartbeat is never quiet: its tests show it firing from the first evaluation on.
    assert quiet == set(ALERT_NAMES) - {HEARTBEAT}, set(ALERT_NAMES) ^ quiet


def test_alerts_are_complete_and_consistent() -> None:
    """Links: tests/monitoring/test_alert_links.py."""
    assert len(ALERT_NAMES) == len(set(ALERT_NAMES))
    for rule in ALERT_RULES:
        name = rule["alert"]
        if name == HEARTBEAT:  # fires at once, forever, about this Prometheus, never pages
            assert rule["expr"].strip() == "vector(1)" and "for" not in rule, rule
            assert rule["labels"] == {
                "product": "vigia",
                "severity": "none",
                "source": "monitoring",
            }, rule
            continue
        assert re.fullmatch(r"\d+[mh]", rule["for"]), (name, "needs a for: of minutes or hours")
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        assert rule["labels"]["source"] in ("exporter", "ingest", "monitoring", "connect"), name
        notes = rule["annotations"]
        assert "{{ $labels.cluster }}" in notes["summary"], name
        assert (
            "$value" in notes["summary"] + notes["description"] or "$labels" in notes["description"]
        ), name
    runbooks = {p.stem for p in (REPO / "docs" / "runbooks").glob("*.md")} - {"README"}
    assert runbooks == set(ALERT_NAMES), runbooks ^ set(ALERT_NAMES)


def test_recording_rules_follow_level_metric_operations_and_are_used() -> None:
    alerts = [yaml.safe_dump(r) for r in ALERT_RULES]
    boards = [p.read_text() for p in (REPO / "grafana" / "dashboards").glob("*.json")]
    used = "".join(alerts + boards)
    for rule in RECORDING_RULES:
        name = rule["record"]
        assert re.fullmatch(r"[a-z_]+:[a-z_]+:[a-z0-9_]+", name), name
        assert "cluster" in rule["expr"] or "by (" not in rule["expr"], (name, "keeps cluster")
        assert name in used, f"{name} is used by no board and no alert"


def test_jmx_exporter_rules_are_the_ones_the_fixtures_were_scraped_with() -> None:
    ours = yaml.safe_load((PROMETHEUS_DIR / "jmx-kafka.yml").read_text())
    recorded = yaml.safe_load(
        (REPO / "tests" / "fixtures" / "kafka-4.0-3node" / "jmx-kafka.yml").read_text()
    )
    assert ours == recorded


def render(tmp_path: Path, **files: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIGIA_ALERTMANAGER_")}
    for receiver, content in files.items():
        path = tmp_path / f"{receiver}-url"
        path.write_text(content)
        env[f"VIGIA_ALERTMANAGER_{receiver.upper()}_URL_FILE"] = str(path)
    return subprocess.run(
        ["sh", str(RENDER), str(PROMETHEUS_DIR / "alertmanager.yml"), str(tmp_path / "am.yml")],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_amtool_accepts_the_committed_and_the_rendered_config(tmp_path: Path) -> None:
    assert AMTOOL is not None
    result = run([AMTOOL, "check-config", str(PROMETHEUS_DIR / "alertmanager.yml")])
    assert result.returncode == 0, result.stdout + result.stderr
    pager = "https://events.example.com/v1/page?routing=a&b=c%20d|e"
    rendered = render(
        tmp_path,
        pager=pager + "\n",
        ticket="http://tickets.internal:8080/hook",
        heartbeat="https://hc-ping.example.com/0f1e2d3c",
    )
    assert rendered.returncode == 0, rendered.stderr
    config = yaml.safe_load((tmp_path / "am.yml").read_text())
    urls = {
        r["name"]: [w["url"] for w in r.get("webhook_configs", [])] for r in config["receivers"]
    }
    assert urls == {
        "pager": [pager],
        "ticket": ["http://tickets.internal:8080/hook"],
        "heartbeat": ["https://hc-ping.example.com/0f1e2d3c"],
        "blackhole": [],
    }
    result = run([AMTOOL, "check-config", str(tmp_path / "am.yml")])
    assert result.returncode == 0, result.stdout + result.stderr


def test_render_keeps_placeholders_without_files_and_rejects_bad_urls(tmp_path: Path) -> None:
    result = render(tmp_path)
    assert result.returncode == 0
    assert "VIGIA_ALERTMANAGER_PAGER_URL_FILE is not set" in result.stderr
    assert "VIGIA_ALERTMANAGER_HEARTBEAT_URL_FILE is not set" in result.stderr
    assert (tmp_path / "am.yml").read_text() == (PROMETHEUS_DIR / "alertmanager.yml").read_text()
    for bad in ("ftp://example.com/", 'http://example.com/"x', ""):
        result = render(tmp_path, pager=bad)
        assert result.returncode == 2, (bad, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        ("severity=critical alertname=KafkaOfflinePartitions", "pager"),
        ("severity=warning alertname=KafkaUnderReplicatedPartitions", "ticket"),
        ("severity=info alertname=Something", "blackhole"),
        ("alertname=NoSeverity", "ticket"),
        ("alertname=Watchdog severity=none source=monitoring env=dev", "heartbeat"),
        # Whatever labels it gets: the heartbeat route comes first.
        ("alertname=Watchdog severity=critical", "heartbeat"),
    ],
)
def test_routing(labels: str, receiver: str) -> None:
    assert AMTOOL is not None
    result = run(
        [AMTOOL, "config", "routes", "test",
         f"--config.file={PROMETHEUS_DIR / 'alertmanager.yml'}", *labels.split()]
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == receiver


def test_inhibitions_name_real_alerts_and_labels() -> None:
    config = yaml.safe_load((PROMETHEUS_DIR / "alertmanager.yml").read_text())
    labels_of = {r["alert"]: set(r["labels"]) | {"cluster"} for r in ALERT_RULES}
    for rule in config["inhibit_rules"]:
        for matcher in rule["source_matchers"] + rule["target_matchers"]:
            label, op, value = re.fullmatch(r'(\w+)(=~|=)"(.*)"', matcher).groups()  # type: ignore[union-attr]
            if label == "alertname":
                names = value.split("|") if op == "=~" else [value]
                assert set(names) <= set(ALERT_NAMES), names
        sources = [
            n for n in ALERT_NAMES
            if any(m == f'alertname="{n}"' for m in rule["source_matchers"])
        ]  # fmt: skip
        for name in sources:
            expr = next(r["expr"] for r in ALERT_RULES if r["alert"] == name)
            for label in rule["equal"]:
                assert label in labels_of[name] or label in expr, (name, label)
