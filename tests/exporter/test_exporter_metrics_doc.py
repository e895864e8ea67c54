"""docs/metrics.md lists exactly the families the exporter serves, with their types and labels."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from tests.conftest import SCENARIOS
from tests.connect.test_connect_model import recorded_reports
from tests.exporter.recorded import snapshot, state
from tests.metrics_doc import Families, documented
from tests.metrics_doc import served as served_families
from vigia.exporter.collectors import render, render_pace, render_probe
from vigia.exporter.collectors.text_format import text
from vigia.exporter.connect.collector import render_connect
from vigia.exporter.model.granularity import FULL
from vigia.exporter.model.snapshot import BrokerLogDirs, Topic
from vigia.exporter.model.state import derive
from vigia.exporter.probe.collector import ProbeCollector
from vigia.exporter.probe.tracker import LatencyTracker, ProbeStats

# Families the exporter serves; the ingest job and simulator check their own sections.
EXPORTER_PREFIXES = ("kafka_", "vigia_exporter_", "vigia_probe_")


def probe_stats() -> ProbeStats:
    """A probe that measured one round trip through broker 1."""
    tracker = LatencyTracker()
    for acks in ("all", "1"):
        tracker.sent(acks, partition=0, broker=1, acks=acks, round_id=1, at=0.0)
        tracker.delivered(acks, at=0.002)
    tracker.received("all", at=0.01)
    return tracker.stats()


def served() -> Families:
    """Every family from every recorded scenario, a collection with phase timings and its pace, a
    group the exporter may not describe, a group that has not committed a partition it consumes, a
    broker that could not answer for its log dirs and a partition whose log start passed every
    committed offset, the probe both disabled and running, and the recorded Connect cluster."""
    healthy = snapshot("healthy")
    hidden = replace(healthy.groups[0], denied=("groups",))
    first, *rest = healthy.groups[1:]
    assert first.committed
    uncommitted = replace(first, committed=first.committed[1:])
    timed = replace(
        healthy,
        durations=MappingProxyType({"metadata": 0.1, "total": 0.5}),
        groups=(hidden, uncommitted, *rest),
        log_dirs=(BrokerLogDirs(1, "UnknownBrokerIdError: 1", ()), *healthy.log_dirs[1:]),
        topics=tuple(_deleted_to_latest(t) if t.name == "measure" else t for t in healthy.topics),
    )
    texts = [render(state(s), FULL) for s in SCENARIOS] + [
        render(derive(None, timed)),
        render(None),
    ]
    probe = ProbeCollector(probe_stats, lambda: "running", lambda: {1: True})
    texts += [render_probe(None), text(probe.collect()), render_pace(15, False)]
    texts.append(render_connect(recorded_reports()))
    return served_families(texts)


def _deleted_to_latest(topic: Topic) -> Topic:
    first, *rest = topic.partitions
    return replace(topic, partitions=(replace(first, earliest_offset=first.latest_offset), *rest))


def test_every_served_family_is_documented_and_every_documented_one_served() -> None:
    doc, code = documented(EXPORTER_PREFIXES), served()
    assert len(doc) > 30
    assert sorted(code.keys() - doc.keys()) == [], "served but missing from docs/metrics.md"
    assert sorted(doc.keys() - code.keys()) == [], "documented but not served"


def test_documented_types_and_labels_match_the_code() -> None:
    doc, code = documented(EXPORTER_PREFIXES), served()
    mismatches = {name: (doc[name], code[name]) for name in doc if doc[name] != code.get(name)}
    assert mismatches == {}
