"""Which scrape job each alert's data comes from (pure: reads the repository's files).

An alert reads the metric names in its PromQL (tests/monitoring/promql.py), through the recording
rules of prometheus/rules/recording.yml. Each name is exposed by one job of
prometheus/prometheus.yml: docs/metrics.md lists what the exporter, the ingest job and the
simulator serve (each component's tests hold its code to that list) and what the Connect worker's
JMX agent serves; the other jobs are third-party exporters named by their prefix. `up` is no job's
own metric: Prometheus writes it for every target, so it outlives the target (0 when it is down)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.metrics_doc import DOC
from tests.monitoring.promql import metric_name, selectors
from vigia.common.slo.spec import parse

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = REPO / "prometheus"
RULE_FILES = sorted((PROMETHEUS_DIR / "rules").glob("*.yml"))

EXPORTER = "vigia-exporter"
SCRAPE = "prometheus (scrape)"  # series Prometheus writes itself for every target
# docs/metrics.md's sections -> the job that serves their tables; an unknown section fails.
SECTIONS = {
    "How values are collected": EXPORTER,
    "Kafka cluster state": EXPORTER,
    "Series budget": EXPORTER,
    "Lag in seconds and lag status": EXPORTER,
    "Retention: ahead of the loss": EXPORTER,
    "ISR history": EXPORTER,
    "Replication and end-to-end probe": EXPORTER,
    "Kafka Connect (`--connect-url`)": EXPORTER,
    "From the worker's JMX agent (scraped by Prometheus, not by the exporter)": "kafka-connect",
    "Exporter health": EXPORTER,
    "The HES leg: source watch and hop freshness (`vigia-exporter --hes-dsn`)": EXPORTER,
    "Ingest job (`vigia-ingest run`, `/metrics` on 9310)": "vigia-ingest",
    "Simulator (`vigia-simulate`, `/metrics` on 9311)": "vigia-simulator",
    "Notes on meaning": "",
}
# Third-party exporters, by the prefix of what they serve.
PREFIXES = {
    "kafka_server_": "kafka-jmx",
    "kafka_controller_": "kafka-jmx",
    "kafka_network_": "kafka-jmx",
    "kafka_log_": "kafka-jmx",
    "mysql_": "hes-mysqld",
    "prometheus_": "prometheus",
    "alertmanager_": "alertmanager",
}
_TYPES = "counter|gauge|histogram|summary|info"
_ROW = re.compile(rf"^\| `(?P<name>[a-z_:]+)(?:\{{[^`]*\}})?` \|(?: (?P<type>{_TYPES}) \|)?")
_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


@cache
def documented_jobs() -> dict[str, frozenset[str]]:
    """Metric name (as PromQL reads it) -> jobs serving it, from docs/metrics.md's tables."""
    jobs: dict[str, set[str]] = {}
    section: str | None = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^(##|###) (.+)$", line)
        if heading:
            title = heading.group(2)
            if heading.group(1) == "##" or title in SECTIONS:
                if title not in SECTIONS:
                    raise AssertionError(f"docs/metrics.md: which job serves section {title!r}?")
                section = SECTIONS[title]
            continue
        row = _ROW.match(line)
        if row and section:
            for suffix in _SUFFIXES.get(row["type"] or "", ("",)):
                jobs.setdefault(row["name"] + suffix, set()).add(section)
    return {name: frozenset(j) for name, j in jobs.items()}


@cache
def slo_jobs() -> dict[str, frozenset[str]]:
    """Metric name -> job, for the SLIs of prometheus/slo/slos.yml: each SLO names the job that
    serves its events (the `up` selector the generator checks them against)."""
    jobs: dict[str, frozenset[str]] = {}
    for slo in parse(yaml.safe_load_all((PROMETHEUS_DIR / "slo" / "slos.yml").read_text())):
        found = re.search(r'job="([^"]+)"', slo.up)
        assert found, f"{slo.name}: {slo.up} names no job"
        for selector in (slo.good, slo.total):
            jobs[metric_name(selector) or ""] = frozenset({found.group(1)})
    return jobs


def jobs_of_metric(name: str, matchers: str = "") -> frozenset[str]:
    if name == "up":
        return frozenset({SCRAPE})
    if name in documented_jobs():
        return documented_jobs()[name]
    if name in slo_jobs():
        return slo_jobs()[name]
    for prefix, job in PREFIXES.items():
        if name.startswith(prefix):
            return frozenset({job})
    raise AssertionError(f"no job is known to serve {name}{matchers}")


@cache
def rules() -> list[dict[str, Any]]:
    return [
        rule
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
    ]


@cache
def recorded() -> dict[str, str]:
    return {r["record"]: r["expr"] for r in rules() if "record" in r}


@cache
def alerts() -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for r in rules() if "alert" in r}


@cache
def jobs_read(expr: str) -> frozenset[str]:
    """Every job whose series `expr` reads, through recording rules."""
    found: set[str] = set()
    for selector in selectors(expr):
        name = metric_name(selector)
        assert name, f"a selector without a metric name: {selector}"
        if name in recorded():
            found |= jobs_read(recorded()[name])
        else:
            found |= jobs_of_metric(name, selector[len(name) :])
    return frozenset(found)


def scrape_jobs() -> set[str]:
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    return {job["job_name"] for job in config["scrape_configs"]}
