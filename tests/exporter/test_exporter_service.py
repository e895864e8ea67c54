"""The collection loop and the HTTP app, in process, with fake Kafka clients."""

from __future__ import annotations

import gc
import logging
import re
import threading
import time
import weakref
from dataclasses import replace

import pytest
from starlette.testclient import TestClient

from tests.exporter.exposition import samples, value
from tests.exporter.fake_kafka import FakeCluster
from tests.exporter.recorded import snapshot
from vigia.exporter.model.granularity import DEFAULT, FULL, Granularity
from vigia.exporter.model.snapshot import ClusterSnapshot, PhaseError, empty_snapshot
from vigia.exporter.service import FIT_AGAIN_SECONDS, GRACE_SECONDS, CollectionService
from vigia.exporter.web.app import create_app


def test_endpoints_before_and_after_the_first_collection() -> None:
    fake = FakeCluster(snapshot("healthy"))
    adapter = fake.adapter()
    service = CollectionService(adapter.collect, interval=60, timeout=5)
    try:
        with TestClient(create_app(service, manage_service=False, granularity=FULL)) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/readyz").status_code == 503
            missing = client.get("/api/v1/cluster")
            assert missing.status_code == 503 and "error" in missing.json()
            assert value(samples(client.get("/metrics").text), "vigia_exporter_up") == 0
            assert "No collection has completed yet" in client.get("/").text

            service.collect_once()
            assert client.get("/readyz").json() == {"ready": True, "up": True}
            metrics = client.get("/metrics")
            assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
            found = samples(metrics.text)
            assert value(found, "vigia_exporter_up") == 1
            assert value(found, "kafka_brokers") == 3
            assert (
                value(
                    found, "kafka_consumergroup_lag_sum", consumergroup="billing", topic="measure"
                )
                == 1055
            )
            assert (
                value(found, "vigia_exporter_collection_duration_seconds", phase="total")
                is not None
            )
            cluster = client.get("/api/v1/cluster").json()
            assert cluster["up"] is True and cluster["cluster"]["controller_id"] == 2
            landing = client.get("/")
            assert "3 brokers, 5 topics, 5 consumer groups" in landing.text
            assert 'href="/metrics"' in landing.text
    finally:
        adapter.close()


def test_broker_down_mid_life_is_a_fact_not_an_exporter_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeCluster(snapshot("healthy"))
    adapter = fake.adapter()
    service = CollectionService(adapter.collect, interval=60, timeout=5)
    try:
        with TestClient(create_app(service, manage_service=False, granularity=FULL)) as client:
            service.collect_once()
            assert value(samples(client.get("/metrics").text), "vigia_exporter_up") == 1

            fake.snapshot = snapshot("broker-down")
            with caplog.at_level(logging.INFO, logger="vigia.exporter.service"):
                service.collect_once()
                service.collect_once()  # still down: no second line
            found = samples(client.get("/metrics").text)
            assert value(found, "vigia_exporter_up") == 1
            assert value(found, "vigia_exporter_collection_errors_total", phase="log_dirs") == 0
            assert value(found, "kafka_broker_up", broker="1") == 0
            assert value(found, "kafka_broker_up", broker="2") == 1
            assert value(found, "vigia_exporter_collection_errors_total", phase="offsets") == 0
            # Everything else is still collected from the brokers that answer.
            assert value(found, "kafka_brokers") == 2
            assert value(found, "kafka_broker_leader_partitions", broker="2") == 35
            assert value(
                found,
                "kafka_partition_replica_size_bytes",
                topic="measure",
                partition="0",
                broker="2",
            )
            assert (
                value(found, "kafka_topic_partition_current_offset", topic="measure", partition="0")
                == 53_465
            )
            assert client.get("/api/v1/cluster").json()["errors"] == []
            down = [r.getMessage() for r in caplog.records if "broker 1" in r.getMessage()]
            assert len(down) == 1 and down[0].startswith("broker 1 is down")

            fake.snapshot = snapshot("rebalanced")
            with caplog.at_level(logging.INFO, logger="vigia.exporter.service"):
                service.collect_once()
            found = samples(client.get("/metrics").text)
            assert value(found, "vigia_exporter_up") == 1
            assert value(found, "kafka_broker_up", broker="1") == 1
            assert caplog.records[-1].getMessage() == "broker 1 is back in the metadata"
    finally:
        adapter.close()


