"""The probe inside the exporter app: started and stopped with the service, its families and JSON
section read from the runner at each request (no new collection needed), `vigia_probe_up`."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry, generate_latest
from starlette.testclient import TestClient

from tests.exporter.exposition import samples, value
from tests.exporter.fake_kafka import FakeCluster
from tests.exporter.recorded import snapshot
from vigia.exporter.collectors import exposition, probe_collector, render_pace, render_probe
from vigia.exporter.probe.runner import ProbeRunner, ProbeSettings
from vigia.exporter.probe.tracker import LatencyTracker, ProbeStats
from vigia.exporter.service import CollectionService
from vigia.exporter.web import api
from vigia.exporter.web.app import create_app


class StubProbe(ProbeRunner):
    """A runner that never touches Kafka: the test sets its status and counters."""

    def __init__(self) -> None:
        super().__init__({}, ProbeSettings(topic="vigia-probe", interval_seconds=5.0))
        self.tracker = LatencyTracker()
        self.calls: list[str] = []

    def set_status(self, status: str) -> None:
        self._status = status

    def start(self) -> None:
        self.calls.append("start")

    def stop(self, timeout: float = 10.0) -> None:
        self.calls.append("stop")

    def stats(self) -> ProbeStats | None:
        return self.tracker.stats()

    def coverage(self) -> dict[int, bool]:
        return {1: False, 2: True, 3: True}

    def round_trip(self, n: int, broker: int) -> None:
        for acks, latency in (("all", 0.004), ("1", 0.001)):
            self.tracker.sent(
                f"{n}-{acks}", partition=0, broker=broker, acks=acks, round_id=n, at=0
            )
            self.tracker.delivered(f"{n}-{acks}", at=0.0, latency=latency)
        self.tracker.received(f"{n}-all", at=0.01)
        self.tracker.received(f"{n}-1", at=0.01)


def test_probe_families_and_json_are_read_at_each_request() -> None:
    fake = FakeCluster(snapshot("healthy"))
    adapter = fake.adapter()
    probe = StubProbe()
    service = CollectionService(adapter.collect, interval=60, timeout=5, probe=probe)
    try:
        with TestClient(create_app(service, manage_service=False)) as client:
            probe.set_status("off: cannot create probe topic 'vigia-probe' (denied)")
            found = samples(client.get("/metrics").text)
            assert value(found, "vigia_probe_up") == 0
            assert "off: cannot create probe topic" in client.get("/").text

            service.collect_once()
            probe.set_status("running")
            probe.round_trip(1, broker=2)
            found = samples(client.get("/metrics").text)
            assert value(found, "vigia_probe_up") == 1
            assert value(found, "vigia_probe_messages_total", broker="2", outcome="ok") == 2
            assert value(found, "vigia_probe_replication_latency_seconds", broker="2") == (
                0.004 - 0.001
            )
            count = "vigia_probe_produce_latency_seconds_count"
            assert value(found, count, broker="2", acks="all") == 1
            assert value(found, "kafka_brokers") == 3  # the cached collection part is still there

            # More probe rounds, no new collection: both endpoints show them.
            probe.round_trip(2, broker=2)
            probe.round_trip(3, broker=3)
            response = client.get("/metrics")
            pace = render_pace(service.interval, service.overrunning)
            assert response.text == exposition(service.state, probe) + pace
            found = samples(response.text)
            assert value(found, "vigia_probe_messages_total", broker="2", outcome="ok") == 4
            assert value(found, "vigia_probe_roundtrip_latency_seconds_count", broker="3") == 2

            body = client.get("/api/v1/cluster")
            document = json.loads(body.content)
            assert document == json.loads(json.dumps(api.cluster_json(service.state, probe)))
            assert list(document)[-2:] == ["probe", "connect"]
            assert document["probe"] == {
                "status": "running",
                "topic": "vigia-probe",
                "interval_seconds": 5.0,
                "brokers": [
                    {
                        "broker": 2,
                        "replication_latency_seconds": 0.003,
                        "messages": {"ok": 4, "failed": 0, "lost": 0},
                    },
                    {
                        "broker": 3,
                        "replication_latency_seconds": 0.003,
                        "messages": {"ok": 2, "failed": 0, "lost": 0},
                    },
                ],
                "coverage": [
                    {"broker": 1, "covered": False},
                    {"broker": 2, "covered": True},
                    {"broker": 3, "covered": True},
                ],
            }
            assert value(found, "vigia_probe_broker_covered", broker="1") == 0
    finally:
        adapter.close()


def test_the_service_starts_and_stops_the_probe_with_the_app() -> None:
    fake = FakeCluster(snapshot("healthy"))
    adapter = fake.adapter()
    probe = StubProbe()
    service = CollectionService(adapter.collect, interval=60, timeout=5, probe=probe)
    try:
        with TestClient(create_app(service)):
            assert probe.calls == ["start"]
        assert probe.calls == ["start", "stop"]
    finally:
        adapter.close()


def test_without_a_probe_up_is_0_and_the_json_says_disabled() -> None:
    fake = FakeCluster(snapshot("healthy"))
    adapter = fake.adapter()
    service = CollectionService(adapter.collect, interval=60, timeout=5)
    try:
        with TestClient(create_app(service, manage_service=False)) as client:
            service.collect_once()
            found = samples(client.get("/metrics").text)
            assert value(found, "vigia_probe_up") == 0
            assert {n for n, _ in found if n.startswith("vigia_probe")} == {"vigia_probe_up"}
            assert client.get("/api/v1/cluster").json()["probe"]["status"] == "disabled"
    finally:
        adapter.close()


def test_fast_exposition_of_the_probe_families_is_byte_identical_to_prometheus_client() -> None:
    probe = StubProbe()
    probe.set_status("running")
    probe.round_trip(1, broker=1)
    probe.round_trip(2, broker=3)
    collector = probe_collector(probe)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    assert render_probe(probe) == generate_latest(registry).decode("utf-8")
    assert "# TYPE vigia_probe_roundtrip_latency_seconds histogram" in render_probe(probe)
