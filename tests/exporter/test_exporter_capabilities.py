"""Capabilities (which optional APIs the cluster answers), expected brokers, kafka-python noise."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from confluent_kafka import KafkaError
from kafka import errors as kafka_errors

from tests.exporter.exposition import samples, value
from tests.exporter.fake_kafka import kafka_exception
from tests.exporter.recorded import snapshot
from vigia.exporter.collectors import render
from vigia.exporter.kafka.capabilities import CapabilityTracker, is_unsupported
from vigia.exporter.kafka.kafka_python_log import SELECTOR_LOGGER, quiet_kafka_python
from vigia.exporter.model.snapshot import Quorum, QuorumReplica
from vigia.exporter.model.state import derive


@pytest.mark.parametrize(
    ("error", "unsupported"),
    [
        (kafka_exception(KafkaError._UNSUPPORTED_FEATURE, "not supported by broker"), True),
        (kafka_exception(KafkaError.UNSUPPORTED_VERSION, "version"), True),
        (KafkaError(KafkaError._UNSUPPORTED_FEATURE), True),  # as ListGroups lists its errors
        (kafka_errors.IncompatibleBrokerVersion("DescribeLogDirsRequest"), True),
        (kafka_errors.UnsupportedVersionError(), True),
        (kafka_exception(KafkaError._TIMED_OUT, "timed out"), False),
        (kafka_exception(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "denied"), False),
        (kafka_errors.UnknownBrokerIdError(1), False),
        (TimeoutError(), False),
    ],
)
def test_only_errors_that_say_unsupported_count(error: object, unsupported: bool) -> None:
    assert is_unsupported(error) is unsupported


def test_a_missing_capability_is_asked_again_after_the_recheck_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    tracker = CapabilityTracker(recheck_seconds=600, clock=lambda: now[0])
    assert tracker.should_ask("describe_log_dirs") and tracker.snapshot() == {}
    with caplog.at_level(logging.INFO, logger="vigia.exporter.kafka.capabilities"):
        tracker.unsupported("describe_log_dirs", "IncompatibleBrokerVersion")
        now[0] = 599.0
        assert not tracker.should_ask("describe_log_dirs")
        now[0] = 600.0
        assert tracker.should_ask("describe_log_dirs")
        tracker.unsupported("describe_log_dirs", "IncompatibleBrokerVersion")  # still missing
        now[0] = 1300.0
        tracker.supported("describe_log_dirs")  # the brokers were upgraded
        tracker.supported("describe_log_dirs")
    assert tracker.snapshot() == {"describe_log_dirs": True}
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2  # one line per change, not per collection
    assert messages[0].startswith("the cluster does not support describe_log_dirs")
    assert messages[1] == "the cluster supports describe_log_dirs again"


def test_capabilities_are_served_as_a_labelled_gauge() -> None:
    off = replace(
        snapshot("healthy"),
        capabilities={"describe_log_dirs": False, "describe_configs": True},
    )
    found = samples(render(derive(None, off)))
    assert value(found, "vigia_exporter_capability", capability="describe_log_dirs") == 0
    assert value(found, "vigia_exporter_capability", capability="describe_configs") == 1
    assert value(found, "vigia_exporter_capability", capability="list_groups") is None  # unknown
    assert value(found, "vigia_exporter_up") == 1


def _voters(*ids: int) -> Quorum:
    return Quorum(2, tuple(QuorumReplica(i, None, None, None) for i in ids), ())


def test_expected_brokers_include_kraft_voters_only_when_they_are_brokers() -> None:
    healthy = snapshot("healthy")
    # Combined mode (the recordings): voter 4 is expected though it holds no replica.
    combined = derive(None, replace(healthy, quorum=_voters(1, 2, 3, 4)))
    assert dict(combined.broker_up) == {1: True, 2: True, 3: True, 4: False}
    # Dedicated controllers are not brokers: no series for them.
    dedicated = derive(None, replace(healthy, quorum=_voters(1001, 1002, 1003)))
    assert dict(dedicated.broker_up) == {1: True, 2: True, 3: True}
    # A broker that holds replicas and left the metadata, without any quorum information.
    down = derive(None, replace(snapshot("broker-down"), quorum=None))
    assert dict(down.broker_up) == {1: False, 2: True, 3: True}


def test_kafka_python_slow_task_warnings_are_demoted_to_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quiet_kafka_python()
    quiet_kafka_python()  # idempotent: one filter
    logger = logging.getLogger(SELECTOR_LOGGER)
    assert len(logger.filters) == 1
    slow = "Task %r ran for %.3fs (>%.3fs threshold). It is blocking the event loop -- likely"
    with caplog.at_level(logging.INFO, logger=SELECTOR_LOGGER):
        logger.warning(slow, "task", 0.155, 0.1)
        logger.warning("something else")
    assert [r.getMessage() for r in caplog.records] == ["something else"]
    with caplog.at_level(logging.DEBUG, logger=SELECTOR_LOGGER):
        logger.warning(slow, "task", 0.155, 0.1)
    assert caplog.records[-1].levelname == "DEBUG"


def test_kafka_python_connection_failures_are_left_to_the_exporters_own_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A broker stop made kafka-python log eight ERROR lines; the exporter says it once."""
    quiet_kafka_python()
    logger = logging.getLogger("kafka.net.manager")
    with caplog.at_level(logging.INFO, logger="kafka.net.manager"):
        logger.error("Connect attempt to <KafkaConnection node_id=2> returned error 111")
        logger.warning("Bootstrap connection to 127.0.0.1:9092 failed: refused")
        logger.info("Initializing connection for node_id 2")
    assert [r.getMessage() for r in caplog.records] == ["Initializing connection for node_id 2"]
    cluster = logging.getLogger("kafka.cluster")
    with caplog.at_level(logging.INFO, logger="kafka.cluster"):
        cluster.error("Metadata refresh: failed %s", "KafkaConnectionError: 111 ECONNREFUSED")
    assert [r.getMessage() for r in caplog.records] == ["Initializing connection for node_id 2"]
    with caplog.at_level(logging.DEBUG, logger="kafka.net.manager"):
        logger.error("Connect attempt to <KafkaConnection node_id=2> returned error 111")
    assert caplog.records[-1].levelname == "DEBUG"
