"""The schema history check: a Debezium connector's history topic must keep everything
(exporter.model.schema_history, exporter.connect.schema_history)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.exporter.exposition import samples
from tests.metrics_doc import documented, served
from vigia.exporter.collectors.text_format import text
from vigia.exporter.connect.model import ConnectView, parse_status
from vigia.exporter.connect.schema_history import SchemaHistoryCollector
from vigia.exporter.connect.watcher import ConnectReport
from vigia.exporter.model.schema_history import REASONS, unsafe_reasons
from vigia.exporter.model.snapshot import Partition, Topic

SAFE = {
    "retention.ms": "-1",
    "retention.bytes": "-1",
    "cleanup.policy": "delete",
    "min.insync.replicas": "2",
}


@pytest.mark.parametrize(
    ("configs", "rf", "expected"),
    [
        (SAFE, 3, set()),
        ({**SAFE, "retention.ms": "604800000"}, 3, {"retention_ms"}),
        ({**SAFE, "retention.bytes": "1073741824"}, 3, {"retention_bytes"}),
        ({**SAFE, "cleanup.policy": "compact"}, 3, {"cleanup_policy"}),
        ({**SAFE, "cleanup.policy": "compact,delete"}, 3, {"cleanup_policy"}),
        ({**SAFE, "min.insync.replicas": "1"}, 3, {"min_insync_replicas"}),
        (SAFE, 1, {"replication_factor"}),
        (None, None, {"missing"}),
        ({}, 3, set()),  # configs not read: not judged
    ],
)
def test_unsafe_reasons(configs: dict[str, str] | None, rf: int | None, expected: set[str]) -> None:
    assert unsafe_reasons(configs, rf, 3, 2) == expected


def _topic(name: str, configs: dict[str, str], rf: int = 3) -> Topic:
    replicas = tuple(range(1, rf + 1))
    return Topic(name, False, (Partition(0, 1, replicas, replicas),), configs)


def _report(history_topic: str) -> ConnectReport:
    status = {
        "name": "hes-measure",
        "type": "source",
        "connector": {"state": "RUNNING", "worker_id": "w:8083"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w:8083"}],
    }
    info = {
        "config": {
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "schema.history.internal.kafka.topic": history_topic,
        },
        "tasks": [{"connector": "hes-measure", "task": 0}],
    }
    connector = parse_status(status, info)
    assert connector.schema_history_topic == history_topic
    return ConnectReport(ConnectView("connect", "http://w:8083", 0.0, connectors=(connector,)))


def _state(*topics: Topic) -> Any:
    return SimpleNamespace(snapshot=SimpleNamespace(topics=topics))


def test_a_finite_retention_is_flagged_per_reason() -> None:
    state = _state(
        _topic("measure", {**SAFE}),
        _topic("cdc-schemahistory-hes", {**SAFE, "retention.ms": "604800000"}, rf=1),
    )
    exposition = text(
        SchemaHistoryCollector([_report("cdc-schemahistory-hes"), None], state, "measure").collect()
    )
    found = {dict(labels)["reason"]: v for (_, labels), v in samples(exposition).items()}
    assert found == {r: float(r in ("retention_ms", "replication_factor")) for r in REASONS}


def test_a_missing_topic_and_no_collection() -> None:
    report = _report("gone")
    exposition = text(SchemaHistoryCollector([report], _state(_topic("m", SAFE)), "m").collect())
    assert {dict(labels)["reason"] for (_, labels), v in samples(exposition).items() if v} == {
        "missing"
    }
    assert not samples(text(SchemaHistoryCollector([report], None, "m").collect()))


def test_the_family_is_documented() -> None:
    state = _state(_topic("measure", SAFE), _topic("h", SAFE))
    code = served([text(SchemaHistoryCollector([_report("h")], state, "measure").collect())])
    assert code == documented(("vigia_hes_schema_history_",))
