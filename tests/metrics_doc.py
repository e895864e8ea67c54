"""docs/metrics.md is the metric contract: each component's tests compare what it serves with it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

DOC = Path(__file__).parents[1] / "docs" / "metrics.md"
_ROW = re.compile(r"^\| `(?P<name>[a-z_:]+)` \| (?P<type>\w+) \| (?P<labels>[^|]+) \|")

# name -> (type, label names)
Families = dict[str, tuple[str, frozenset[str]]]


def documented(prefixes: tuple[str, ...]) -> Families:
    """The table rows of docs/metrics.md whose family name starts with one of `prefixes`."""
    families: Families = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m and m["name"].startswith(prefixes):
            assert m["name"] not in families, f"{m['name']} is listed twice"
            labels = frozenset(re.findall(r"`([a-z_]+)`", m["labels"]))
            families[m["name"]] = (m["type"], labels)
    return families


def served(expositions: Iterable[str]) -> Families:
    """Families in Prometheus text expositions, named as the doc names them (counters `_total`)."""
    families: dict[str, tuple[str, set[str]]] = {}
    for exposition in expositions:
        for f in text_string_to_metric_families(exposition):
            name = f"{f.name}_total" if f.type == "counter" else f.name
            _, labels = families.setdefault(name, (f.type, set()))
            for s in f.samples:
                labels.update(k for k in s.labels if not (f.type == "histogram" and k == "le"))
    return {name: (t, frozenset(labels)) for name, (t, labels) in families.items()}
