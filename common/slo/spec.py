"""The SLOs of an OpenSLO v1 file (prometheus/slo/slos.yml), as the rule generator needs them.

Pure: takes the parsed YAML documents. Reads the subset of OpenSLO that Vigía's rules need
(docs/slo.md): ratio SLIs over counters, one objective, one rolling window.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

API_VERSION = "openslo/v1"
UP_ANNOTATION = "vigia.dev/up"
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_DURATION = re.compile(r"(\d+)([mhdw])")


class SpecError(ValueError):
    """The file is not an SLO file this generator can turn into rules."""


@dataclass(frozen=True)
class Slo:
    name: str  # the `slo` label of every generated series and alert
    display_name: str
    description: str
    good: str  # counter selector: the good events
    total: str  # counter selector: all events
    target: Decimal  # the objective, e.g. 0.99
    window: str  # the rolling window, a Prometheus duration, e.g. 28d
    up: str  # the `up` selector of the job that serves the SLI

    @property
    def budget(self) -> Decimal:
        """The share of events allowed to be bad."""
        return 1 - self.target

    @property
    def alert_prefix(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("-"))


def _get(node: Any, *path: str | int) -> Any:
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            raise SpecError(f"missing {'.'.join(map(str, path))}") from None
    return node


def _text(node: Any, *path: str | int) -> str:
    value = _get(node, *path)
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{'.'.join(map(str, path))} must be a non-empty string")
    return value.strip()


def parse_slo(doc: Mapping[str, Any]) -> Slo:
    name = _text(doc, "metadata", "name")
    if not _NAME.fullmatch(name):
        raise SpecError(f"{name}: metadata.name must be lower-case words joined by '-'")
    try:
        ratio = _get(doc, "spec", "indicator", "spec", "ratioMetric")
        if ratio.get("counter") is not True:
            raise SpecError("only counter ratio metrics (counter: true) are supported")
        good, total = (_text(ratio, p, "metricSource", "spec", "query") for p in ("good", "total"))
        if {_text(ratio, p, "metricSource", "type") for p in ("good", "total")} != {"Prometheus"}:
            raise SpecError("good and total must be Prometheus metric sources")
        (objective,) = _get(doc, "spec", "objectives")
        target = Decimal(str(_get(objective, "target")))
        if not 0 < target < 1:
            raise SpecError(f"the target must be between 0 and 1, got {target}")
        (window,) = _get(doc, "spec", "timeWindow")
        duration = _text(window, "duration")
        if window.get("isRolling") is not True or not _DURATION.fullmatch(duration):
            raise SpecError("the time window must be one rolling duration like 28d")
        if _text(doc, "spec", "budgetingMethod") != "Occurrences":
            raise SpecError("only the Occurrences budgeting method is supported")
        up = _text(doc, "metadata", "annotations", UP_ANNOTATION)
        display_name = _text(doc, "metadata", "displayName")
        description = " ".join(_text(doc, "spec", "description").split())
    except (AttributeError, ValueError, ArithmeticError) as error:  # SpecError is a ValueError
        raise SpecError(f"SLO {name}: {error}") from None
    return Slo(
        name=name,
        display_name=display_name,
        description=description,
        good=good,
        total=total,
        target=target,
        window=duration,
        up=up,
    )


def parse(docs: Iterable[Any]) -> list[Slo]:
    """Every `kind: SLO` document; other OpenSLO kinds (Service) are documentation here."""
    slos = []
    for doc in docs:
        if not isinstance(doc, Mapping) or doc.get("apiVersion") != API_VERSION:
            raise SpecError(f"every document must be apiVersion {API_VERSION}")
        if doc.get("kind") == "SLO":
            slos.append(parse_slo(doc))
    names = [s.name for s in slos]
    if not slos or len(names) != len(set(names)):
        raise SpecError(f"expected SLOs with distinct names, got {names}")
    return slos
