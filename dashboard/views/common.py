"""Pure building blocks shared by the pages: formatting, figures as plain dicts, small components.

Figures are plain plotly-JSON dicts rather than `go.Figure` objects: building and serialising them
is several times faster, which the refresh budget needs; tests validate them with plotly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import dash_ag_grid as dag
from dash import dcc, html

from vigia.dashboard.cluster import Cluster
from vigia.dashboard.data import Fetched, Matrix, Unreachable, Vector, Window
from vigia.dashboard.leg_budget import DEFAULT_TARGET_SECONDS

Figure = dict[str, Any]
Status = Literal["green", "amber", "red", "grey"]

PALETTE = ("#3566c8", "#e07b24", "#2a9d6f", "#c84a5a", "#8a5cc2", "#7a8a99", "#c0a020", "#1f9fb4")


@dataclass(frozen=True)
class Filters:
    """The broker/topic/group selection shared by every page (empty = everything)."""

    brokers: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    @classmethod
    def from_store(cls, data: Mapping[str, Any] | None) -> Filters:
        data = data or {}
        return cls(
            brokers=tuple(str(b) for b in data.get("brokers") or ()),
            topics=tuple(str(t) for t in data.get("topics") or ()),
            groups=tuple(str(g) for g in data.get("groups") or ()),
        )

    def matchers(self, *, broker: bool = False, topic: bool = False, group: bool = False) -> str:
        """PromQL label matchers (without braces) for the selected dimensions."""
        parts = []
        if broker and self.brokers:
            parts.append(f'broker=~"{_alternation(self.brokers)}"')
        if topic and self.topics:
            parts.append(f'topic=~"{_alternation(self.topics)}"')
        if group and self.groups:
            parts.append(f'consumergroup=~"{_alternation(self.groups)}"')
        return ",".join(parts)

    def keep_broker(self, broker: int | str | None) -> bool:
        return not self.brokers or str(broker) in self.brokers

    def keep_topic(self, topic: str) -> bool:
        return not self.topics or topic in self.topics

    def keep_group(self, group: str) -> bool:
        return not self.groups or group in self.groups


def _alternation(values: Iterable[str]) -> str:
    # PromQL strings use Go escaping, so regex backslashes must be doubled.
    return "|".join(re.escape(v).replace("\\", "\\\\") for v in values)


@dataclass(frozen=True)
class PageContext:
    """Everything a page builder may use; builders do no I/O."""

    fetched: Fetched
    window: Window
    now: float
    filters: Filters = field(default_factory=Filters)
    cluster: Cluster | None = None  # parsed fetched.cluster, None when unreachable
    # The outage each hop of the leg should survive (vigia-dashboard --outage-target).
    outage_target_seconds: float = DEFAULT_TARGET_SECONDS
    # `vigia-stack --demo` (marker "demo"): a panel a real deployment fills says what the demo
    # lacks for it instead.
    demo: bool = False

    @property
    def topology(self) -> Cluster | Unreachable:
        """The parsed cluster JSON, or why it is missing."""
        if self.cluster is not None:
            return self.cluster
        if isinstance(self.fetched.cluster, Unreachable):
            return self.fetched.cluster
        return Unreachable("exporter", "cluster JSON not requested")

    def instant(self, name: str) -> Vector | Unreachable:
        return self.fetched.instant.get(name, Unreachable("Prometheus", f"{name} not requested"))

    def ranged(self, name: str) -> Matrix | Unreachable:
        return self.fetched.ranged.get(name, Unreachable("Prometheus", f"{name} not requested"))


# ---------------------------------------------------------------- formatting


def fmt_int(value: float | None) -> str:
    return "–" if value is None else f"{round(value):,}"


def fmt_number(value: float | None, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def fmt_bytes(value: float | None) -> str:
    if value is None:
        return "–"
    size = float(value)
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(size) < 1000 or unit == "PB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def fmt_seconds(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    if math.isinf(value):
        return "∞"
    s = abs(value)
    sign = "-" if value < 0 else ""
    if s < 10:
        return f"{sign}{s:.1f} s"
    if s < 120:
        return f"{sign}{s:.0f} s"
    if s < 7200:
        return f"{sign}{s / 60:.0f} min"
    if s < 172800:
        return f"{sign}{s / 3600:.1f} h"
    return f"{sign}{s / 86400:.1f} d"


# ---------------------------------------------------------------- figures


@dataclass(frozen=True)
class Trace:
    name: str
    times: Sequence[float]
    values: Sequence[float | None]
    dash: str | None = None
    color: str | None = None  # default: the palette in trace order


def empty_figure(title: str, reason: str) -> Figure:
    """A figure that says why it has no data instead of drawing empty axes."""
    return {
        "data": [],
        "layout": {
            **_base_layout(title),
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "annotations": [
                {
                    "text": f"no data<br>{reason}",
                    "showarrow": False,
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                    "font": {"size": 13, "color": "#6b7580"},
                }
            ],
        },
    }


def _base_layout(title: str) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 14}, "x": 0.01, "xanchor": "left"},
        "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
        "height": 300,
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12},
        "legend": {"orientation": "h", "y": -0.18, "font": {"size": 11}},
        "uirevision": title,  # keep zoom and legend choices across auto-refreshes
    }


def line_figure(
    title: str,
    traces: TraceSet | Sequence[Trace],
    *,
    y_title: str = "",
    empty_reason: str | None = None,
    step: bool = False,
    seconds: bool = False,
    extra_layout: Mapping[str, Any] | None = None,
) -> Figure:
    """Lines over time. With `seconds`, values are durations in seconds, shown in seconds,
    minutes or hours, whichever keeps the axis readable."""
    if isinstance(traces, TraceSet):
        if traces.total > len(traces.traces):
            title = f"{title} — top {len(traces.traces)} of {traces.total} series"
        empty_reason = empty_reason or traces.empty_reason
        traces = traces.traces
    if not traces:
        return empty_figure(title, empty_reason or "no series in this time range")
    if seconds:
        traces, y_title = _duration_unit(traces)
    data = []
    for i, t in enumerate(traces):
        line: dict[str, Any] = {"width": 1.8, "color": t.color or PALETTE[i % len(PALETTE)]}
        if t.dash:
            line["dash"] = t.dash
        if step:
            line["shape"] = "hv"
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": t.name,
                "x": [x * 1000 for x in t.times],
                "y": list(t.values),
                "line": line,
            }
        )
    layout = _base_layout(title)
    layout["xaxis"] = {"type": "date", "gridcolor": "#eef1f4"}
    layout["yaxis"] = {"title": {"text": y_title}, "gridcolor": "#eef1f4", "rangemode": "tozero"}
    layout.update(extra_layout or {})
    return {"data": data, "layout": layout}


def _duration_unit(traces: Sequence[Trace]) -> tuple[list[Trace], str]:
    peak = max((_peak(t) for t in traces), default=0.0)
    for unit, size in (("hours", 3600.0), ("minutes", 60.0)):
        if peak >= 2 * size:
            return [
                replace(t, values=[None if v is None else v / size for v in t.values])
                for t in traces
            ], unit
    return list(traces), "seconds"


def bar_figure(
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    y_title: str = "",
    barmode: str = "group",
    text: bool = True,
    colors: Sequence[str] | None = None,
    empty_reason: str = "nothing to show",
) -> Figure:
    if not categories:
        return empty_figure(title, empty_reason)
    data = []
    for i, (name, values) in enumerate(series.items()):
        trace: dict[str, Any] = {
            "type": "bar",
            "name": name,
            "x": list(categories),
            "y": list(values),
            "marker": {"color": (colors or PALETTE)[i % len(colors or PALETTE)]},
        }
        if text:
            trace["text"] = [fmt_number(v, 0) if v is not None else "" for v in values]
            trace["textposition"] = "auto"
        data.append(trace)
    layout = _base_layout(title)
    layout.update(
        barmode=barmode,
        xaxis={"type": "category"},
        yaxis={"title": {"text": y_title}, "gridcolor": "#eef1f4"},
    )
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class TraceSet:
    """One chart's traces, why it may be empty, and how many series the query returned."""

    traces: tuple[Trace, ...]
    empty_reason: str
    total: int

    def __add__(self, other: TraceSet) -> TraceSet:
        return TraceSet(self.traces + other.traces, self.empty_reason, self.total + other.total)

    def __bool__(self) -> bool:
        return bool(self.traces)


