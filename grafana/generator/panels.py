"""The vocabulary Vigía's boards are written in: a board, its rows, and each kind of panel with the
project's defaults (a panel takes half the grid's width; a stat tile a sixth, and half the height).

Grafana's typed builders (`grafana-foundation-sdk` 11.6 on PyPI) were tried for the HES board and
not used: panel ids, refIds and the variable's query object come out empty or in another shape
than these boards and their tests use (so a post-processing pass would be needed), the package is
55,000 lines of generated code versioned with epochs (`1769699379!11.6.0`), and the board was not
shorter than in this vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from generator.labels import Variable

JSON = Mapping[str, Any]
Steps = tuple[tuple[float, str], ...]  # (from value, colour) after green


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False
    table: bool = False  # one table row per series, as tables show them


def q(expr: str, legend: str = "", instant: bool = False) -> Query:
    return Query(expr=expr, legend=legend, instant=instant)


@dataclass(frozen=True)
class Panel:
    """A panel as Grafana's JSON model has it, but for its id and place (render.py gives those)."""

    kind: str  # Grafana's panel type
    title: str
    queries: tuple[Query, ...]
    options: JSON
    unit: str = "short"
    width: int = 12
    height: int = 8
    description: str = ""
    thresholds: Steps = ()
    mappings: tuple[JSON, ...] = ()
    custom: JSON = field(default_factory=dict)  # fieldConfig.defaults.custom
    transformations: tuple[JSON, ...] = ()


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Board:
    uid: str
    title: str
    description: str
    variables: tuple[Variable, ...]
    rows: tuple[Row, ...]


def row(title: str, *panels: Panel) -> Row:
    return Row(title, panels)


def timeseries(
    title: str,
    *queries: Query,
    unit: str = "short",
    width: int = 12,
    description: str = "",
    thresholds: Steps = (),
    mappings: tuple[JSON, ...] = (),
    stack: bool = False,
) -> Panel:
    """Lines with a legend table of each series' last and highest value; `stack` for the parts of
    a whole (phases of a batch, reasons for quarantine)."""
    custom = {
        "drawStyle": "line",
        "lineWidth": 1,
        "fillOpacity": 10 if stack else 0,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
    }
    options = {
        "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
        "tooltip": {"mode": "multi", "sort": "desc"},
    }
    return Panel(
        "timeseries",
        title,
        queries,
        options,
        unit=unit,
        width=width,
        description=description,
        thresholds=thresholds,
        mappings=mappings,
        custom=custom,
    )


def stat(
    title: str,
    *queries: Query,
    unit: str = "short",
    width: int = 4,
    height: int = 4,
    description: str = "",
    thresholds: Steps = (),
    mappings: tuple[JSON, ...] = (),
    text_mode: str = "value_and_name",
) -> Panel:
    """Each series' last value, coloured by its thresholds or value mapping."""
    options = {
        "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "orientation": "auto",
        "colorMode": "value",
        "textMode": text_mode,
    }
    return Panel(
        "stat",
        title,
        queries,
        options,
        unit=unit,
        width=width,
        height=height,
        description=description,
        thresholds=thresholds,
        mappings=mappings,
    )


def bargauge(
    title: str,
    *queries: Query,
    unit: str = "short",
    width: int = 12,
    description: str = "",
    thresholds: Steps = (),
) -> Panel:
    """One horizontal bar per series, at its latest value."""
    options = {
        "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "orientation": "horizontal",
    }
    return Panel(
        "bargauge",
        title,
        _latest(queries),
        options,
        unit=unit,
        width=width,
        description=description,
        thresholds=thresholds,
    )


def table(
    title: str,
    *queries: Query,
    width: int = 12,
    description: str = "",
    mappings: tuple[JSON, ...] = (),
    transformations: tuple[JSON, ...] = (),
) -> Panel:
    """One line per series, at its latest value."""
    return Panel(
        "table",
        title,
        tuple(replace(query, table=True) for query in _latest(queries)),
        {"showHeader": True},
        width=width,
        description=description,
        mappings=mappings,
        transformations=transformations,
    )


def value_texts(*texts: tuple[int, str, str]) -> tuple[JSON, ...]:
    """Shows each value as a word in a colour: `(0, "DOWN", "red")`."""
    return (
        {
            "type": "value",
            "options": {
                str(value): {"text": text, "color": colour, "index": index}
                for index, (value, text, colour) in enumerate(texts)
            },
        },
    )


def _latest(queries: tuple[Query, ...]) -> tuple[Query, ...]:
    # Tables and bar gauges show the latest value only: instant queries.
    return tuple(replace(query, instant=True) for query in queries)
