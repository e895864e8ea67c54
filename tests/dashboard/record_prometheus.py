"""Record real Prometheus answers to every dashboard query, for the unit tests.

Starts the backfilled Prometheus of the browser tests (the recorded exporter expositions and JMX
scrapes, ending 20 s before start-up), runs each page's plan over the last 15 minutes and writes
the raw /api/v1 JSON answers to tests/dashboard/data/prometheus.json.

    python -m tests.dashboard.record_prometheus
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.dashboard.backends import BackfilledPrometheus
from vigia.dashboard.data import Window
from vigia.dashboard.pages import PAGES
from vigia.dashboard.views.common import Filters

OUTPUT = Path(__file__).parent / "data" / "prometheus.json"


def record(prometheus_url: str, window: Window) -> dict[str, dict[str, dict[str, object]]]:
    answers: dict[str, dict[str, dict[str, object]]] = {"instant": {}, "ranged": {}}
    with httpx.Client(base_url=prometheus_url, timeout=10) as client:
        for page in PAGES:
            plan = page.plan(Filters(), window)
            for name, query in plan.instant.items():
                params = {"query": query, "time": window.end}
                body = client.get("/api/v1/query", params=params).json()
                answers["instant"][f"{page.path} {name}"] = {"query": query, "response": body}
            for name, query in plan.ranged.items():
                params = {
                    "query": query,
                    "start": window.start,
                    "end": window.end,
                    "step": window.step,
                }
                body = client.get("/api/v1/query_range", params=params).json()
                answers["ranged"][f"{page.path} {name}"] = {"query": query, "response": body}
    return answers


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="vigia-record-") as tmp:
        prometheus = BackfilledPrometheus(Path(tmp))
        prometheus.start()
        try:
            end = round(time.time())
            window = Window(start=end - 900, end=end, step=15)
            answers = record(prometheus.url, window)
        finally:
            prometheus.stop()
    OUTPUT.parent.mkdir(exist_ok=True)
    payload = {
        "window": {"start": window.start, "end": window.end, "step": window.step},
        "shift": prometheus.shift,
        **answers,
    }
    OUTPUT.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stderr.write(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