# What exports the brokers' JMX metrics: an agent on each broker, which Prometheus scrapes.
JMX = "the brokers' JMX agent (vigia-stack --jmx-target)"
MAX_SERIES = 10  # more lines than this are unreadable and slow every refresh down


def _peak(trace: Trace) -> float:
    return max((v for v in trace.values if v is not None), default=float("-inf"))


def matrix_traces(
    result: Matrix | Unreachable,
    name: Callable[[Mapping[str, str]], str],
    keep: Callable[[Mapping[str, str]], bool] = lambda _labels: True,
    scale: float = 1.0,
    *,
    metric: str,
    color: Callable[[Mapping[str, str]], str | None] = lambda _labels: None,
    dash: str | None = None,
    drop_idle: bool = False,
    limit: int = MAX_SERIES,
    needs: str | None = None,
) -> TraceSet:
    """Traces from a range query, sorted by name, with the reason to show when there are none.

    `metric` names what the query reads, so an empty chart says which metric is missing, and
    `needs` what exports it, when that is not Vigía itself (a deployment may lack it);
    `drop_idle` leaves out series that are 0 throughout (idle topics would crowd the legend);
    beyond `limit` series only those with the highest peaks are kept (the title says so).
    """
    if isinstance(result, Unreachable):
        return TraceSet((), str(result), 0)
    traces = [
        Trace(
            name(s.labels),
            s.times,
            [None if v is None else v * scale for v in s.values],
            dash=dash,
            color=color(s.labels),
        )
        for s in result
        if keep(s.labels)
    ]
    reason = (
        f"needs {needs}" if needs else f"no {metric} series in this time range (not exported yet?)"
    )
    if drop_idle:
        busy = [t for t in traces if any(v for v in t.values)]
        if traces and not busy:
            reason = f"every {metric} series is 0 in this time range"
        traces = busy
    total = len(traces)
    if total > limit:
        traces = sorted(traces, key=_peak, reverse=True)[:limit]
    traces.sort(key=lambda t: _natural_key(t.name))
    return TraceSet(tuple(traces), reason, total)


