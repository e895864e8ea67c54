"""How fast the Dash app renders and refreshes a large cluster (goal: first render ≤ 1.5 s, each
refresh ≤ 300 ms, for 3 brokers, 1,000 partitions and 50 consumer groups).

A loopback HTTP server plays Prometheus, the exporter and Alertmanager with synthetic answers of
realistic size (1 h range queries at the app's resolution; a series per broker, topic,
broker × topic and group × topic) and a new exporter collection on every request. The app runs
with its real data sources and is driven through Flask's test client, so each number includes the
HTTP fetches, parsing, the pure builders and the JSON the browser receives. Browser-side drawing
is not included.

    python benchmarks/dashboard_render.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import re
import statistics
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from plotly.utils import PlotlyJSONEncoder

from vigia.dashboard.app import create_app
from vigia.dashboard.config import DashboardConfig
from vigia.dashboard.pages import PAGES, POINTS, refresh
from vigia.dashboard.sources import Sources
from vigia.dashboard.views.common import Filters

BROKERS = 3
TOPICS = 40
PARTITIONS_PER_TOPIC = 25  # 40 × 25 = 1,000 partitions
GROUPS = 50

MAIN = (
    "..page-body.children...banner.children...filter-brokers.options...filter-topics.options"
    "...filter-groups.options...status-line.children.."
)


def synthetic_cluster(now: float) -> dict[str, Any]:
    topics = []
    for t in range(TOPICS):
        partitions = []
        for p in range(PARTITIONS_PER_TOPIC):
            replicas = [(p + i) % BROKERS + 1 for i in range(3)]
            partitions.append(
                {
                    "partition": p,
                    "leader": replicas[0],
                    "replicas": replicas,
                    "isr": replicas,
                    "offline_replicas": [],
                    "earliest_offset": 0,
                    "latest_offset": 100_000 + p,
                    "under_replicated": False,
                    "under_min_isr": False,
                    "offline": False,
                    "leader_is_preferred": True,
                    "replica_size_bytes": {str(r): 5_000_000 + p for r in replicas},
                    "out_of_sync_seconds": {str(r): 0.0 for r in replicas},
                }
            )
        topics.append(
            {
                "name": f"topic-{t:02d}",
                "internal": False,
                "min_insync_replicas": 2,
                "size_bytes": 3 * 5_000_000 * PARTITIONS_PER_TOPIC,
                "leader_size_bytes": 5_000_000 * PARTITIONS_PER_TOPIC,
                "messages_in_per_second": 100.0 + t,
                "partitions": partitions,
            }
        )
    groups = []
    for g in range(GROUPS):
        topic = f"topic-{g % TOPICS:02d}"
        groups.append(
            {
                "group_id": f"group-{g:02d}",
                "state": "STABLE",
                "type": "CLASSIC",
                "protocol": "range",
                "coordinator": g % BROKERS + 1,
                "status": "OK",
                "members": [
                    {
                        "member_id": f"m{g}",
                        "client_id": f"c{g}",
                        "host": "/10.0.0.1",
                        "assignment": [],
                    }
                ],
                "topics": [
                    {
                        "topic": topic,
                        "lag": 10 * g,
                        "committed_offset_sum": 1000,
                        "max_lag_seconds": 0.5,
                        "messages_consumed_per_second": 100.0,
                    }
                ],
                "partitions": [
                    {
                        "topic": topic,
                        "partition": p,
                        "committed_offset": 100_000,
                        "latest_offset": 100_000 + g,
                        "lag": g,
                        "lag_seconds": 0.1,
                        "status": "OK",
                        "status_window_complete": True,
                    }
                    for p in range(PARTITIONS_PER_TOPIC)
                ],
            }
        )
    return {
        "collected_at": now - 5,
        "collection_duration_seconds": 0.8,
        "up": True,
        "errors": [],
        "cluster": {"cluster_id": "bench", "controller_id": 2, "controller_source": "quorum"},
        "brokers": [
            {
                "id": b,
                "host": "10.0.0.1",
                "port": 9092,
                "rack": None,
                "online": True,
                "is_controller": b == 2,
                "leader_partitions": 333,
                "follower_partitions": 667,
                "preferred_leader_partitions": 333,
                "log_dirs_error": None,
                "log_dirs": [
                    {
                        "path": "/data",
                        "error": None,
                        "size_bytes": 10**10,
                        "total_bytes": 10**12,
                        "usable_bytes": 5 * 10**11,
                    }
                ],
            }
            for b in range(1, BROKERS + 1)
        ],
        "topics": topics,
        "broker_topic_rates": [],
        "groups": groups,
    }


def label_sets(query: str) -> list[dict[str, str]]:
    """Plausible label sets for a query, from its `by (...)` clause (and a `topk(k, ...)` limit
    on consumer groups)."""
    sets = _label_sets(query)
    limit = re.search(r"topk\((\d+),", query)
    if limit:
        keep = sorted({s["consumergroup"] for s in sets if "consumergroup" in s})[: int(limit[1])]
        sets = [s for s in sets if s.get("consumergroup") in keep]
    return sets


def _label_sets(query: str) -> list[dict[str, str]]:
    brokers = [str(b) for b in range(1, BROKERS + 1)]
    topic_names = [f"topic-{t:02d}" for t in range(TOPICS)]
    if "by (consumergroup, topic)" in query:
        return [
            {"consumergroup": f"group-{g:02d}", "topic": topic_names[g % TOPICS]}
            for g in range(GROUPS)
        ]
    if "by (consumergroup)" in query:
        return [{"consumergroup": f"group-{g:02d}"} for g in range(GROUPS)]
    if "by (broker, topic)" in query:
        return [{"broker": b, "topic": t} for b in brokers for t in topic_names]
    if "by (topic)" in query:
        return [{"topic": t} for t in topic_names]
    if "by (broker, log_dir)" in query:
        return [{"broker": b, "log_dir": "/data"} for b in brokers]
    if "by (broker" in query:
        return [{"broker": b} for b in brokers]
    return [{}]


def prometheus_answer(path: str, params: dict[str, str]) -> dict[str, Any]:
    query = params["query"]
    sets = label_sets(query)
    if path.endswith("/query_range"):
        start, end, step = float(params["start"]), float(params["end"]), float(params["step"])
        times = [start + i * step for i in range(int((end - start) / step) + 1)]
        result = [
            {"metric": labels, "values": [[t, str(100 + i % 7)] for i, t in enumerate(times)]}
            for labels in sets
        ]
        return {"status": "success", "data": {"resultType": "matrix", "result": result}}
    result = [
        {"metric": labels, "value": [float(params.get("time", time.time())), "42"]}
        for labels in sets
    ]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def _serve_forever(cluster: dict[str, Any], port_out: Any) -> None:
    # Every request is a new collection (new collected_at), the worst case for the dashboard:
    # nothing parsed for an earlier refresh can be reused.
    template = json.dumps({**cluster, "collected_at": "STAMP"})
    alerts_body = json.dumps(
        [
            {
                "labels": {"alertname": "X", "severity": "warning"},
                "annotations": {"summary": "bench"},
                "startsAt": "",
            }
        ]
    ).encode()
    cache: dict[tuple[str, str], bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            params = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/api/v1/cluster":
                body = template.replace('"STAMP"', repr(time.time() - 5)).encode()
            elif url.path == "/api/v2/alerts":
                body = alerts_body
            else:
                key = (url.path, params["query"])
                if key not in cache:  # Prometheus answers fast; only the size matters here
                    cache[key] = json.dumps(prometheus_answer(url.path, params)).encode()
                body = cache[key]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_out.put(server.server_address[1])
    server.serve_forever()


def serve(cluster: dict[str, Any]) -> tuple[multiprocessing.Process, int]:
    """The fake backends in their own process, as the real ones are (no shared GIL)."""
    port_out: multiprocessing.Queue[int] = multiprocessing.Queue()
    process = multiprocessing.Process(target=_serve_forever, args=(cluster, port_out), daemon=True)
    process.start()
    return process, port_out.get(timeout=30)


def callback_body(path: str, tick: int) -> dict[str, Any]:
    outputs = [
        {"id": p.split(".")[0], "property": p.split(".")[1]} for p in MAIN.strip(".").split("...")
    ]
    return {
        "output": MAIN,
        "outputs": outputs,
        "inputs": [
            {"id": "url", "property": "pathname", "value": path},
            {"id": "tick", "property": "n_intervals", "value": tick},
            {"id": "range", "property": "value", "value": "1h"},
            {"id": "filters", "property": "data", "value": None},
        ],
        "changedPropIds": ["tick.n_intervals"],
        "state": [],
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="refreshes timed per page")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    backend, port = serve(synthetic_cluster(time.time()))
    base = f"http://127.0.0.1:{port}"
    config = DashboardConfig(prometheus_url=base, exporter_url=base, alertmanager_url=base)
    partitions = TOPICS * PARTITIONS_PER_TOPIC
    print(
        f"synthetic cluster: {BROKERS} brokers, {partitions} partitions, {GROUPS} groups; "
        f"1 h range queries of {POINTS + 1} points per series; {args.runs} refreshes per page"
    )

    started = time.perf_counter()
    app = create_app(config, Sources(config))
    client = app.server.test_client()
    index = client.get("/")
    layout = client.get("/_dash-layout")
    deps = client.get("/_dash-dependencies")
    first = client.post("/_dash-update-component", json=callback_body("/", 0))
    first_render = time.perf_counter() - started
    assert index.status_code == layout.status_code == deps.status_code == first.status_code == 200
    print(
        f"first render (app start, index, layout, dependencies, first Overview refresh): "
        f"{ms(first_render)}   goal ≤ 1500 ms"
    )

    sources = Sources(config)
    print(
        f"\n{'page':<13}{'first':>10}{'refresh min':>13}{'p50':>9}{'p95':>9}{'CPU/refresh':>13}"
        f"{'fetch+build':>13}{'serialize':>11}{'response':>10}"
    )
    worst = 0.0
    for page in PAGES:
        t0 = time.perf_counter()
        response = client.post("/_dash-update-component", json=callback_body(page.path, 1))
        first_page = time.perf_counter() - t0
        assert response.status_code == 200, response.data[:300]
        timings = []
        cpu0 = time.process_time()
        for tick in range(args.runs):
            t0 = time.perf_counter()
            response = client.post(
                "/_dash-update-component", json=callback_body(page.path, tick + 2)
            )
            timings.append(time.perf_counter() - t0)
        cpu = (time.process_time() - cpu0) / args.runs
        timings.sort()
        p95 = timings[max(0, round(0.95 * len(timings)) - 1)]
        worst = max(worst, p95)
        built, serialized = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            result = refresh(sources, page.path, "1h", Filters(), time.time())
            built.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            payload = json.dumps(result.children, cls=PlotlyJSONEncoder)
            serialized.append(time.perf_counter() - t0)
        print(
            f"{page.path:<13}{ms(first_page):>10}{ms(timings[0]):>13}"
            f"{ms(statistics.median(timings)):>9}{ms(p95):>9}{ms(cpu):>13}"
            f"{ms(statistics.median(built)):>13}"
            f"{ms(statistics.median(serialized)):>11}{len(payload) / 1e3:>7.0f} kB"
        )
    print(f"\nworst refresh p95: {ms(worst)}   goal ≤ 300 ms")
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs (wall times grow with other work)")
    backend.terminate()
    backend.join()


if __name__ == "__main__":
    main()
