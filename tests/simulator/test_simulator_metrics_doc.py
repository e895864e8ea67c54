"""docs/metrics.md lists exactly the families the simulator serves, with their types and labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from tests.metrics_doc import documented, served
from vigia.ingest.simulator.delivery import DeliveryTally
from vigia.ingest.simulator.metrics import RunState, SimulatorCollector


def test_simulator_families_match_docs() -> None:
    registry = CollectorRegistry()
    registry.register(SimulatorCollector(DeliveryTally(), RunState(), pending=lambda: 0))
    code = served([generate_latest(registry).decode()])
    doc = documented(("vigia_simulator_",))
    assert len(doc) == 6
    assert code == doc