def broker_color(labels: Mapping[str, str]) -> str | None:
    """One color per broker across every chart (brokers are numbered from 1)."""
    broker = labels.get("broker", "")
    return PALETTE[(int(broker) - 1) % len(PALETTE)] if broker.isdigit() else None


def _natural_key(text: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def series_broker(labels: Mapping[str, str]) -> str:
    """Broker name of a series: its `broker` label, else its scrape target (JMX not relabeled)."""
    if "broker" in labels:
        return f"broker {labels['broker']}"
    return labels.get("instance", "?")


# ---------------------------------------------------------------- components


def card(title: str, *children: Any, wide: bool = False, id: str | None = None) -> html.Div:
    props: dict[str, Any] = {"className": "card card-wide" if wide else "card"}
    if id:
        props["id"] = id
    return html.Div([html.H3(title, className="card-title"), *children], **props)


def graph(figure: Figure, id: str) -> dcc.Graph:
    return dcc.Graph(
        id=id,
        figure=figure,
        config={"displaylogo": False, "responsive": True},
        style={"height": f"{figure['layout'].get('height', 300)}px"},
    )


def simple_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    id: str | None = None,
    row_classes: Sequence[str] | None = None,
    empty: str = "nothing to show",
) -> html.Div | html.Table:
    if not rows:
        return html.Div(empty, className="muted")
    body = [
        html.Tr(
            [html.Td(cell) for cell in row],
            className=row_classes[i] if row_classes and row_classes[i] else None,
        )
        for i, row in enumerate(rows)
    ]
    props: dict[str, Any] = {"className": "table"}
    if id:
        props["id"] = id
    return html.Table(
        [html.Thead(html.Tr([html.Th(c) for c in columns])), html.Tbody(body)], **props
    )


def grid(
    name: str,
    columns: Sequence[dict[str, Any]],
    rows: list[dict[str, Any]],
    *,
    page_size: int = 20,
    row_styles: Sequence[tuple[str, str]] = (),
    search_placeholder: str = "search…",
) -> html.Div:
    """A searchable, sortable, filterable, paged grid for large lists (AG Grid).

    The search box feeds AG Grid's quick filter (every word must match some column) through a
    clientside callback in app.py; it and the column filters persist across auto-refreshes.
    `row_styles` are (JavaScript condition on `params.data`, background colour) pairs.
    """
    return html.Div(
        [
            dcc.Input(
                id={"type": "grid-search", "name": name},
                type="search",
                placeholder=search_placeholder,
                debounce=False,
                persistence=True,
                persistence_type="session",
                className="grid-search",
            ),
            dag.AgGrid(
                id={"type": "grid", "name": name},
                columnDefs=list(columns),
                rowData=rows,
                defaultColDef={
                    "sortable": True,
                    "filter": True,
                    "resizable": True,
                    "flex": 1,
                    "minWidth": 80,
                    "wrapHeaderText": True,
                    "autoHeaderHeight": True,
                },
                dashGridOptions={
                    "rowHeight": 28,
                    "pagination": True,
                    "paginationPageSize": page_size,
                    "paginationPageSizeSelector": False,
                    "domLayout": "autoHeight",
                    "animateRows": False,
                    "suppressCellFocus": True,
                },
                getRowStyle={
                    "styleConditions": [
                        {"condition": condition, "style": {"backgroundColor": color}}
                        for condition, color in row_styles
                    ]
                },
                persistence=True,
                persistence_type="session",
                persisted_props=["filterModel"],
                style={"height": None},
            ),
        ],
        id=name,
        className="grid-box",
    )


_THOUSANDS = "params.value == null ? '' : d3.format(',')(params.value)"
_ONE_DECIMAL = "params.value == null ? '' : d3.format(',.1f')(params.value)"


def column(key: str, name: str, kind: str = "text") -> dict[str, Any]:
    """A grid column (kind text, wide, numeric or seconds); numeric columns sort and filter as
    numbers and show thousands separators."""
    spec: dict[str, Any] = {"field": key, "headerName": name}
    if kind == "wide":
        spec.update(flex=2, minWidth=150)
    if kind in ("numeric", "seconds"):
        spec["type"] = "numericColumn"
        spec["filter"] = "agNumberColumnFilter"
        spec["valueFormatter"] = {"function": _THOUSANDS if kind == "numeric" else _ONE_DECIMAL}
    return spec


def no_topology(reason: Unreachable) -> html.Div:
    return html.Div(
        f"Topology unavailable: {reason.backend} {'error' if reason.answered else 'unreachable'}"
        f" ({reason.reason}).",
        className="muted",
    )


# Shown where a family would be when the cluster lacks the API that feeds it.
NOT_AVAILABLE = "not available on this cluster"


def not_available(api: str) -> str:
    return f"{NOT_AVAILABLE} ({api})"


def note(text: str) -> html.P:
    return html.P(text, className="note")
