"""--assumed-topic-config: a topic's retention taken as given where the cluster answers no
DescribeConfigs (librdkafka's mock cluster here), so that the outage budget has a limit to read."""

from __future__ import annotations

import pytest

from tests.conftest import MockCluster
from tests.exporter.test_exporter_mock_cluster import _produce
from vigia.exporter.config import ConfigError, assumed_topic_configs, parse_config
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.model.filters import Filters

WEEK_MS = "604800000"


def test_the_flag_and_its_environment_variable_give_each_topic_its_keys() -> None:
    flag = parse_config(["--assumed-topic-config", f"measure:retention.ms={WEEK_MS}"], {})
    assert flag.assumed_topic_configs == {"measure": {"retention.ms": WEEK_MS}}
    env = {
        "VIGIA_EXPORTER_ASSUMED_TOPIC_CONFIG": "a:retention.ms=1, a:cleanup.policy=delete,"
        "b:retention.bytes=9"
    }
    assert parse_config([], env).assumed_topic_configs == {
        "a": {"retention.ms": "1", "cleanup.policy": "delete"},
        "b": {"retention.bytes": "9"},
    }
    assert parse_config([], {}).assumed_topic_configs == {}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("measure", "is not TOPIC:KEY=VALUE"),
        ("measure:retention.ms=", "is not TOPIC:KEY=VALUE"),
        ("bad topic:retention.ms=1", "is not TOPIC:KEY=VALUE"),
        ("measure:segment.ms=1", "'segment.ms' is not one of"),
    ],
)
def test_a_malformed_assumption_is_a_configuration_error(raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        assumed_topic_configs(raw)


def test_the_assumed_retention_gives_a_cluster_without_describe_configs_an_outage_budget(
    mock_cluster: MockCluster,
) -> None:
    _produce(mock_cluster.bootstrap_servers, "measure", 20)
    _produce(mock_cluster.bootstrap_servers, "other", 20)
    adapter = KafkaAdapter(
        mock_cluster.bootstrap_servers,
        {},
        Filters(),
        assumed_configs={"measure": {"retention.ms": WEEK_MS}},
    )
    try:
        snapshot = adapter.collect(10.0)
    finally:
        adapter.close()
    assert snapshot.capabilities.get("describe_configs") is False
    configs = {t.name: dict(t.configs) for t in snapshot.topics}
    assert configs["measure"] == {"retention.ms": WEEK_MS}
    assert configs["other"] == {}
