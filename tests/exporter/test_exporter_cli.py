"""Configuration: flags over environment, and exit code 2 with one line for every mistake."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import free_port
from vigia.exporter.config import ConfigError, parse_config
from vigia.exporter.model.granularity import DEFAULT, Granularity, Level, Replicas


def test_defaults() -> None:
    config = parse_config([], {})
    assert (config.bootstrap_servers, config.listen_address, config.port) == (
        "127.0.0.1:9092",
        "127.0.0.1",
        9308,
    )
    assert (config.collection_interval, config.collection_timeout) == (15.0, 10.0)
    assert config.filters.topics.allows("__consumer_offsets") and config.filters.groups.allows("x")
    assert dict(config.kafka_options) == {} and config.log_level == "INFO"
    assert config.lag_status_window == 10
    probe = config.probe
    assert (probe.enabled, probe.topic, probe.interval_seconds, probe.deadline_seconds) == (
        True,
        "vigia-probe",
        5.0,
        10.0,
    )
    assert probe.request_timeout_seconds == config.collection_timeout


def test_probe_and_lag_status_settings_from_environment_and_flags() -> None:
    env = {
        "VIGIA_PROBE_TOPIC": "ops.probe",
        "VIGIA_PROBE_INTERVAL": "2.5",
        "VIGIA_PROBE_DEADLINE": "4",
        "VIGIA_PROBE_ENABLED": "false",
        "VIGIA_EXPORTER_LAG_STATUS_WINDOW": "5",
    }
    from_env = parse_config([], env)
    assert not from_env.probe.enabled
    assert (from_env.probe.topic, from_env.probe.interval_seconds) == ("ops.probe", 2.5)
    assert (from_env.probe.deadline_seconds, from_env.lag_status_window) == (4.0, 5)
    flags = ["--probe", "--probe-topic", "p", "--probe-deadline", "3", "--lag-status-window", "2"]
    from_flags = parse_config(flags, env)
    assert from_flags.probe.enabled and from_flags.probe.topic == "p"
    assert (from_flags.probe.deadline_seconds, from_flags.lag_status_window) == (3.0, 2)
    assert not parse_config(["--no-probe"], {}).probe.enabled
    assert parse_config([], {"VIGIA_PROBE_ENABLED": "TRUE"}).probe.enabled


def test_source_watch_settings_from_environment_and_flags() -> None:
    """The HES leg's look interval and stall verdict (exporter.model.pipeline_flow)."""
    source = parse_config([], {}).source
    assert (source.interval, source.connector, source.stall_after) == (15.0, "hes-measure", 30.0)
    env = {
        "VIGIA_EXPORTER_HES_INTERVAL": "20",
        "VIGIA_EXPORTER_PIPELINE_CONNECTOR": "cdc-measure",
        "VIGIA_EXPORTER_STALL_AFTER": "45",
    }
    source = parse_config([], env).source
    assert (source.interval, source.connector, source.stall_after) == (20.0, "cdc-measure", 45.0)
    source = parse_config(["--pipeline-connector", "x", "--stall-after=60"], env).source
    assert (source.connector, source.stall_after) == ("x", 60.0)


def test_binlog_margin_settings() -> None:
    source = parse_config([], {}).source
    assert (source.offsets_topic, source.binlog_interval, source.binlog_floor) == (
        "cdc-connect-offsets",
        60.0,
        21600.0,
    )
    env = {
        "VIGIA_EXPORTER_CONNECT_OFFSETS_TOPIC": "connect-offsets",
        "VIGIA_EXPORTER_BINLOG_INTERVAL": "30",
        "VIGIA_EXPORTER_BINLOG_RISK_FLOOR": "3600",
    }
    source = parse_config([], env).source
    assert (source.offsets_topic, source.binlog_interval, source.binlog_floor) == (
        "connect-offsets",
        30.0,
        3600.0,
    )
    assert parse_config(["--connect-offsets-topic="], env).source.offsets_topic == ""
    with pytest.raises(ConfigError, match="--binlog-interval"):
        parse_config(["--binlog-interval=0"], {})


def test_granularity_defaults_environment_and_flags() -> None:
    assert parse_config([], {}).granularity == DEFAULT
    env = {
        "VIGIA_EXPORTER_TOPIC_OFFSETS_GRANULARITY": "topic",
        "VIGIA_EXPORTER_PARTITION_STATE_GRANULARITY": "Partition",
        "VIGIA_EXPORTER_GROUP_OFFSETS_GRANULARITY": "topic",
        "VIGIA_EXPORTER_GROUP_LAG_GRANULARITY": "partition",
        "VIGIA_EXPORTER_REPLICA_SERIES": "off",
    }
    assert parse_config([], env).granularity == Granularity(
        Level.TOPIC, Level.PARTITION, Level.TOPIC, Level.PARTITION, Replicas.OFF
    )
    flags = ["--topic-offsets-granularity", "partition", "--replica-series=all"]
    assert parse_config(flags, env).granularity == Granularity(
        Level.PARTITION, Level.PARTITION, Level.TOPIC, Level.PARTITION, Replicas.ALL
    )


