"""The page registry and one refresh of a page: plan → fetch → pure build, never raising."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from dash import html

from vigia.dashboard.cluster import Cluster, parse_cluster
from vigia.dashboard.data import Fetched, Plan, Unreachable, Window
from vigia.dashboard.leg_budget import DEFAULT_TARGET_SECONDS
from vigia.dashboard.views import (
    alerts,
    brokers,
    capacity,
    consumers,
    ingest,
    overview,
    pipeline,
    promises,
    replication,
    slo_glance,
    topics,
)
from vigia.dashboard.views.common import Filters, PageContext

log = logging.getLogger(__name__)

RANGES: dict[str, float] = {
    "15m": 900,
    "1h": 3600,
    "6h": 6 * 3600,
    "24h": 86400,
    "7d": 7 * 86400,
}
DEFAULT_RANGE = "1h"
MIN_STEP = 15.0  # the scrape interval: a finer step only repeats samples
POINTS = 240  # per series: the scrape interval over the default hour


@dataclass(frozen=True)
class Page:
    path: str
    title: str
    plan: Callable[[Filters, Window], Plan]
    build: Callable[[PageContext], list[Any]]


PAGES: tuple[Page, ...] = (
    Page("/", "Overview", lambda f, w: overview.plan(), overview.build),
    Page("/brokers", "Brokers", lambda f, w: brokers.plan(f), brokers.build),
    Page("/topics", "Topics", lambda f, w: topics.plan(f), topics.build),
    Page(
        "/replication", "Replication", lambda f, w: replication.plan(f, w.step), replication.build
    ),
    Page("/consumers", "Consumers", lambda f, w: consumers.plan(f), consumers.build),
    Page("/ingest", "Ingest", lambda f, w: ingest.plan(), ingest.build),
    Page("/pipeline", "Pipeline", lambda f, w: pipeline.plan(), pipeline.build),
    Page(
        "/capacity",
        "Capacity",
        lambda f, w: slo_glance.with_glance(capacity.plan(f, w.end - w.start)),
        lambda ctx: [slo_glance.view(ctx), *capacity.build(ctx)],
    ),
    Page("/promises", "Promises", lambda f, w: promises.plan(w.step), promises.build),
)
PAGE_BY_PATH = {p.path: p for p in PAGES}


class Fetcher(Protocol):
    def fetch(self, plan: Plan, window: Window) -> Fetched: ...


def window_for(range_key: str | None, now: float) -> Window:
    span = RANGES.get(range_key or DEFAULT_RANGE, RANGES[DEFAULT_RANGE])
    step = max(MIN_STEP, round(span / POINTS))
    return Window(start=now - span, end=now, step=step)


# The exporter serves the same JSON until its next collection (every 15 s by default) while every
# open page refreshes and navigates: parse each collection once. Replacing the tuple is atomic, so
# concurrent callbacks at worst parse twice.
_last_parsed: tuple[tuple[Any, ...], Cluster] | None = None


def typed_cluster(raw: dict[str, Any] | Unreachable | None) -> Cluster | Unreachable:
    global _last_parsed
    if isinstance(raw, Unreachable):
        return raw
    if raw is None:
        return Unreachable("exporter", "not requested")
    info = raw.get("cluster") or {}
    key = (raw.get("collected_at"), info.get("cluster_id"), info.get("name"))
    if _last_parsed is not None and _last_parsed[0] == key and key[0] is not None:
        return _last_parsed[1]
    try:
        cluster = parse_cluster(raw)
        _last_parsed = (key, cluster)
        return cluster
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("unexpected /api/v1/cluster JSON: %r", exc)
        return Unreachable("exporter", f"unexpected JSON: {exc!r}"[:160])


@dataclass(frozen=True)
class Refresh:
    children: list[Any]
    problems: list[Unreachable]
    cluster: Cluster | Unreachable
    alerts: list[dict[str, Any]] | Unreachable | None
    seconds: float


def refresh(
    source: Fetcher,
    path: str | None,
    range_key: str | None,
    filters: Filters,
    now: float,
    outage_target_seconds: float = DEFAULT_TARGET_SECONDS,
    demo: bool = False,
) -> Refresh:
    """Fetch and build one page. Topology and alerts are always fetched: the header needs them."""
    started = time.perf_counter()
    page = PAGE_BY_PATH.get(path or "/")
    window = window_for(range_key, now)
    plan = page.plan(filters, window) if page else Plan()
    fetched = source.fetch(replace(plan, cluster=True, alerts=True), window)
    cluster = typed_cluster(fetched.cluster)
    if isinstance(cluster, Unreachable) and not isinstance(fetched.cluster, Unreachable):
        fetched.cluster = cluster
    ctx = PageContext(
        fetched=fetched,
        window=window,
        now=now,
        filters=filters,
        cluster=cluster if isinstance(cluster, Cluster) else None,
        outage_target_seconds=outage_target_seconds,
        demo=demo,
    )
    if page is None:
        children: list[Any] = [html.Div(f"No page at {path}.", className="card")]
    else:
        try:
            # The Overview lists every alert; another page, those that link to it.
            here = alerts.firing_here(fetched.alerts, page.path) if page.path != "/" else []
            children = here + page.build(ctx)
        except Exception as exc:  # a bug in one page must not blank the app
            log.exception("building page %s failed", page.path)
            children = [
                html.Div(
                    f"This page could not be drawn ({type(exc).__name__}: {exc}); the log has "
                    "the details. Other pages are unaffected.",
                    className="card error",
                )
            ]
    return Refresh(
        children=children,
        problems=fetched.problems(),
        cluster=cluster,
        alerts=fetched.alerts,
        seconds=time.perf_counter() - started,
    )
