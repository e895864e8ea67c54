"""HTTP endpoints. Handlers only read the service's latest state: they never wait for Kafka.

The exposition text and the JSON are computed at most once per collection, by the first request
that asks for them, and then served from cache as bytes: a collection nobody scrapes costs no
rendering. The probe's part (its families, the JSON's "probe" section) is small and has its own
schedule: it is rendered from the runner's in-memory counters at each request and appended to the
cached part.
The Connect watchers' part (exporter.connect) is appended the same way, from their last polls.

A plain Starlette app: five GET routes need no request validation or OpenAPI schema, and FastAPI's
models were ≈13 MB of the process's resident memory (docs/performance.md, "Resident memory").
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from vigia.exporter.collectors import render_bytes, render_pace, render_probe, render_source
from vigia.exporter.collectors.text_format import CONTENT_TYPE, text
from vigia.exporter.config import SourceSettings
from vigia.exporter.connect.collector import CachedExposition, connect_json
from vigia.exporter.connect.schema_history import SchemaHistoryCollector
from vigia.exporter.connect.stall import Pipeline
from vigia.exporter.connect.watcher import ConnectWatcher
from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.model.granularity import DEFAULT, Granularity
from vigia.exporter.model.state import ExporterState
from vigia.exporter.probe.runner import DISABLED
from vigia.exporter.service import CollectionService
from vigia.exporter.version import VERSION
from vigia.exporter.web import api
from vigia.exporter.web.per_state import PerState


def create_app(
    service: CollectionService,
    *,
    manage_service: bool = True,
    connect: Sequence[ConnectWatcher] = (),
    source: SourceWatcher | None = None,
    granularity: Granularity = DEFAULT,
    cluster_name: str | None = None,
) -> Starlette:
    """The exporter's ASGI app; with manage_service it starts and stops the collection loop,
    the Connect watchers (each polls its Connect cluster on its own thread) and the source watch.
    /metrics serves the families at `granularity`; /api/v1/cluster always has full detail and
    names the cluster (`cluster.name`) when given its name."""

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if manage_service:
            service.start()
            for watcher in connect:
                watcher.start()
            if source is not None:
                source.start()
        try:
            yield
        finally:
            if manage_service:
                for watcher in connect:
                    watcher.stop()
                if source is not None:
                    source.stop()
                service.stop()

    exposition = PerState(lambda s: render_bytes(s, granularity))
    # The document without its closing brace, so that the probe section can follow (never asked
    # for without a state: cluster_view answers 503 before the first collection).
    cluster = PerState(
        lambda s: b"" if s is None else _json_bytes(api.state_json(s, cluster_name))[:-1]
    )

    connect_exposition = CachedExposition()

    def metrics(_: Request) -> Response:
        state = service.state
        live = (
            render_probe(service.probe)
            + render_pace(service.interval, service.overrunning)
            + render_source(source, state)
        ).encode("utf-8")
        reports = [w.report for w in connect]
        connect_text = connect_exposition.get(reports, _pipeline(source))
        history = text(SchemaHistoryCollector(reports, state, _pipeline_topic(source)).collect())
        return Response(
            exposition.get(state) + live + connect_text + history.encode("utf-8"),
            media_type=CONTENT_TYPE,
        )

    def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    def readyz(_: Request) -> JSONResponse:
        state = service.state
        if state is None:
            return JSONResponse({"ready": False, "error": "no collection has completed yet"}, 503)
        return JSONResponse({"ready": True, "up": state.up})

    def cluster_view(_: Request) -> Response:
        state = service.state
        if state is None:
            return JSONResponse({"error": "no collection has completed yet"}, 503)
        # {"source": ..., "probe": {...}, "connect": [...]} without its opening brace closes the
        # cached document.
        section = _json_bytes(
            {
                api.SOURCE_KEY: api.source_json(source, state),
                api.PROBE_KEY: api.probe_json(service.probe),
                api.CONNECT_KEY: connect_json([w.report for w in connect], _pipeline(source)),
            }
        )[1:]
        return Response(cluster.get(state) + b"," + section, media_type="application/json")

    def landing(_: Request) -> HTMLResponse:
        probe_status = service.probe.status if service.probe is not None else DISABLED
        return HTMLResponse(_landing(service.state, probe_status))

    # Sync endpoints run in Starlette's thread pool, off the event loop, as FastAPI ran them.
    routes = [
        Route("/metrics", metrics),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/api/v1/cluster", cluster_view),
        Route("/", landing),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _pipeline_topic(source: SourceWatcher | None) -> str:
    """The data topic a schema history topic must be as durable as."""
    return SourceSettings().topic if source is None else source.topic


def _pipeline(source: SourceWatcher | None) -> Pipeline | None:
    """The flow verdict the Connect families judge the pipeline's connector on (--hes-dsn)."""
    return None if source is None else Pipeline(source.connector, source.flow)


def _json_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _landing(state: ExporterState | None, probe_status: str) -> str:
    if state is None:
        status = "No collection has completed yet."
    else:
        snap = state.snapshot
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(snap.collected_at))
        outcome = (
            "every phase succeeded"
            if state.up
            else "failed phases: " + ", ".join(f"{e.phase} ({e.message})" for e in snap.errors)
        )
        status = (
            f"Last collection {when}: {len(snap.brokers)} brokers, {len(snap.topics)} topics, "
            f"{len(snap.groups)} consumer groups; {outcome}."
        )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vigía exporter</title></head>
<body style="font-family: sans-serif; max-width: 48em; margin: 2em auto">
<h1>Vigía Kafka exporter</h1>
<p>Version {html.escape(VERSION)}. {html.escape(status)}</p>
<p>End-to-end probe: {html.escape(probe_status)}.</p>
<ul>
<li><a href="/metrics">/metrics</a> — Prometheus metrics (docs/metrics.md)</li>
<li><a href="/api/v1/cluster">/api/v1/cluster</a> — the last collection as JSON (docs/api.md)</li>
<li><a href="/healthz">/healthz</a> — process alive</li>
<li><a href="/readyz">/readyz</a> — a collection has completed</li>
</ul>
</body></html>
"""
