"""The shared Kafka 4.0 recordings as the exporter serves them (via `exporter.recording.replay`) and
the brokers' JMX scrapes, turned into a Prometheus history shifted to recent times.

Plain cached helpers rather than fixtures (tests/dashboard is not a package; a conftest here could
clash with other suites' conftest modules).
"""

from __future__ import annotations

import copy
import math
from functools import cache
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from exporter.recording import Replayed, replay
from tests.conftest import KAFKA_FIXTURES, SCENARIOS

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


def openmetrics_history(shift: float) -> str:
    """OpenMetrics text of every exporter exposition and JMX scrape, timestamps moved by `shift`.

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
    return "\n".join(lines) + "\n# EOF\n"


def time_span() -> tuple[float, float]:
    """(first, last) collected_at of the recordings."""
    stamps = [r.collected_at for r in replayed().values()]
    return min(stamps), max(stamps)
