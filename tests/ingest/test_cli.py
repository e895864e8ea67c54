"""`vigia-ingest`: bad configuration exits 2; an unusable cluster or path exits 1, one sentence."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.conftest import MockCluster
from tests.ingest.conftest import create_topic
from vigia.ingest.cli import main
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import failure_sentence, run_job


def paths(tmp_path: Path) -> list[str]:
    return [
        "--output",
        str(tmp_path / "measure"),
        "--quarantine",
        str(tmp_path / "quarantine"),
        "--checkpoint",
        str(tmp_path / "checkpoint"),
        "--metrics-port",
        "0",
    ]


def test_invalid_configuration_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIGIA_KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("VIGIA_INGEST_BOOTSTRAP_SERVERS", raising=False)
    assert main(["run"]) == 2
    assert capsys.readouterr().err == (
        "vigia-ingest: --bootstrap-servers (or VIGIA_KAFKA_BOOTSTRAP_SERVERS) is required\n"
    )
    assert main(["run", "--bootstrap-servers", "b:9092", "--trigger-interval", "soon"]) == 2
    assert main(["explode"]) == 2


def test_missing_topic_is_one_sentence_without_a_stack_trace(
    mock_cluster: MockCluster, tmp_path: Path
) -> None:
    create_topic(mock_cluster.bootstrap_servers, "other")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vigia.ingest.cli",
            "run",
            "--bootstrap-servers",
            mock_cluster.bootstrap_servers,
            "--topic",
            "nope",
            *paths(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1
    assert errors[0].endswith(
        f"topic 'nope' does not exist on the Kafka cluster at {mock_cluster.bootstrap_servers}"
        " (waited 10 s for it)"
    )
    assert "Traceback" not in result.stderr


def test_unreachable_cluster_fails_within_the_kafka_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    argv = ["run", "--bootstrap-servers", "127.0.0.1:1", "--kafka-timeout", "1s", *paths(tmp_path)]
    assert main(argv) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert re.fullmatch(
        r"cannot reach the Kafka cluster at 127\.0\.0\.1:1: Failed to get metadata: Local: Broker "
        r"transport failure \(still failing after 1\.\d s and \d+ tr(y|ies)\)",
        errors[0],
    ), errors[0]


@pytest.mark.spark
def test_unwritable_output_fails_with_one_sentence(
    spark: SparkSession,
    mock_cluster: MockCluster,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    create_topic(mock_cluster.bootstrap_servers)
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where a directory should be")
    config = IngestConfig(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        output=str(blocker / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        metrics_port=0,
    )
    caplog.set_level(logging.ERROR)
    assert run_job(config, spark) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert errors[0].startswith(f"the output path {blocker}/measure is not writable (")

    caplog.clear()
    builtin = replace(config, output=str(tmp_path / "measure"), source="spark-kafka")
    assert run_job(builtin, spark) == 1
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "Spark's built-in Kafka source is not on the classpath (the spark-sql-kafka-0-10 "
        "package); use --source python-kafka"
    ]


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        (
            "[STREAM_FAILED] Query [id = 1] terminated with exception: Traceback (most recent call "
            'last):\n  File "source.py", line 9\ningest.kafka_source.adapter.KafkaSourceError: '
            "VIGIA_KAFKA_SOURCE_ERROR: data loss: measure-0: offsets [0, 5) are no longer "
            "available (retention)\n\tat org.apache.spark.Foo(Foo.scala:1)",
            "data loss: measure-0: offsets [0, 5) are no longer available (retention)",
        ),
        (
            "[FOREACH_BATCH_USER_FUNCTION_ERROR] ...\ningest.sinks.SinkError: could not move a "
            "to b\n\tat org.apache.spark.Foo(Foo.scala:1)",
            "could not move a to b",
        ),
        (
            "\n  [STREAM_FAILED] something Spark-internal\n\tat x",
            "[STREAM_FAILED] something Spark-internal",
        ),
    ],
)
def test_failure_sentence_finds_ours_in_sparks_wrapping(text: str, sentence: str) -> None:
    assert failure_sentence(RuntimeError(text)) == sentence
