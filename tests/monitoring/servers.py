"""A loopback webhook receiver, the bits of Prometheus' API the tests use, and the test-only
configs derived from the repository's (same rules and routing, faster timings). The processes
themselves start through tests/servers.py."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = REPO / "prometheus"
RULE_FILES = sorted((PROMETHEUS_DIR / "rules").glob("*.yml"))


class PromAPI:
    """The bits of Prometheus' HTTP API the tests use."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.Client(base_url=url, timeout=30)

    def _get(self, path: str, **params: Any) -> Any:
        response = self.client.post(path, data=params)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body.get('error', body)}")
        return body["data"]

    def range(self, expr: str, start: float, end: float, step: float = 60) -> list[dict[str, Any]]:
        """Evaluated every `step` seconds back from `end`, so the latest data is always included."""
        start = end - step * ((end - start) // step)
        data = self._get("/api/v1/query_range", query=expr, start=start, end=end, step=step)
        return list(data["result"])

    def instant(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"query": expr}
        if at is not None:
            params["time"] = at
        return list(self._get("/api/v1/query", **params)["result"])

    def series(self, match: str, start: float, end: float) -> list[dict[str, str]]:
        return list(self._get("/api/v1/series", **{"match[]": match, "start": start, "end": end}))


@dataclass
class Receiver:
    """A webhook receiver on loopback: records every Alertmanager notification by path."""

    port: int
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def payloads(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [payload for p, payload in self.received if p == path]


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    receiver = Receiver(free_port())

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # Alertmanager's webhook
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver.lock:
                receiver.received.append((self.path.strip("/"), json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", receiver.port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def render_alertmanager_config(
    out: Path, pager_url: str, ticket_url: str, heartbeat_url: str | None = None
) -> Path:
    """The repository's render script, fed URL files like compose and the launcher feed it
    (without `heartbeat_url`, the heartbeat keeps its placeholder and goes nowhere)."""
    urls = {"pager": pager_url, "ticket": ticket_url, "heartbeat": heartbeat_url}
    env = dict(os.environ)
    for receiver, url in urls.items():
        variable = f"VIGIA_ALERTMANAGER_{receiver.upper()}_URL_FILE"
        env.pop(variable, None)
        if url is not None:
            (out.parent / f"{receiver}-url").write_text(url + "\n")
            env[variable] = str(out.parent / f"{receiver}-url")
    result = subprocess.run(
        ["sh", str(PROMETHEUS_DIR / "render-alertmanager-config.sh"),
         str(PROMETHEUS_DIR / "alertmanager.yml"), str(out)],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def fast_alertmanager_config(rendered: Path, out: Path) -> Path:
    """The rendered config with second-scale grouping timers; routing, inhibitions and receivers
    stay as they are."""
    config = yaml.safe_load(rendered.read_text())
    for route in [config["route"], *config["route"].get("routes", [])]:
        for key, value in (("group_wait", "1s"), ("group_interval", "2s")):
            if key in route:
                route[key] = value
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def derived_prometheus_config(
    out_dir: Path,
    jobs: dict[str, list[str]],
    rule_files: list[Path],
    alertmanager: str | None = None,
    interval: str = "1s",
) -> Path:
    """prometheus/prometheus.yml with only `jobs` (name -> targets, written as file_sd files like
    the real ones), the given rule files and second-scale intervals. Labels, relabelling and
    external labels are the repository's."""
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    config["global"].update(
        {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval}
    )
    config["rule_files"] = [str(p) for p in rule_files]
    kept = []
    for job in config["scrape_configs"]:
        if job["job_name"] in jobs:
            targets = out_dir / f"{job['job_name']}.json"
            targets.write_text(json.dumps([{"targets": jobs[job["job_name"]]}]))
            job["file_sd_configs"] = [{"files": [str(targets)]}]
            kept.append(job)
    assert {j["job_name"] for j in kept} == set(jobs), "unknown job in the test config"
    config["scrape_configs"] = kept
    if alertmanager is None:
        config.pop("alerting", None)
    else:
        targets = out_dir / "alertmanagers.json"
        targets.write_text(json.dumps([{"targets": [alertmanager]}]))
        config["alerting"]["alertmanagers"][0]["file_sd_configs"] = [{"files": [str(targets)]}]
    path = out_dir / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def rules_firing_at_once(rule_files: list[Path], out: Path) -> list[str]:
    """Copies of `rule_files` in `out` with `for: 0s`, so that what fires without targets fires
    at once."""
    paths = []
    for path in rule_files:
        rules = yaml.safe_load(path.read_text())
        for group in rules["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    rule["for"] = "0s"
        paths.append(out / path.name)
        paths[-1].write_text(yaml.safe_dump(rules, sort_keys=False))
    return [str(p) for p in paths]
