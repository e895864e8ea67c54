"""docs/metrics.md lists exactly the families the exporter serves, with their types and labels."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from prometheus_client.parser import text_string_to_metric_families

from exporter.collectors import render
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


def served() -> dict[str, tuple[str, frozenset[str]]]:
    """Every family from every recorded scenario, plus a collection with phase timings."""
    timed = replace(
        snapshot("healthy"), durations=MappingProxyType({"metadata": 0.1, "total": 0.5})
    )
    texts = [render(state(s)) for s in SCENARIOS] + [render(derive(None, timed)), render(None)]
    families: dict[str, tuple[str, set[str]]] = {}
    for text in texts:
        for f in text_string_to_metric_families(text):
            name = f"{f.name}_total" if f.type == "counter" else f.name
            _, labels = families.setdefault(name, (f.type, set()))
            for s in f.samples:
                labels.update(s.labels)
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
