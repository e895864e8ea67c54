"""What a drill shows at its interesting moments, kept as files: the exporter's HES and Connect
series from /metrics, its flow verdict and stall causes from /api/v1/cluster, and the worker's own
REST answer. tests/fixtures/connect-debezium/drills/ holds recordings made with it; a timeline of
the moments (seconds since the drill began) is printed for the notes (pytest -s)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.exporter.live import Running

# The families that tell the HES leg's story; the rest of /metrics is the Kafka side.
KEPT = ("kafka_connect_", "vigia_hes_", "vigia_pipeline_")
# The worker's own word on its task and on Debezium's binlog connection (its JMX agent).
WORKER_KEPT = ("kafka_connect_task_status", "debezium_mysql_connected")


def hes_series(metrics: str, topic: str) -> str:
    """The HES and Connect lines of a /metrics text, with the pipeline topic's end offsets."""
    kept = []
    for line in metrics.splitlines():
        name = line.split(" ", 3)[2] if line.startswith("# ") else line.split("{", 1)[0]
        own_topic = name == "kafka_topic_partition_current_offset" and f'topic="{topic}"' in line
        if name.startswith(KEPT) or own_topic:
            kept.append(line)
    return "\n".join(kept) + "\n"


class Moments:
    def __init__(
        self, directory: Path, exporter: Running, connect_url: str, topic: str, jmx_url: str = ""
    ) -> None:
        self.directory = directory
        self.exporter = exporter
        self.connect_url = connect_url.rstrip("/")
        self.jmx_url = jmx_url
        self.topic = topic
        self.began = time.monotonic()

    def mark(self, what: str) -> None:
        print(f"\n  +{time.monotonic() - self.began:6.1f} s  {what}", end="")

    def record(self, moment: str) -> None:
        """`moment`.prom, `moment`.api.json and, when the worker answers, `moment`.rest.json and
        `moment`.worker.prom (its JMX agent's task status and Debezium's `Connected`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        metrics = httpx.get(f"{self.exporter.url}/metrics", timeout=5).text
        (self.directory / f"{moment}.prom").write_text(hes_series(metrics, self.topic))
        cluster = self.exporter.get("/api/v1/cluster").json()
        api = {"flow": cluster["source"]["flow"], "connect": cluster["connect"]}
        (self.directory / f"{moment}.api.json").write_text(json.dumps(api, indent=1) + "\n")
        try:
            answer = httpx.get(
                f"{self.connect_url}/connectors",
                params=[("expand", "status"), ("expand", "info")],
                timeout=10,
            ).json()
        except httpx.HTTPError:
            answer = None
        if answer is not None:
            (self.directory / f"{moment}.rest.json").write_text(json.dumps(answer, indent=1))
        if self.jmx_url:
            try:
                scrape = httpx.get(self.jmx_url, timeout=10).text
            except httpx.HTTPError:
                scrape = None
            if scrape is not None:
                lines = [line for line in scrape.splitlines() if line.startswith(WORKER_KEPT)]
                (self.directory / f"{moment}.worker.prom").write_text("\n".join(lines) + "\n")
        self.mark(f"recorded {moment} in {self.directory}")
