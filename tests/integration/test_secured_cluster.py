"""Every component on a secured listener, with the right and a wrong password (the exporter through
a rolling restart on it: tests/integration/test_broker_restarts_real_cluster.py). On a real
cluster's secured listener (tests/realstack's `secured_target`: the harness's SASL_SSL listener
with SCRAM-SHA-512 and its own CA, or a user's, named by
VIGIA_TEST_KAFKA_SECURED_BOOTSTRAP_SERVERS and VIGIA_TEST_KAFKA_OPTIONS, the client settings as
VIGIA_KAFKA_OPTIONS takes them); the principal needs the README's ACLs for all three components.

Written for a busy shared cluster: every topic and group is named vigia-it-<random> and deleted at
the end, conditions are awaited with deadlines, counts are compared with values taken before.
Components run as subprocesses with the options in VIGIA_KAFKA_OPTIONS, as the README says.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from tests.exporter.exposition import value
from tests.exporter.live import Running, exporter_process, wait_for
from tests.realstack.targets import SecuredTarget
from tests.realstack.topics import create_topic
from vigia.common.kafka_config import ENV_VAR

pytestmark = pytest.mark.integration

FEW_SECONDS = 15.0  # "within a few seconds", with room for a loaded machine


@pytest.fixture
def bootstrap(secured_target: SecuredTarget) -> str:
    return secured_target.bootstrap


@pytest.fixture
def options(secured_target: SecuredTarget) -> dict[str, str]:
    return dict(secured_target.options)


@pytest.fixture
def wrong(options: dict[str, str]) -> dict[str, str]:
    if "sasl.password" not in options:
        pytest.skip("the secured listener's options have no sasl.password to get wrong")
    return {**options, "sasl.password": f"wrong-{uuid.uuid4().hex}"}


def env_with(options: dict[str, str]) -> dict[str, str]:
    return {**os.environ, ENV_VAR: ",".join(f"{k}={v}" for k, v in options.items())}


@pytest.fixture
def topic(bootstrap: str, options: dict[str, str]) -> Iterator[str]:
    name = f"vigia-it-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **options})
    create_topic(bootstrap, name, 3, options=options)
    try:
        yield name
    finally:
        for group in (name, f"{name}-reader"):
            admin.delete_consumer_groups([group], request_timeout=30)[group].exception(timeout=30)
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)


def run(args: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, float]:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - began


def simulator(bootstrap: str, topic: str, tmp_path: Path) -> list[str]:
    return [
        *(
            "vigia.ingest.simulator.cli",
            "backfill",
            "--bootstrap-servers",
            bootstrap,
            "--topic",
            topic,
        ),
        *("--meters", "2", "--metrics-port", "0", "--connect-timeout", "30"),
        *("--manifest", str(tmp_path / "manifest.json")),
    ]


def ingest(bootstrap: str, topic: str, tmp_path: Path) -> list[str]:
    return [
        *("vigia.ingest.cli", "run", "--bootstrap-servers", bootstrap, "--topic", topic),
        *("--group-id", topic, "--available-now", "--kafka-timeout", "30s"),
        *("--output", str(tmp_path / "out"), "--quarantine", str(tmp_path / "quarantine")),
        *("--checkpoint", str(tmp_path / "checkpoint")),
    ]


def said(options: dict[str, str]) -> str:
    mechanism = options.get("sasl.mechanism") or options.get("sasl.mechanisms", "GSSAPI")
    return (
        f"authentication failed for user {options.get('sasl.username')} with mechanism {mechanism}"
    )


def assert_clean(text: str, options: dict[str, str]) -> None:
    assert options.get("sasl.password", "\0") not in text, "a password reached the output"
    assert "%3|" not in text and "%4|" not in text, "raw librdkafka lines outside Python logging"


def test_every_component_works_on_the_secured_listener(
    bootstrap: str,
    options: dict[str, str],
    topic: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = env_with(options)
    code, out, _ = run(simulator(bootstrap, topic, tmp_path), env, 300)
    assert code == 0, out
    assert_clean(out, options)
    code, out, _ = run(ingest(bootstrap, topic, tmp_path), env, 900)
    assert code == 0, out
    assert_clean(out, options)

    probe_topic = f"{topic}-probe"
    monkeypatch.setenv(ENV_VAR, env[ENV_VAR])  # exporter_process passes its environment on
    try:
        with exporter_process(
            tmp_path / "exporter.log",
            *("--bootstrap-servers", bootstrap, "--probe-topic", probe_topic),
            *("--collection-interval", "5", "--probe-interval", "1"),
        ) as exporter:
            wait_for(
                lambda: value(exporter.metrics(), "vigia_exporter_up") == 1, 120, "exporter up"
            )
            wait_for(lambda: _probe(exporter)["status"] == "running", 120, "probe running")
            text = exporter.get("/metrics").text + exporter.get("/api/v1/cluster").text
            assert_clean(text + exporter.log_text(), options)
    finally:
        admin = AdminClient({"bootstrap.servers": bootstrap, **options})
        admin.delete_topics([probe_topic], operation_timeout=30)[probe_topic].exception(60)


def test_a_wrong_password_is_named_by_every_component(
    bootstrap: str,
    options: dict[str, str],
    wrong: dict[str, str],
    topic: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, expected = env_with(wrong), said(wrong)
    for args in (
        simulator(bootstrap, topic, tmp_path),
        ingest(bootstrap, topic, tmp_path),
    ):
        code, out, seconds = run(args, env, 120)
        assert code == 1, out
        assert seconds < FEW_SECONDS, f"{args[0]} took {seconds:.1f} s:\n{out}"
        assert expected in out, out
        assert_clean(out, wrong)

    monkeypatch.setenv(ENV_VAR, env[ENV_VAR])
    with exporter_process(
        tmp_path / "exporter.log",
        *("--bootstrap-servers", bootstrap, "--probe-topic", f"{topic}-probe"),
        *("--collection-interval", "5"),
    ) as exporter:
        began = time.monotonic()

        def named() -> bool:
            errors = (
                exporter.get("/api/v1/cluster").json()["errors"] if _collected(exporter) else []
            )
            return any(
                e["kind"] == "authentication" and e["message"].startswith(expected) for e in errors
            )

        wait_for(named, 60, "the exporter to name the authentication failure")
        assert time.monotonic() - began < FEW_SECONDS + 5
        assert (
            value(
                exporter.metrics(), "vigia_exporter_last_collection_errors", kind="authentication"
            )
            == 1
        )
        wait_for(lambda: expected in _probe(exporter)["status"], 60, "the probe to say it")
        assert expected in exporter.log_text()
        assert_clean(exporter.get("/metrics").text + exporter.log_text(), wrong)


def _collected(exporter: Running) -> bool:
    return exporter.get("/api/v1/cluster").status_code == 200


def _probe(exporter: Running) -> dict[str, Any]:
    if not _collected(exporter):
        return {"status": "starting", "coverage": [], "brokers": []}
    probe: dict[str, Any] = exporter.get("/api/v1/cluster").json()["probe"]
    return probe
