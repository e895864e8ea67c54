"""vigia_probe_* families as Prometheus serves them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from vigia.exporter.probe.collector import (
    COVERED_HELP,
    MESSAGES_HELP,
    PRODUCE_LATENCY_HELP,
    REPLICATION_LATENCY_HELP,
    ROUNDTRIP_LATENCY_HELP,
    UP_HELP,
    ProbeCollector,
)
from vigia.exporter.probe.tracker import LatencyTracker, ProbeStats


def stats() -> ProbeStats:
    tracker = LatencyTracker()
    for acks, latency in (("all", 0.004), ("1", 0.001)):
        tracker.sent(f"m-{acks}", partition=0, broker=2, acks=acks, round_id=1, at=0.0)
        tracker.delivered(f"m-{acks}", at=0.0, latency=latency)
    tracker.received("m-all", at=0.3)
    tracker.expire(100.0)
    return tracker.stats()


def scrape(collector: ProbeCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_families_labels_and_values() -> None:
    text = scrape(ProbeCollector(stats, lambda: "running", lambda: {1: False, 2: True}))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) == {
        "vigia_probe_broker_covered",
        "vigia_probe_up",
        "vigia_probe_produce_latency_seconds",
        "vigia_probe_replication_latency_seconds",
        "vigia_probe_roundtrip_latency_seconds",
        "vigia_probe_messages",
    }
    assert "# TYPE vigia_probe_messages_total counter" in text
    assert "# TYPE vigia_probe_produce_latency_seconds histogram" in text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    assert samples[("vigia_probe_up", ())] == 1
    assert families["vigia_probe_up"].documentation == UP_HELP
    produce = "vigia_probe_produce_latency_seconds"
    assert samples[(f"{produce}_count", (("acks", "all"), ("broker", "2")))] == 1
    assert samples[(f"{produce}_bucket", (("acks", "all"), ("broker", "2"), ("le", "0.0025")))] == 0
    assert samples[(f"{produce}_bucket", (("acks", "all"), ("broker", "2"), ("le", "0.005")))] == 1
    assert samples[(f"{produce}_bucket", (("acks", "1"), ("broker", "2"), ("le", "+Inf")))] == 1
    replication = samples[("vigia_probe_replication_latency_seconds", (("broker", "2"),))]
    assert abs(replication - 0.003) < 1e-9
    roundtrip = "vigia_probe_roundtrip_latency_seconds"
    assert samples[(f"{roundtrip}_sum", (("broker", "2"),))] == 0.3
    total = "vigia_probe_messages_total"
    assert samples[(total, (("broker", "2"), ("outcome", "ok")))] == 1
    assert samples[(total, (("broker", "2"), ("outcome", "lost")))] == 1
    assert samples[(total, (("broker", "2"), ("outcome", "failed")))] == 0
    assert samples[("vigia_probe_broker_covered", (("broker", "1"),))] == 0
    assert samples[("vigia_probe_broker_covered", (("broker", "2"),))] == 1
    assert families["vigia_probe_broker_covered"].documentation == COVERED_HELP
    assert families["vigia_probe_messages"].documentation == MESSAGES_HELP
    assert families[produce].documentation == PRODUCE_LATENCY_HELP
    assert families[roundtrip].documentation == ROUNDTRIP_LATENCY_HELP
    assert (
        families["vigia_probe_replication_latency_seconds"].documentation
        == REPLICATION_LATENCY_HELP
    )


def test_no_stats_only_up_0_and_registering_does_not_ask_for_anything() -> None:
    calls: list[str] = []

    def none() -> ProbeStats | None:
        calls.append("stats")
        return None

    def disabled() -> str:
        calls.append("status")
        return "disabled"

    registry = CollectorRegistry()
    registry.register(ProbeCollector(none, disabled))
    assert calls == []
    assert generate_latest(registry).decode() == (
        f"# HELP vigia_probe_up {UP_HELP}\n# TYPE vigia_probe_up gauge\nvigia_probe_up 0.0\n"
    )
    assert calls == ["status", "stats"]


def test_up_is_0_while_the_probe_is_off_even_with_counts() -> None:
    off = ProbeCollector(stats, lambda: "off: cannot create probe topic 'vigia-probe' (denied)")
    text = scrape(off)
    assert "vigia_probe_up 0.0" in text
    assert 'vigia_probe_messages_total{broker="2",outcome="ok"} 1.0' in text
