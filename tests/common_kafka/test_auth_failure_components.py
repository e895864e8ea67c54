"""Every component names a SASL failure in seconds, in one line, through Python logging.

librdkafka's mock cluster has no SASL: a client set to SASL_PLAINTEXT fails its handshake at once
with `_AUTHENTICATION` ("SASL Handshake not supported by broker"), which is what a real broker's
rejection looks like to the code under test (an authentication error event and FAIL log line; the
real broker's wording is covered in test_kafka_errors.py). The password is given, as the README
says, through VIGIA_KAFKA_OPTIONS, and must appear nowhere.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from tests.conftest import MockCluster
from tests.exporter.exposition import samples, value
from tests.ingest.test_cli import paths
from vigia.common.kafka_config import ENV_VAR, from_env
from vigia.exporter.collectors import exposition
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters
from vigia.exporter.probe.runner import ProbeRunner, ProbeSettings
from vigia.exporter.service import CollectionService
from vigia.ingest.kafka_source.adapter import KafkaAdmin, KafkaSourceError

PASSWORD = "s3cret-do-not-log"
OPTIONS = (
    f"security.protocol=SASL_PLAINTEXT,sasl.mechanism=SCRAM-SHA-512,"
    f"sasl.username=vigia,sasl.password={PASSWORD}"
)
SAID = "authentication failed for user vigia with mechanism SCRAM-SHA-512 ("
FAST = 5.0  # "within a few seconds"; the clients' own timeouts are all longer


@pytest.fixture(autouse=True)
def sasl_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, OPTIONS)


def said_once(caplog: pytest.LogCaptureFixture) -> None:
    lines = [r.getMessage() for r in caplog.records if SAID in r.getMessage()]
    assert lines and all("\n" not in line for line in lines)
    assert PASSWORD not in caplog.text


def test_simulator(mock_cluster: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    from vigia.ingest.simulator.cli import main

    began = time.monotonic()
    with caplog.at_level(logging.INFO):
        code = main(
            [
                *("backfill", "--bootstrap-servers", mock_cluster.bootstrap_servers),
                *("--connect-timeout", "30", "--metrics-port", "0", "--meters", "1"),
            ]
        )
    assert code == 1
    assert time.monotonic() - began < FAST
    errors = [r.getMessage() for r in caplog.records if r.name == "vigia.simulate"]
    assert len(errors) == 1
    assert errors[0].startswith(f"cannot use Kafka at {mock_cluster.bootstrap_servers}: {SAID}")
    said_once(caplog)


def test_ingest_run(
    mock_cluster: MockCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from vigia.ingest.cli import main

    began = time.monotonic()
    with caplog.at_level(logging.INFO):
        argv = ["run", "--bootstrap-servers", mock_cluster.bootstrap_servers, *paths(tmp_path)]
        assert main([*argv, "--kafka-timeout", "30s"]) == 1
    assert time.monotonic() - began < FAST
    errors = [
        r for r in caplog.records if r.levelno == logging.ERROR and r.name == "vigia.ingest.job"
    ]
    assert len(errors) == 1 and SAID in errors[0].getMessage(), caplog.text
    said_once(caplog)


def test_ingest_source_admin(mock_cluster: MockCluster) -> None:
    admin = KafkaAdmin(mock_cluster.bootstrap_servers, from_env(), "vigia-ingest", timeout_s=30)
    began = time.monotonic()
    with pytest.raises(KafkaSourceError) as raised:
        admin.partitions("measure")
    assert time.monotonic() - began < FAST
    assert raised.value.sentence.startswith(
        f"cannot use the Kafka cluster at {mock_cluster.bootstrap_servers}: {SAID}"
    )
    admin.close()


def test_exporter_api_and_metrics(
    mock_cluster: MockCluster, caplog: pytest.LogCaptureFixture
) -> None:
    from vigia.exporter.web import api

    adapter = KafkaAdapter(mock_cluster.bootstrap_servers, from_env(), Filters())
    service = CollectionService(adapter.collect, interval=60, timeout=20, probe=None)
    try:
        began = time.monotonic()
        with caplog.at_level(logging.INFO):
            service.collect_once()
        assert time.monotonic() - began < FAST
    finally:
        adapter.close()
    state = service.state
    assert state is not None
    errors = api.cluster_json(state)["errors"]
    assert [(e["phase"], e["kind"]) for e in errors] == [("metadata", "authentication")]
    assert errors[0]["message"].startswith(SAID) and errors[0]["message"].count(SAID) == 1
    found = samples(exposition(state))
    assert value(found, "vigia_exporter_last_collection_errors", kind="authentication") == 1
    assert value(found, "vigia_exporter_last_collection_errors", kind="transport") == 0
    assert value(found, "vigia_exporter_up") == 0
    said_once(caplog)
    assert PASSWORD not in exposition(state) + str(api.cluster_json(state))


def test_probe(mock_cluster: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    settings = ProbeSettings(request_timeout_seconds=30.0)
    runner = ProbeRunner(
        {"bootstrap.servers": mock_cluster.bootstrap_servers, **from_env()}, settings
    )
    caplog.set_level(logging.INFO)
    runner.start()
    try:
        give_up = time.monotonic() + FAST
        while SAID not in runner.status and time.monotonic() < give_up:
            time.sleep(0.1)
        assert runner.status.startswith(f"off: cannot read cluster metadata ({SAID}")
    finally:
        runner.stop()
    said_once(caplog)
