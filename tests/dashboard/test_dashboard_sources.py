"""Data access: parsing, typed "unreachable" results instead of exceptions, parallel fetches."""

from __future__ import annotations

import threading
import time

import httpx

from tests.conftest import free_port
from vigia.dashboard.config import DashboardConfig
from vigia.dashboard.data import Plan, Unreachable, Window
from vigia.dashboard.sources import Sources

WINDOW = Window(start=1000.0, end=1900.0, step=15.0)


def sources(handler: object) -> Sources:
    client = httpx.Client(transport=httpx.MockTransport(handler), timeout=1)  # type: ignore[arg-type]
    return Sources(DashboardConfig(), client=client)


def test_instant_and_range_queries_are_parsed() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/query":
            assert request.url.params["query"] == "kafka_brokers"
            return httpx.Response(
                200,
                json={
                    "status": "success",
                    "data": {
                        "resultType": "vector",
                        "result": [{"metric": {"cluster": "smartmeter"}, "value": [1900, "3"]}],
                    },
                },
            )
        assert request.url.params["step"] == "15.0"
        return httpx.Response(
            200,
            json={
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [
                        {"metric": {"broker": "1"}, "values": [[1000, "23"], [1015, "NaN"]]}
                    ],
                },
            },
        )

    src = sources(handler)
    vector = src.instant("kafka_brokers")
    assert isinstance(vector, list) and vector[0].value == 3.0
    matrix = src.range("kafka_broker_leader_partitions", WINDOW)
    assert isinstance(matrix, list)
    assert matrix[0].labels == {"broker": "1"}
    assert matrix[0].values == (23.0, None)  # NaN becomes a gap
    assert matrix[0].last == 23.0


def test_a_bad_query_is_an_answered_error_not_an_outage() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            400, json={"status": "error", "errorType": "bad_data", "error": "parse error"}
        )

    result = sources(handler).instant("sum(")
    assert isinstance(result, Unreachable)
    assert result.answered and "parse error" in result.reason


def test_every_backend_down_gives_one_banner_each() -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    config = DashboardConfig(
        prometheus_url=closed, exporter_url=closed, alertmanager_url=closed, backend_timeout=1
    )
    src = Sources(config)
    fetched = src.fetch(
        Plan(cluster=True, alerts=True, instant={"a": "up"}, ranged={"b": "up", "c": "up"}),
        WINDOW,
    )
    problems = fetched.problems()
    assert [(p.backend, p.reason) for p in problems] == [
        ("Prometheus", "connection refused"),
        ("exporter", "connection refused"),
        ("Alertmanager", "connection refused"),
    ]
    assert str(problems[1]) == "unreachable: exporter (connection refused)"
    src.close()


def test_exporter_before_its_first_collection_and_timeouts() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/cluster":
            return httpx.Response(503, json={"error": "no collection yet"})
        raise httpx.ReadTimeout("slow", request=request)

    src = sources(handler)
    cluster = src.cluster()
    assert isinstance(cluster, Unreachable)
    assert cluster.reason == "HTTP 503: no collection yet"
    alerts = src.alerts()
    assert isinstance(alerts, Unreachable) and alerts.reason == "timed out"


def test_alertmanager_alerts_request_and_shape() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/v2/alerts"
        assert request.url.params["active"] == "true"
        assert request.url.params["silenced"] == "false"
        assert request.url.params["filter"] == 'alertname!="Watchdog"'
        return httpx.Response(200, json=[{"labels": {"alertname": "X", "severity": "critical"}}])

    alerts = sources(handler).alerts()
    assert alerts == [{"labels": {"alertname": "X", "severity": "critical"}}]
    wrong = sources(lambda request: httpx.Response(200, json={"not": "a list"})).alerts()
    assert isinstance(wrong, Unreachable) and "not a list" in wrong.reason


def test_fetch_runs_requests_in_parallel() -> None:
    lock = threading.Lock()
    in_flight = 0
    peak = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)
        with lock:
            in_flight -= 1
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "matrix", "result": []}}
        )

    fetched = sources(handler).fetch(Plan(ranged={str(i): "up" for i in range(8)}), WINDOW)
    assert len(fetched.ranged) == 8 and all(v == [] for v in fetched.ranged.values())
    assert peak >= 4
