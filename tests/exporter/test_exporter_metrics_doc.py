"""docs/metrics.md lists exactly the families the exporter serves, with their types and labels."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from prometheus_client.parser import text_string_to_metric_families

from exporter.collectors import render, render_probe
from exporter.exposition import text
from exporter.probe.collector import ProbeCollector
from exporter.probe.tracker import LatencyTracker, ProbeStats
from exporter.state import derive
from tests.conftest import SCENARIOS
from tests.exporter.recorded import snapshot, state

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"
_ROW = re.compile(r"^\| `(?P<name>[a-z_:]+)` \| (?P<type>\w+) \| (?P<labels>[^|]+) \|")


def documented() -> dict[str, tuple[str, frozenset[str]]]:
    families: dict[str, tuple[str, frozenset[str]]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            assert m["name"] not in families, f"{m['name']} is listed twice"
            labels = frozenset(re.findall(r"`([a-z_]+)`", m["labels"]))
            families[m["name"]] = (m["type"], labels)
    return families


def probe_stats() -> ProbeStats:
    """A probe that measured one round trip through broker 1."""
    tracker = LatencyTracker()
    for acks in ("all", "1"):
        tracker.sent(acks, partition=0, broker=1, acks=acks, round_id=1, at=0.0)
        tracker.delivered(acks, at=0.002)
    tracker.received("all", at=0.01)
    return tracker.stats()


def served() -> dict[str, tuple[str, frozenset[str]]]:
    """Every family from every recorded scenario, a collection with phase timings, and the probe
    both disabled and running."""
    timed = replace(
        snapshot("healthy"), durations=MappingProxyType({"metadata": 0.1, "total": 0.5})
    )
    texts = [render(state(s)) for s in SCENARIOS] + [render(derive(None, timed)), render(None)]
    texts += [render_probe(None), text(ProbeCollector(probe_stats, lambda: "running").collect())]
    families: dict[str, tuple[str, set[str]]] = {}
    for exposition in texts:
        for f in text_string_to_metric_families(exposition):
            name = f"{f.name}_total" if f.type == "counter" else f.name
            _, labels = families.setdefault(name, (f.type, set()))
            for s in f.samples:
                labels.update(k for k in s.labels if not (f.type == "histogram" and k == "le"))
    return {name: (t, frozenset(labels)) for name, (t, labels) in families.items()}


def test_every_served_family_is_documented_and_every_documented_one_served() -> None:
    doc, code = documented(), served()
    assert len(doc) > 30
    assert sorted(code.keys() - doc.keys()) == [], "served but missing from docs/metrics.md"
    assert sorted(doc.keys() - code.keys()) == [], "documented but not served"


def test_documented_types_and_labels_match_the_code() -> None:
    doc, code = documented(), served()
    mismatches = {name: (doc[name], code[name]) for name in doc if doc[name] != code.get(name)}
    assert mismatches == {}