def test_deleted_topics_and_groups_disappear_from_metrics() -> None:
    healthy = snapshot("healthy")
    fake = FakeCluster(healthy)
    adapter = fake.adapter()
    service = CollectionService(adapter.collect, interval=60, timeout=5)
    try:
        with TestClient(create_app(service, manage_service=False, granularity=FULL)) as client:
            service.collect_once()
            assert 'topic="measure-quarantine"' in client.get("/metrics").text
            fake.snapshot = replace(
                healthy,
                topics=tuple(t for t in healthy.topics if t.name != "measure-quarantine"),
                log_dirs=(),
                groups=tuple(g for g in healthy.groups if g.group_id != "verify-group"),
            )
            service.collect_once()
            text = client.get("/metrics").text
            assert 'topic="measure-quarantine"' not in text
            assert 'consumergroup="verify-group"' not in text
            assert 'consumergroup="verify-group-848"' in text
    finally:
        adapter.close()


def test_a_hanging_collection_is_abandoned_and_metrics_stay_fast(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    calls: list[float] = []

    def hanging(timeout: float) -> ClusterSnapshot:
        calls.append(timeout)
        release.wait()
        return empty_snapshot(time.time(), ())

    service = CollectionService(hanging, interval=0.2, timeout=0.3)
    try:
        with TestClient(create_app(service, granularity=FULL)) as client:  # starts the loop
            started = time.monotonic()
            while service.state is None and time.monotonic() - started < 10:
                response_started = time.monotonic()
                client.get("/metrics")
                assert time.monotonic() - response_started < 0.5  # never waits for the collection
                time.sleep(0.05)
            assert 0.3 <= time.monotonic() - started < 0.3 + GRACE_SECONDS + 1.0
            found = samples(client.get("/metrics").text)
            assert value(found, "vigia_exporter_up") == 0
            assert (
                value(found, "vigia_exporter_collection_errors_total", phase="collection") or 0
            ) >= 1
            while service.state is not None and service.state.collections_total < 2:
                time.sleep(0.05)
    finally:
        release.set()
    assert "collection timed out after 0.3 s" in caplog.text
    # While the first one still hangs, no second collection piles up on it.
    assert "the previous collection is still running" in caplog.text
    assert calls == [0.3]


def test_unreachable_cluster_retries_with_backoff_and_recovers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = [True]
    good = snapshot("healthy")

    def collect(timeout: float) -> ClusterSnapshot:
        if down[0]:
            return empty_snapshot(
                time.time(), (PhaseError("metadata", "KafkaError _TRANSPORT: down"),)
            )
        return good

    service = CollectionService(collect, interval=1, timeout=1, bootstrap_servers="kafka:9092")
    caplog.set_level(logging.INFO, logger="vigia.exporter.service")
    for _ in range(4):
        service.collect_once()

    def delays() -> list[str]:
        return [
            r.getMessage().split("retrying in ")[1].split(" s")[0]
            for r in caplog.records
            if "retrying in" in r.getMessage()
        ]

    assert delays() == ["1", "2", "4", "8"]
    first = next(r.getMessage() for r in caplog.records if "retrying in" in r.getMessage())
    assert (
        "cannot collect from Kafka at kafka:9092 (metadata: KafkaError _TRANSPORT: down)" in first
    )
    assert "vigia_exporter_up is 0" in first
    down[0] = False
    assert service.collect_once().up
    assert "Kafka reachable again after 4 failed collection(s)" in caplog.text
    assert "phase metadata" not in caplog.text  # the reachability lines say it, once each
    down[0] = True
    service.collect_once()
    assert delays()[-1] == "1"  # the backoff starts over after a recovery


def test_one_log_line_when_a_phase_starts_failing_and_one_when_it_recovers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = snapshot("healthy")
    failing = replace(good, errors=(PhaseError("configs", "KafkaError _TIMED_OUT: slow"),))
    sequence = [good, failing, failing, failing, good, good]

    service = CollectionService(lambda timeout: sequence.pop(0), interval=1, timeout=1)
    caplog.set_level(logging.INFO, logger="vigia.exporter.service")
    for _ in range(6):
        service.collect_once()
    assert [r.getMessage() for r in caplog.records] == [
        "phase configs failing: KafkaError _TIMED_OUT: slow",
        "phase configs recovered",
    ]


def test_a_phase_failing_for_many_groups_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    good = snapshot("healthy")
    errors = tuple(PhaseError("groups", f"group g{n}: not authorized") for n in range(2000))
    service = CollectionService(lambda timeout: replace(good, errors=errors), interval=1, timeout=1)
    caplog.set_level(logging.INFO, logger="vigia.exporter.service")
    service.collect_once()
    service.collect_once()
    assert [r.getMessage() for r in caplog.records] == [
        "phase groups failing: group g0: not authorized (and 1999 more)"
    ]


def test_a_collection_longer_than_the_interval_is_said_once_and_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The gauge follows each collection; the log says it overran once, and that collections fit
    again once they have for FIT_AGAIN_SECONDS in a row (a collection that fits between two that
    overrun is no end)."""
    good = snapshot("healthy")
    fit_again_after = round(FIT_AGAIN_SECONDS / 2)  # collections of the 2-s interval
    # Seconds, not tenths: on a loaded machine a collection that does not sleep must still fit.
    pauses = [0.0, 2.6, 0.0, 2.6, *[0.0] * fit_again_after]

    def collect(timeout: float) -> ClusterSnapshot:
        time.sleep(pauses.pop(0))
        return good

    service = CollectionService(collect, interval=2.0, timeout=5)
    caplog.set_level(logging.INFO, logger="vigia.exporter.service")
    with TestClient(create_app(service, manage_service=False)) as client:
        seen = []
        for n in range(len(pauses)):
            service.collect_once()
            found = samples(client.get("/metrics").text)
            seen.append(value(found, "vigia_exporter_collection_overrunning"))
            assert value(found, "vigia_exporter_collection_interval_seconds") == 2.0
            if n == 2 + fit_again_after:  # one collection short of a minute of fitting ones
                assert len(caplog.records) == 1, "said to fit again too soon"
    assert seen == [0, 1, 0, 1, *[0] * fit_again_after]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert re.match(r"a collection took \d+\.\d s, longer than the 2 s interval", lines[0])
    assert lines[1].startswith(
        f"collections fit in the 2 s interval again (the last {fit_again_after};"
    )


def test_metrics_are_rendered_once_per_collection_and_only_when_scraped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vigia.exporter.web.app

    rendered: list[object] = []

    def counting_render(state: object, granularity: Granularity = DEFAULT) -> bytes:
        rendered.append(state)
        return real_render(state, granularity)  # type: ignore[arg-type]

    real_render = vigia.exporter.web.app.render_bytes
    monkeypatch.setattr(vigia.exporter.web.app, "render_bytes", counting_render)
    service = CollectionService(FakeCluster(snapshot("healthy")).adapter().collect, 60, 5)
    with TestClient(create_app(service, manage_service=False)) as client:
        service.collect_once()
        service.collect_once()  # nobody scraped the first one: it is never rendered
        assert rendered == []
        first, second = client.get("/metrics"), client.get("/metrics")
        assert rendered == [service.state]
        assert first.content == second.content
        # The default granularity: per-topic state families, no per-partition ones.
        names = {name for name, _ in samples(first.text)}
        assert "kafka_topic_under_replicated_partitions" in names
        assert "kafka_topic_partition_under_replicated_partition" not in names
        service.collect_once()
        client.get("/metrics")
        assert len(rendered) == 2


def test_the_per_state_caches_keep_no_older_state_alive() -> None:
    """Issue 24 §4: a state is ≈15 MB at 2,000 groups; the caches of /metrics and the JSON hold
    the states they were built for weakly, so only the service's latest one stays."""
    service = CollectionService(FakeCluster(snapshot("healthy")).adapter().collect, 60, 5)
    with TestClient(create_app(service, manage_service=False)) as client:
        service.collect_once()
        first = client.get("/metrics").content
        assert client.get("/api/v1/cluster").status_code == 200
        assert service.state is not None
        older = weakref.ref(service.state)
        service.collect_once()
        assert client.get("/metrics").content.startswith(first[:100])
        assert client.get("/api/v1/cluster").status_code == 200
        gc.collect()
        assert older() is None
