"""Typed data the sources return and the views read: Prometheus samples and series, fetch plans
and results, and the "unreachable" marker. Pure: parsing of Prometheus payloads lives here too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PROMETHEUS, EXPORTER, ALERTMANAGER = "Prometheus", "exporter", "Alertmanager"


@dataclass(frozen=True)
class Unreachable:
    """A backend that did not answer usefully; views show it instead of data, never raise."""

    backend: str  # "Prometheus" | "exporter" | "Alertmanager"
    reason: str
    answered: bool = False  # the backend answered but refused (e.g. a bad query): no banner

    def __str__(self) -> str:
        if self.answered:
            return f"{self.backend} error ({self.reason})"
        return f"unreachable: {self.backend} ({self.reason})"


@dataclass(frozen=True)
class Sample:
    """One element of an instant vector."""

    labels: Mapping[str, str]
    value: float | None  # None for NaN


@dataclass(frozen=True)
class Series:
    """One element of a range matrix; values are None where Prometheus returned NaN."""

    labels: Mapping[str, str]
    times: tuple[float, ...]
    values: tuple[float | None, ...]

    @property
    def last(self) -> float | None:
        return next((v for v in reversed(self.values) if v is not None), None)


Vector = list[Sample]
Matrix = list[Series]


def _number(text: str) -> float | None:
    value = float(text)
    return None if math.isnan(value) else value


class PrometheusPayloadError(ValueError):
    """The JSON is not a successful Prometheus query response of the expected type."""


def _data(payload: Mapping[str, Any], expected: str) -> list[Any]:
    if payload.get("status") != "success":
        raise PrometheusPayloadError(
            f"{payload.get('errorType', 'error')}: {payload.get('error', 'query failed')}"
        )
    data = payload.get("data") or {}
    kind = data.get("resultType")
    if kind == "scalar" and expected == "vector":
        return [{"metric": {}, "value": data["result"]}]
    if kind != expected:
        raise PrometheusPayloadError(f"expected a {expected}, got {kind}")
    return list(data.get("result") or [])


def parse_vector(payload: Mapping[str, Any]) -> Vector:
    return [
        Sample(labels=dict(item.get("metric", {})), value=_number(item["value"][1]))
        for item in _data(payload, "vector")
    ]


def parse_matrix(payload: Mapping[str, Any]) -> Matrix:
    out: Matrix = []
    for item in _data(payload, "matrix"):
        points = item.get("values", [])
        out.append(
            Series(
                labels=dict(item.get("metric", {})),
                times=tuple(float(t) for t, _ in points),
                values=tuple(_number(v) for _, v in points),
            )
        )
    return out


def by_label(samples: Iterable[Sample], label: str) -> dict[str, float]:
    """{label value: sample value}, skipping samples without the label or without a value."""
    return {s.labels[label]: s.value for s in samples if label in s.labels and s.value is not None}


def scalar(samples: Sequence[Sample] | Unreachable | None) -> float | None:
    """The single value of a one-element vector (None when missing, empty or unreachable)."""
    if isinstance(samples, Unreachable) or not samples:
        return None
    return samples[0].value


@dataclass(frozen=True)
class Window:
    """A range query's time span (unix seconds) and resolution."""

    start: float
    end: float
    step: float


@dataclass(frozen=True)
class Plan:
    """What one page needs for one refresh."""

    cluster: bool = False
    alerts: bool = False
    instant: Mapping[str, str] = field(default_factory=dict)  # name -> PromQL
    ranged: Mapping[str, str] = field(default_factory=dict)  # name -> PromQL


@dataclass
class Fetched:
    """Results of a Plan; each entry is data or Unreachable (None when not requested)."""

    cluster: dict[str, Any] | Unreachable | None = None
    alerts: list[dict[str, Any]] | Unreachable | None = None
    instant: dict[str, Vector | Unreachable] = field(default_factory=dict)
    ranged: dict[str, Matrix | Unreachable] = field(default_factory=dict)

    def problems(self) -> list[Unreachable]:
        """One Unreachable per backend that failed (first reason wins), in a stable order."""
        seen: dict[str, Unreachable] = {}
        results: list[object] = [
            self.cluster,
            self.alerts,
            *self.instant.values(),
            *self.ranged.values(),
        ]
        for item in results:
            if isinstance(item, Unreachable) and not item.answered and item.backend not in seen:
                seen[item.backend] = item
        order = (PROMETHEUS, EXPORTER, ALERTMANAGER)
        return sorted(
            seen.values(), key=lambda u: order.index(u.backend) if u.backend in order else 9
        )
