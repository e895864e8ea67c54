"""The Dash app: a shell (navigation, time range, filters, banner) and the callbacks filling it."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dash import MATCH, Dash, Input, Output, State, callback_context, dcc, html, no_update
from flask import jsonify

from vigia.common.slo.cli import SPEC as SLO_SPEC
from vigia.common.slo.cli import load as load_slos
from vigia.dashboard import runbooks
from vigia.dashboard.cluster import Cluster
from vigia.dashboard.clusters import misnamed, pick, sync, with_choice
from vigia.dashboard.config import DEMO_MARKER, DashboardConfig
from vigia.dashboard.data import Unreachable, scalar
from vigia.dashboard.pages import DEFAULT_RANGE, PAGES, RANGES, refresh, typed_cluster
from vigia.dashboard.sources import Sources
from vigia.dashboard.views import capacity, promises
from vigia.dashboard.views.common import Filters

log = logging.getLogger(__name__)

BACKEND_HELP = {
    "Prometheus": "charts and history show no data",
    "exporter": "topology, tables and filters are missing or stale",
    "Alertmanager": "active alerts are unknown",
}


def banner(problems: Sequence[Unreachable]) -> list[html.Div]:
    return [
        html.Div(
            [
                html.B(f"{p.backend[:1].upper()}{p.backend[1:]} unreachable"),
                f" ({p.reason}) — {BACKEND_HELP.get(p.backend, '')}.",
            ],
            id=f"banner-{p.backend.lower()}",
            className="banner-line",
        )
        for p in problems
    ]


def filter_options(cluster: Cluster) -> tuple[list[dict[str, str]], list[str], list[str]]:
    brokers = [
        {"label": f"broker {b.id}" + ("" if b.up else " (down)"), "value": str(b.id)}
        for b in cluster.brokers
    ]
    return brokers, [t.name for t in cluster.topics], [g.group_id for g in cluster.groups]


def alert_badge(alerts: list[dict[str, Any]] | Unreachable | None) -> str:
    if not isinstance(alerts, list):
        return "alerts: ?"
    return f"{len(alerts)} alert{'s' if len(alerts) != 1 else ''} firing"


def _filter(what: str, class_name: str) -> dcc.Dropdown:
    """A multi-select filter the pages share, kept for the browser session."""
    return dcc.Dropdown(
        id=f"filter-{what}",
        multi=True,
        placeholder=what,
        className=class_name,
        persistence=True,
        persistence_type="session",
    )


def _brand(config: DashboardConfig) -> list[html.Span]:
    brand = [html.Span("Vigía", className="brand")]
    if config.marker:
        brand.append(html.Span(config.marker, id="marker", className="marker"))
    return brand


def _cluster_selector(config: DashboardConfig) -> dcc.Dropdown:
    """Which cluster every page shows; kept in the URL (`?cluster=NAME`) by `create_app`."""
    names = [t.name for t in config.targets]
    return dcc.Dropdown(
        id="cluster",
        options=names,
        value=names[0],
        clearable=False,
        searchable=False,
        className="range",
    )


def _shell(config: DashboardConfig) -> html.Div:
    nav = [
        dcc.Link(p.title, href=p.path, id=f"nav-{p.title.lower()}", className="nav-link")
        for p in PAGES
    ]
    return html.Div(
        [
            # callback-nav: choosing a cluster rewrites `?cluster=` without reloading the page
            dcc.Location(id="url", refresh="callback-nav"),
            dcc.Store(id="filters", storage_type="session"),
            dcc.Interval(id="tick", interval=int(config.refresh_interval * 1000)),
            html.Header(
                [
                    html.Div([*_brand(config), *nav], className="nav"),
                    html.Div(
                        [
                            _cluster_selector(config),
                            dcc.Dropdown(
                                id="range",
                                options=list(RANGES),
                                value=DEFAULT_RANGE,
                                clearable=False,
                                className="range",
                                persistence=True,
                                persistence_type="session",
                            ),
                            _filter("brokers", "filter"),
                            _filter("topics", "filter filter-wide"),
                            _filter("groups", "filter filter-wide"),
                            html.Span(id="status-line", className="status-line"),
                        ],
                        className="controls",
                    ),
                ]
            ),
            html.Div(id="banner", className="banner"),
            html.Main(
                [
                    html.Div(html.Div("Loading…", className="muted"), id="page-body"),
                    html.Div(id="page-extra"),
                ]
            ),
        ]
    )


def create_app(config: DashboardConfig, sources: Any = None) -> Dash:
    """The Dash app; `sources` is anything with Sources' methods (tests pass fakes)."""
    src = sources if sources is not None else Sources(config)
    promises.use_slos(
        load_slos(SLO_SPEC),
        {
            "ingest-freshness": config.freshness_objective,
            "ingest-completeness": config.deadline_objective,
        },
    )
    app = Dash(
        __name__,
        title=f"Vigía · {config.marker}" if config.marker else "Vigía",
        update_title=None,
        suppress_callback_exceptions=True,  # page components come and go with navigation
    )
    app.layout = _shell(config)

    @app.server.route("/healthz")
    def healthz() -> Any:
        return jsonify(status="ok")

    runbooks.serve(app.server, runbooks.directory(config.runbooks_dir))

    app.clientside_callback(
        """function (brokers, topics, groups) {
            return {brokers: brokers || [], topics: topics || [], groups: groups || []};
        }""",
        Output("filters", "data"),
        Input("filter-brokers", "value"),
        Input("filter-topics", "value"),
        Input("filter-groups", "value"),
    )
    paths = json.dumps([p.path for p in PAGES])
    app.clientside_callback(
        f"""function (path) {{
            return {paths}.map(p => p === (path || "/") ? "nav-link active" : "nav-link");
        }}""",
        [Output(f"nav-{p.title.lower()}", "className") for p in PAGES],
        Input("url", "pathname"),
    )

    app.clientside_callback(
        f"""function (search) {{
            return {paths}.map(p => p + (search || ""));
        }}""",
        [Output(f"nav-{p.title.lower()}", "href") for p in PAGES],
        Input("url", "search"),
    )

    @app.callback(
        Output("url", "search"),
        Output("cluster", "value"),
        Input("url", "search"),
        Input("cluster", "value"),
    )
    def _choose(search: str | None, chosen: str | None) -> tuple[Any, Any]:
        """The selector and `?cluster=` show the same cluster, whichever of them changed."""
        if callback_context.triggered_id == "cluster" and chosen:
            return with_choice(search, chosen), no_update
        target, corrected = sync(config.targets, search)
        return (corrected or no_update), (target.name if target.name != chosen else no_update)

    def scoped(chosen: str | None) -> Any:
        return src.scoped(pick(config.targets, chosen))

    app.clientside_callback(
        """function (text, options) {
            return Object.assign({}, options, {quickFilterText: text || ""});
        }""",
        Output({"type": "grid", "name": MATCH}, "dashGridOptions"),
        Input({"type": "grid-search", "name": MATCH}, "value"),
        State({"type": "grid", "name": MATCH}, "dashGridOptions"),
    )

    @app.callback(
        Output("page-body", "children"),
        Output("banner", "children"),
        Output("filter-brokers", "options"),
        Output("filter-topics", "options"),
        Output("filter-groups", "options"),
        Output("status-line", "children"),
        Input("url", "pathname"),
        Input("tick", "n_intervals"),
        Input("range", "value"),
        Input("filters", "data"),
        Input("cluster", "value"),
    )
    def _refresh(
        path: str | None,
        _tick: int | None,
        range_key: str | None,
        filters: dict[str, Any] | None,
        chosen: str | None,
    ) -> tuple[Any, ...]:
        now = time.time()
        filtered = Filters.from_store(filters)
        source = scoped(chosen)
        demo = config.marker == DEMO_MARKER
        result = refresh(source, path, range_key, filtered, now, config.outage_target, demo)
        options: tuple[Any, ...] = (no_update, no_update, no_update)
        lines = banner(result.problems)
        if isinstance(result.cluster, Cluster):
            options = filter_options(result.cluster)
            wrong = misnamed(source.target, result.cluster.name)
            if wrong:
                lines.append(
                    html.Div(
                        [html.B("Wrong exporter"), f" ({wrong})."],
                        id="banner-cluster",
                        className="banner-line",
                    )
                )
        stamp = datetime.fromtimestamp(now, UTC).strftime("%H:%M:%S UTC")
        status = f"{alert_badge(result.alerts)} · updated {stamp} in {result.seconds * 1000:.0f} ms"
        log.debug("refreshed %s of %s in %.0f ms", path, source.target.name, result.seconds * 1000)
        return (result.children, lines, *options, status)

    def live_prefill(
        source: Any, topic: str | None, filters: Filters
    ) -> tuple[list[str], capacity.Prefill]:
        cluster = typed_cluster(source.cluster())
        live = cluster if isinstance(cluster, Cluster) else None
        if topic is None and live is not None:
            topic = capacity.default_topic(live, filters)
        values: dict[str, float | None] = {}
        if topic is not None:
            values = {
                name: scalar(source.instant(query))
                for name, query in capacity.live_queries(topic).items()
            }
        names = [t.name for t in live.topics] if live else []
        return names, capacity.prefill(live, topic, values)

    @app.callback(
        Output("page-extra", "children"),
        Input("url", "pathname"),
        Input("cluster", "value"),
        State("filters", "data"),
    )
    def _extra(path: str | None, chosen: str | None, filters: dict[str, Any] | None) -> Any:
        if path != "/capacity":
            return []
        names, pre = live_prefill(scoped(chosen), None, Filters.from_store(filters))
        return capacity.calculator(names, pre)

    fields = [f"sizing-{f}" for f, *_ in capacity.CALCULATOR_FIELDS]

    @app.callback(
        [Output(i, "value") for i in fields],
        Input("sizing-topic", "value"),
        State("cluster", "value"),
        prevent_initial_call=True,
    )
    def _prefill(topic: str | None, chosen: str | None) -> list[float]:
        return capacity.form_values(live_prefill(scoped(chosen), topic, Filters())[1].inputs)

    @app.callback(Output("sizing-result", "children"), [Input(i, "value") for i in fields])
    def _size(*values: float | None) -> Any:
        return capacity.render_result(capacity.compute(values))

    return app