def test_flags_win_over_environment() -> None:
    env = {
        "VIGIA_KAFKA_BOOTSTRAP_SERVERS": "env:9092",
        "VIGIA_EXPORTER_PORT": "9999",
        "VIGIA_EXPORTER_TOPIC_EXCLUDE": "^__",
        "VIGIA_EXPORTER_GROUP_INCLUDE": "^vigia",
        "VIGIA_KAFKA_OPTIONS": "security.protocol=SASL_SSL,sasl.username=env",
        "VIGIA_LOG_LEVEL": "debug",
    }
    config = parse_config(
        ["--bootstrap-servers", "flag:9092", "--kafka-option", "sasl.username=flag"], env
    )
    assert config.bootstrap_servers == "flag:9092"
    assert config.port == 9999
    assert dict(config.kafka_options) == {"security.protocol": "SASL_SSL", "sasl.username": "flag"}
    assert not config.filters.topics.allows("__consumer_offsets") and config.filters.topics.allows(
        "measure"
    )
    assert config.filters.groups.allows("vigia-ingest") and not config.filters.groups.allows(
        "billing"
    )
    assert config.log_level == "DEBUG"


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--group-exclude", "[a-"], "--group-exclude: invalid regular expression '[a-'"),
        (
            ["--collection-timeout", "soon"],
            "--collection-timeout: 'soon' is not a number of seconds",
        ),
        (["--log-level", "chatty"], "--log-level: unknown level 'chatty'"),
        (["--topic-includ", "x"], "unrecognized arguments: --topic-includ x"),  # no abbreviations
        (["--lag-status-window", "1"], "--lag-status-window: must be at least 2, got 1"),
        (["--lag-status-window", "ten"], "--lag-status-window: 'ten' is not a whole number"),
        (["--probe-interval", "0"], "--probe-interval: must be more than 0 seconds"),
        (["--probe-deadline", "x"], "--probe-deadline: 'x' is not a number of seconds"),
        (["--probe-topic", "no spaces"], "--probe-topic: 'no spaces' is not a valid Kafka topic"),
        (["--stall-after", "-1"], "--stall-after: must be more than 0 seconds"),
        (
            ["--group-lag-granularity", "group"],
            "--group-lag-granularity: 'group' is not one of partition, topic",
        ),
        (
            ["--replica-series", "some"],
            "--replica-series: 'some' is not one of all, out-of-sync, off",
        ),
    ],
)
def test_config_errors_are_one_line(argv: list[str], reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(argv, {})
    assert str(raised.value).startswith(reason)
    assert "\n" not in str(raised.value)


def test_slow_phase_interval_default_environment_flag_and_zero() -> None:
    assert parse_config([], {}).slow_phase_interval == 60.0
    env = {"VIGIA_EXPORTER_SLOW_PHASE_INTERVAL": "120"}
    assert parse_config([], env).slow_phase_interval == 120.0
    assert parse_config(["--slow-phase-interval", "0"], env).slow_phase_interval == 0.0
    with pytest.raises(ConfigError, match=r"^--slow-phase-interval: must be 0 seconds or more"):
        parse_config(["--slow-phase-interval", "-1"], {})


def test_invalid_probe_enabled_environment_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^VIGIA_PROBE_ENABLED: 'maybe' is not true or false$"):
        parse_config([], {"VIGIA_PROBE_ENABLED": "maybe"})


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vigia.exporter.cli", "--bootstrap-servers", "127.0.0.1:1", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--topic-include", "("), "--topic-include: invalid regular expression '('"),
        (("--bogus",), "unrecognized arguments: --bogus"),
        (("--kafka-option", "nonsense"), "Kafka option 'nonsense' is not KEY=VALUE"),
        (
            ("--kafka-option", "no.such.property=1"),
            'invalid Kafka option: No such configuration property: "no.such.property"',
        ),
    ],
)
def test_invalid_configuration_exits_2_with_one_line(args: tuple[str, ...], reason: str) -> None:
    result = _run(*args)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"vigia-exporter: error: {reason}")
    assert result.stdout == ""


def test_port_in_use_exits_2_with_one_line() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = _run("--port", str(port))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"vigia-exporter: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


@pytest.mark.timeout(120)
def test_ctrl_c_stops_the_exporter_with_status_0_and_no_traceback() -> None:
    port = free_port()
    argv = ["--bootstrap-servers", "127.0.0.1:1", "--port", str(port), "--no-probe"]
    exporter = subprocess.Popen(
        [sys.executable, "-m", "vigia.exporter.cli", *argv, "--log-level", "WARNING"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and exporter.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                break
        except OSError:
            time.sleep(0.2)
    exporter.send_signal(signal.SIGINT)
    output, _ = exporter.communicate(timeout=60)
    assert exporter.returncode == 0, output
    assert "Traceback" not in output, output


def test_the_cluster_name_from_environment_and_flags() -> None:
    assert parse_config([], {}).cluster_name == "smartmeter"
    assert parse_config([], {"VIGIA_CLUSTER": "dr"}).cluster_name == "dr"
    assert parse_config(["--cluster", "prod"], {"VIGIA_CLUSTER": "dr"}).cluster_name == "prod"
    with pytest.raises(ConfigError, match="--cluster: 'a b' is not a name"):
        parse_config(["--cluster", "a b"], {})
