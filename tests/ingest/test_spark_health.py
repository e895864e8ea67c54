"""The cluster's health from the driver's REST API, on answers recorded from a real standalone run
(tests/fixtures/spark-rest/, made by `python -m tests.ingest.record_spark_rest`): a master and two
one-core workers, a task that failed once, then executor 1 killed and replaced."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from vigia.ingest.spark_health import (
    Health,
    Seen,
    SparkHealth,
    executors_url,
    observe,
    rest_fetch,
)

RECORDED = Path(__file__).parents[1] / "fixtures" / "spark-rest"


def recorded(name: str) -> Any:
    return json.loads((RECORDED / f"{name}.json").read_text())


def test_healthy_cluster_two_executors_and_one_failed_task() -> None:
    _, health = observe(Seen(), recorded("healthy-allexecutors"))
    assert health == Health(executors=2, cores=2, failed_tasks=1, executors_lost=0)


def test_a_killed_executor_is_lost_its_replacement_alive() -> None:
    seen, _ = observe(Seen(), recorded("healthy-allexecutors"))
    seen, health = observe(seen, recorded("lost-allexecutors"))
    assert health == Health(executors=2, cores=2, failed_tasks=1, executors_lost=1)
    assert seen.lost == {"1"}


def test_active_executors_alone_give_the_same_gauges() -> None:
    """/executors (active only) agrees with /allexecutors on what is alive."""
    _, everything = observe(Seen(), recorded("lost-allexecutors"))
    _, active = observe(Seen(), recorded("lost-executors"))
    assert (active.executors, active.cores) == (everything.executors, everything.cores)


def test_in_local_mode_the_driver_is_the_executor() -> None:
    _, health = observe(Seen(), recorded("local-allexecutors"))
    assert health == Health(executors=1, cores=2, failed_tasks=0, executors_lost=0)


def test_counters_never_go_back_when_spark_forgets_removed_executors() -> None:
    """Spark keeps the last 100 removed executors: one dropped from the answer stays counted."""
    seen, _ = observe(Seen(), recorded("lost-allexecutors"))
    forgotten = [e for e in recorded("lost-allexecutors") if e["id"] != "1"]
    seen, health = observe(seen, forgotten)
    assert (health.failed_tasks, health.executors_lost) == (1, 1)
    assert seen.failed_tasks["1"] == 1


def served(collector: SparkHealth) -> dict[str, float | None]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    values: dict[str, float | None] = {}
    for family in text_string_to_metric_families(text):
        values[family.name] = None
        for sample in family.samples:
            if not sample.name.endswith("_created"):
                assert sample.labels == {"query": "vigia-ingest"}
                values[family.name] = sample.value
    return values


def test_the_collector_serves_gauges_from_the_last_answer_and_counters_from_all() -> None:
    answers: list[Any] = [None, recorded("healthy-allexecutors"), None]
    health = SparkHealth("vigia-ingest")
    # Before Spark started: the families, without samples.
    assert served(health) == dict.fromkeys(
        [
            "vigia_ingest_executors",
            "vigia_ingest_executor_cores",
            "vigia_ingest_failed_tasks",
            "vigia_ingest_executors_lost",
        ]
    )
    health.attach(lambda: answers.pop(0))
    assert set(served(health).values()) == {None}  # the UI did not answer, nothing seen yet
    assert served(health) == {
        "vigia_ingest_executors": 2,
        "vigia_ingest_executor_cores": 2,
        "vigia_ingest_failed_tasks": 1,
        "vigia_ingest_executors_lost": 0,
    }
    # No answer: the gauges are unknown, the counters still true.
    assert served(health) == {
        "vigia_ingest_executors": None,
        "vigia_ingest_executor_cores": None,
        "vigia_ingest_failed_tasks": 1,
        "vigia_ingest_executors_lost": 0,
    }


def test_rest_fetch_reads_the_drivers_ui_and_none_when_it_is_gone() -> None:
    body = (RECORDED / "lost-allexecutors.json").read_bytes()
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        ui = f"http://127.0.0.1:{server.server_address[1]}/"
        url = executors_url(ui, "app-1")
        assert url is not None
        assert rest_fetch(url)() == json.loads(body)
        assert asked == ["/api/v1/applications/app-1/allexecutors"]
    finally:
        server.shutdown()
        server.server_close()
    assert rest_fetch(url, timeout_s=1)() is None
    assert executors_url(None, "app-1") is None
