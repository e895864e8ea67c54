"""`vigia-simulate` as operators run it: bad configuration, no cluster, and a real run against
librdkafka's mock cluster read back by a consumer."""

from __future__ import annotations

import datetime as dt
import json
import logging
import signal
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Message
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import MockCluster, free_port
from tests.scripts import console_script
from vigia.ingest.schema import MAGNITUDES, REASONS
from vigia.ingest.simulator.cli import main, parse_args
from vigia.ingest.simulator.generator import generate_day

DAY = dt.date(2026, 11, 20)


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["backfill", "--meters", "0"], {}, "--meters"),
        (["backfill", "--malformed-ratio", "1.5"], {}, "not a ratio"),
        (["backfill", "--start-date", "20/11/2026"], {}, "--start-date"),
        (["live", "--speed", "0"], {}, "--speed"),
        (["backfill"], {"VIGIA_SIMULATE_DAYS": "two"}, "--days"),
        (["backfill", "--kafka-option", "acks"], {}, "KEY=VALUE"),
        (["backfill", "--manifest", "/nowhere/at/all/m.json"], {}, "does not exist"),
        (["rewind"], {}, "invalid choice"),
        (["live", "--sink", "hes", "--hes-dsn-file", "/nowhere/dsn"], {}, "--hes-dsn-file"),
        (["live", "--sink", "hes"], {"VIGIA_HES_DSN_FILE": "/nowhere/dsn"}, "cannot read"),
        ([], {}, "required"),
    ],
)
def test_invalid_configuration_exits_2_with_one_line(
    argv: list[str],
    env: dict[str, str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level(logging.ERROR):
        assert main(argv) == 2
    (record,) = caplog.records
    assert message in record.getMessage() and "\n" not in record.getMessage()


def test_the_hes_dsn_comes_from_a_file_unless_given_itself(tmp_path: Path) -> None:
    dsn_file = tmp_path / "writer.dsn"
    dsn_file.write_text("mysql://hes_writer:secret@127.0.0.1:3306/hes\n")
    args = parse_args(["live", "--sink", "hes", "--hes-dsn-file", str(dsn_file)])
    assert (args.hes.user, args.hes.password, args.hes.port) == ("hes_writer", "secret", 3306)
    given = "mysql://other:pw@127.0.0.1:3307/hes"
    args = parse_args(["live", "--hes-dsn", given, "--hes-dsn-file", str(dsn_file)])
    assert args.hes.user == "other"


def test_an_unreachable_cluster_fails_fast_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    nobody = f"127.0.0.1:{free_port()}"
    began = time.monotonic()
    with caplog.at_level(logging.ERROR):
        code = main(
            [
                *("backfill", "--bootstrap-servers", nobody, "--connect-timeout", "1"),
                *("--metrics-port", "0", "--meters", "1"),
            ]
        )
    assert code == 1
    assert time.monotonic() - began < 10
    errors = [r.getMessage() for r in caplog.records if r.name == "vigia.simulate"]
    assert errors == [errors[0]] and errors[0].startswith(f"cannot reach Kafka at {nobody}")


def test_in_process_runs_leave_signal_handlers_alone(
    mock_cluster: MockCluster, tmp_path: Path
) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    argv = ["backfill", "--bootstrap-servers", mock_cluster.bootstrap_servers, "--meters", "1"]
    argv += ["--metrics-port", "0", "--manifest", str(tmp_path / "m.json"), "--seed", "3"]
    assert main(argv) == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert json.loads((tmp_path / "m.json").read_text())["valid_total"] == 96 * 4


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("vigia_simulator_")
    }


def _fields(message: Message) -> tuple[bytes, bytes, int]:
    key, value, partition = message.key(), message.value(), message.partition()
    assert key is not None and value is not None and partition is not None
    return key, value, partition


def _read_topic(bootstrap: str, topic: str, expected: int) -> list[tuple[bytes, bytes, int]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "simulator-test",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[tuple[bytes, bytes, int]] = []
    deadline = time.monotonic() + 60
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for message in consumer.consume(5000, timeout=1.0):
                assert message.error() is None, message.error()
                out.append(_fields(message))
        # Anything beyond what the manifest says would be a duplicate send.
        out.extend(_fields(message) for message in consumer.consume(5000, 2.0))
    finally:
        consumer.close()
    return out


def test_backfill_to_the_mock_cluster_matches_manifest_and_metrics(
    mock_cluster: MockCluster, tmp_path: Path
) -> None:
    script = console_script("vigia-simulate")
    manifest_path, port, meters = tmp_path / "manifest.json", free_port(), 20
    command = [
        script,
        "backfill",
        *("--bootstrap-servers", mock_cluster.bootstrap_servers),
        *("--topic", "measure-sim-test", "--meters", str(meters), "--start-date", str(DAY)),
        *("--malformed-ratio", "0.02", "--duplicate-ratio", "0.01", "--seed", "42"),
        *("--manifest", str(manifest_path), "--metrics-port", str(port)),
        *("--metrics-linger", "60"),
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not manifest_path.exists():
            assert process.poll() is None, f"exited early: {process.communicate()[1]}"
            assert time.monotonic() < deadline, "no manifest after 60 s"
            time.sleep(0.1)
        metrics = _scrape(port)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr

    manifest = json.loads(manifest_path.read_text())
    assert manifest["meters"] == {"prefix": "UY", "first": 1, "count": meters, "width": 6}
    assert manifest["valid"] == {str(DAY): dict.fromkeys(MAGNITUDES, meters * 96)}
    assert manifest["failed"] == 0
    assert manifest["duplicates"] == meters * 96 * 4 // 100
    assert set(manifest["malformed"]) == {r.value for r in REASONS}
    assert all(count > 0 for count in manifest["malformed"].values())
    assert manifest["produced"] == (
        manifest["valid_total"] + manifest["duplicates"] + manifest["malformed_total"]
    )
    assert (manifest["first_ts"], manifest["last_ts"][:13]) >= (f"{DAY}T00:15:00Z", "2026-11-21T00")

    assert (
        metrics[("vigia_simulator_messages_total", (("outcome", "produced"),))]
        == manifest["produced"]
    )
    assert metrics[("vigia_simulator_messages_total", (("outcome", "failed"),))] == 0
    assert metrics[("vigia_simulator_duplicate_messages_total", ())] == manifest["duplicates"]
    assert metrics[("vigia_simulator_pending_messages", ())] == 0
    for reason, count in manifest["malformed"].items():
        assert metrics[("vigia_simulator_malformed_messages_total", (("reason", reason),))] == count

    consumed = _read_topic(mock_cluster.bootstrap_servers, "measure-sim-test", manifest["produced"])
    assert len(consumed) == manifest["produced"]
    expected_values = {value: key for key, value in generate_day(meters, DAY, seed=42)}
    seen = Counter(value for _, value, _ in consumed if value in expected_values)
    assert len(seen) == meters * 96 * 4 and set(seen.values()) == {1}
    per_magnitude = Counter(json.loads(value)["magnitude"] for value in seen)
    assert per_magnitude == Counter(dict.fromkeys(MAGNITUDES, meters * 96))
    others = [value for _, value, _ in consumed if value not in expected_values]
    assert len(others) == manifest["duplicates"] + manifest["malformed_total"]
    partitions: defaultdict[bytes, set[int]] = defaultdict(set)
    for key, _, partition in consumed:
        partitions[key].add(partition)
    assert all(len(p) == 1 for p in partitions.values())  # keyed by meter: one partition each
    assert len({p for ps in partitions.values() for p in ps}) > 1
