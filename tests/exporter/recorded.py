"""The recorded Kafka 4.0 scenarios as snapshots, and states derived from them in recording order.

Plain cached helpers rather than fixtures: tests/exporter is not a package, so a conftest here
could clash with other suites' conftest modules.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from tests.conftest import KAFKA_FIXTURES, SCENARIOS
from vigia.exporter.model.snapshot import ClusterSnapshot
from vigia.exporter.model.state import ExporterState, derive
from vigia.exporter.recording import load_snapshot


def fixture_path(scenario: str, suffix: str = ".json") -> Path:
    return KAFKA_FIXTURES / f"{scenario}{suffix}"


@cache
def snapshot(scenario: str) -> ClusterSnapshot:
    return load_snapshot(fixture_path(scenario))


@cache
def state(scenario: str) -> ExporterState:
    """The scenario derived after all earlier ones, as a running exporter would have seen them."""
    previous: ExporterState | None = None
    for name in SCENARIOS[: SCENARIOS.index(scenario) + 1]:
        previous = derive(previous, snapshot(name))
    assert previous is not None
    return previous
