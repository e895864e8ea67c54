"""`vigia-ingest run` configuration: defaults, environment, flags (they win), one-line errors."""

from __future__ import annotations

import pytest

from vigia.ingest.config import ConfigError, IngestConfig, load_config

SERVERS = ["--bootstrap-servers", "b1:9092"]


def test_defaults() -> None:
    config = load_config(SERVERS, environ={})
    assert config == IngestConfig(bootstrap_servers="b1:9092")
    assert config.topic == "measure"
    assert config.trigger_interval == 30.0
    assert config.max_offsets_per_trigger == 1_000_000
    assert config.driver_memory == "2g"
    assert config.available_now is False
    assert config.starting_offsets == "earliest"
    assert config.fail_on_data_loss is True
    assert config.group_id == "vigia-ingest"
    assert config.source == "python-kafka"
    assert (config.metrics_address, config.metrics_port) == ("127.0.0.1", 9310)


def test_environment_then_flags() -> None:
    environ = {
        "VIGIA_KAFKA_BOOTSTRAP_SERVERS": "shared:9092",
        "VIGIA_INGEST_OUTPUT": "s3a://bucket/measure",
        "VIGIA_INGEST_TRIGGER_INTERVAL": "1m",
        "VIGIA_INGEST_MAX_OFFSETS_PER_TRIGGER": "500000",
        "VIGIA_INGEST_AVAILABLE_NOW": "true",
        "VIGIA_INGEST_FAIL_ON_DATA_LOSS": "false",
        "VIGIA_INGEST_METRICS_PORT": "19310",
        "VIGIA_INGEST_DRIVER_MEMORY": "3G",
        "VIGIA_KAFKA_OPTIONS": "security.protocol=SASL_SSL,sasl.username=env",
    }
    config = load_config([], environ)
    assert config.bootstrap_servers == "shared:9092"
    assert config.output == "s3a://bucket/measure"
    assert config.trigger_interval == 60.0
    assert config.max_offsets_per_trigger == 500_000
    assert config.available_now is True
    assert config.fail_on_data_loss is False
    assert config.metrics_port == 19310
    assert config.driver_memory == "3G"
    assert config.kafka_options == {"security.protocol": "SASL_SSL", "sasl.username": "env"}

    flagged = load_config(
        [
            "--bootstrap-servers",
            "flag:9092",
            "--trigger-interval",
            "500ms",
            "--fail-on-data-loss",
            "--kafka-option",
            "sasl.username=flag",
            "--source",
            "spark-kafka",
            "--starting-offsets",
            '{"measure": {"0": 5}}',
        ],
        {**environ, "VIGIA_INGEST_BOOTSTRAP_SERVERS": "ingest:9092"},
    )
    assert flagged.bootstrap_servers == "flag:9092"
    assert flagged.trigger_interval == 0.5
    assert flagged.fail_on_data_loss is True
    assert flagged.kafka_options["sasl.username"] == "flag"
    assert flagged.source == "spark-kafka"
    assert flagged.starting_offsets == '{"measure": {"0": 5}}'
    assert (
        load_config(
            [], {**environ, "VIGIA_INGEST_BOOTSTRAP_SERVERS": "ingest:9092"}
        ).bootstrap_servers
        == "ingest:9092"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "--bootstrap-servers"),
        ([*SERVERS, "--trigger-interval", "soon"], "is not a duration"),
        ([*SERVERS, "--trigger-interval", "0"], "must be positive"),
        ([*SERVERS, "--max-offsets-per-trigger", "-5"], "not a positive integer"),
        ([*SERVERS, "--metrics-port", "70000"], "not a TCP port"),
        ([*SERVERS, "--driver-memory", "2 GB"], "not a JVM size"),
        ([*SERVERS, "--driver-memory", "0g"], "not a JVM size"),
        ([*SERVERS, "--source", "kafka"], "not one of python-kafka, spark-kafka"),
        ([*SERVERS, "--starting-offsets", "yesterday"], "startingOffsets must be"),
        ([*SERVERS, "--kafka-option", "novalue"], "is not KEY=VALUE"),
        ([*SERVERS, "--log-level", "LOUD"], "log level"),
        ([*SERVERS, "--no-such-flag"], "unrecognized arguments"),
    ],
)
def test_invalid_configuration_is_one_line(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        load_config(argv, environ={})
    assert "\n" not in str(raised.value)
