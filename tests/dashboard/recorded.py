"""The shared Kafka 4.0 recordings as the exporter serves them (via `exporter.recording.replay`),
the brokers' JMX scrapes and the ingest job's recorded progress events (through its real metrics
code), turned into a Prometheus history shifted to recent times.

Plain cached helpers rather than fixtures (tests/dashboard is not a package; a conftest here could
clash with other suites' conftest modules).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import KAFKA_FIXTURES, SCENARIOS
from vigia.exporter.recording import Replayed, replay
from vigia.ingest.metrics import BatchWritten, IngestMetrics, sample_from_progress

# Progress events recorded from a real run of the ingest job (two batches of a backlog).
INGEST_PROGRESS = Path(__file__).parents[1] / "ingest" / "fixtures" / "progress-backlog.json"

# Seconds between each scenario's `collected_at` and the end of each broker's JMX scrape
# (fixtures README, "Rates from healthy → healthy-later"); broker 1 was stopped in broker-down.
JMX_SCRAPE_DELAY: dict[str, dict[int, float]] = {
    "healthy": {1: 1.84, 2: 2.38, 3: 2.91},
    "healthy-later": {1: 1.05, 2: 1.49, 3: 1.88},
    "broker-down": {2: 0.39, 3: 0.68},
    "broker-back-imbalanced": {1: 2.33, 2: 2.82, 3: 3.32},
    "rebalanced": {1: 0.85, 2: 1.29, 3: 1.80},
}
CLUSTER_LABEL = "smartmeter"  # what prometheus/prometheus.yml puts on every target


@cache
def replayed() -> dict[str, Replayed]:
    """Every scenario after the ones before it, as a running exporter would have served them."""
    items = replay([KAFKA_FIXTURES / f"{s}.json" for s in SCENARIOS])
    return dict(zip(SCENARIOS, items, strict=True))


def cluster_json(scenario: str, collected_at: float | None = None) -> dict[str, Any]:
    """A deep copy of the scenario's /api/v1/cluster, optionally re-stamped to a recent time."""
    data = copy.deepcopy(replayed()[scenario].cluster_json)
    if collected_at is not None:
        data["collected_at"] = collected_at
    return data


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _lines(text: str, extra: dict[str, str], timestamp: float) -> list[str]:
    out = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = {**sample.labels, **extra}
            rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            value = "NaN" if math.isnan(sample.value) else repr(float(sample.value))
            out.append(f"{sample.name}{{{rendered}}} {value} {timestamp:.3f}")
    return out


def ingest_expositions(end: float) -> list[tuple[float, str]]:
    """(time, /metrics text) of the ingest job after each recorded progress event, fed through the
    job's real `IngestMetrics`; times (and the measures' timestamps, so freshness keeps its
    recorded value) are moved so that the last event happens at `end`."""
    events = json.loads(INGEST_PROGRESS.read_text(encoding="utf-8"))
    last = sample_from_progress(events[-1]).timestamp
    metrics = IngestMetrics("vigia-ingest")
    registry = CollectorRegistry()
    registry.register(metrics)
    metrics.query_started()
    out = []
    for event in events:
        sample = sample_from_progress(event)
        at = sample.timestamp - last + end
        event = copy.deepcopy(event)
        event["timestamp"] = dt.datetime.fromtimestamp(at, dt.UTC).isoformat()
        observed = event["observedMetrics"]["vigia_ingest"]
        observed["newest_ts_seconds"] += at - sample.timestamp
        metrics.progress(sample_from_progress(event))
        # The sink's own report is not in the recording; its valid-row count is the one the job
        # observed in the same batch (the simulator sends no duplicates).
        metrics.batch_written(BatchWritten(sample.batch_id, observed["valid"], 0))
        out.append((at, generate_latest(registry).decode()))
    return out


def openmetrics_history(shift: float) -> str:
    """OpenMetrics text of every exporter exposition, JMX scrape and ingest scrape, timestamps
    moved by `shift` (the ingest batches end with the last recording).

    Labels are the ones Prometheus would add with prometheus/prometheus.yml: job, instance,
    cluster, and `broker` on the JMX targets (from targets/kafka-jmx.json).
    """
    lines: list[str] = []
    for scenario, item in replayed().items():
        at = item.collected_at + shift
        exporter_labels = {
            "job": "vigia-exporter",
            "instance": "127.0.0.1:9308",
            "cluster": CLUSTER_LABEL,
        }
        lines += _lines(item.exposition, exporter_labels, at)
        for broker, delay in JMX_SCRAPE_DELAY[scenario].items():
            path = KAFKA_FIXTURES / f"{scenario}.jmx-broker-{broker}.prom"
            jmx_labels = {
                "job": "kafka-jmx",
                "instance": f"127.0.0.1:1{broker}404",
                "broker": str(broker),
                "cluster": CLUSTER_LABEL,
            }
            lines += _lines(path.read_text(encoding="utf-8"), jmx_labels, at + delay)
    _, last = time_span()
    ingest_labels = {"job": "vigia-ingest", "instance": "127.0.0.1:9310", "cluster": CLUSTER_LABEL}
    for at, text in ingest_expositions(last + shift):
        lines += _lines(text, ingest_labels, at)
    return "\n".join(lines) + "\n# EOF\n"


def time_span() -> tuple[float, float]:
    """(first, last) collected_at of the recordings."""
    stamps = [r.collected_at for r in replayed().values()]
    return min(stamps), max(stamps)
