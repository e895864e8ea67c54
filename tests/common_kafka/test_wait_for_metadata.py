"""`wait_for_metadata` on a scripted client: slow answers, refusals, authentication failures."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from vigia.common.kafka_diagnostics import (
    KafkaDiagnostics,
    KafkaUnavailable,
    wait_for_metadata,
    wait_for_topic,
)

SASL = {"sasl.mechanism": "PLAIN", "sasl.username": "vigia", "sasl.password": "secret"}


class Client:
    """Answers list_topics only when given at least `needs` seconds; errors come from poll."""

    def __init__(self, needs: float, diagnostics: KafkaDiagnostics, event: Any = None) -> None:
        self.needs, self.diagnostics, self.event = needs, diagnostics, event
        self.timeouts: list[float] = []

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self.timeouts.append(timeout)
        if timeout >= self.needs:
            return "metadata"
        time.sleep(timeout)
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata"))

    def poll(self, timeout: float = -1) -> int:
        if self.event is not None:
            self.diagnostics.on_error(self.event)
        return 0


def test_a_slow_cluster_gets_longer_slices_until_it_answers() -> None:
    diagnostics = KafkaDiagnostics({}, "test.wait.librdkafka")
    client = Client(1.5, diagnostics)
    assert wait_for_metadata(client, diagnostics, timeout=10) == "metadata"
    assert client.timeouts == [0.5, 1.0, 2.0]


def test_an_authentication_failure_ends_the_wait_after_one_slice() -> None:
    diagnostics = KafkaDiagnostics(SASL, "test.wait.librdkafka")
    event = KafkaError(
        KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed"
    )
    client = Client(99, diagnostics, event)
    with pytest.raises(KafkaUnavailable) as raised:
        wait_for_metadata(client, diagnostics, timeout=30)
    assert not raised.value.timed_out and len(client.timeouts) == 1
    assert raised.value.cause.startswith(
        "authentication failed for user vigia with mechanism PLAIN"
    )
    assert "secret" not in raised.value.cause


def test_an_unreachable_cluster_times_out_with_the_last_error() -> None:
    diagnostics = KafkaDiagnostics({}, "test.wait.librdkafka")
    with pytest.raises(KafkaUnavailable) as raised:
        wait_for_metadata(Client(99, diagnostics), diagnostics, timeout=1.0)
    assert raised.value.timed_out
    assert raised.value.sentence("b:9092", 1.0) == (
        "cannot reach Kafka at b:9092 within 1 s (Failed to get metadata)"
    )


class Spreading:
    """Metadata in which topic `measure` shows up from the `known_from`-th answer on, as when the
    broker that answers has not heard of a topic created a moment ago."""

    def __init__(self, known_from: int) -> None:
        self.known_from, self.asked = known_from, 0

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self.asked += 1
        known = self.asked >= self.known_from
        topics = {"measure": SimpleNamespace(error=None, partitions={0: 0, 1: 1})} if known else {}
        return SimpleNamespace(topics=topics)

    def poll(self, timeout: float = -1) -> int:
        return 0


def test_a_topic_created_a_moment_ago_is_waited_for_and_the_wait_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    diagnostics = KafkaDiagnostics({}, "test.wait.librdkafka")
    client = Spreading(known_from=3)
    with caplog.at_level(logging.INFO, logger="vigia.common.kafka_diagnostics"):
        found = wait_for_topic(client, diagnostics, timeout=10, topic="measure")
    assert found is not None and sorted(found.partitions) == [0, 1]
    assert client.asked == 3
    waits = [r.getMessage() for r in caplog.records if "waiting up to" in r.getMessage()]
    assert len(waits) == 1 and waits[0].startswith("topic 'measure' not in the cluster's metadata")


def test_a_topic_that_never_appears_is_none_after_the_timeout() -> None:
    diagnostics = KafkaDiagnostics({}, "test.wait.librdkafka")
    began = time.monotonic()
    assert wait_for_topic(Spreading(10**9), diagnostics, timeout=1.2, topic="measure") is None
    assert 0.6 < time.monotonic() - began < 1.5


HANDSHAKE_CUT = (
    "sasl_ssl://127.0.0.1:9093/2: SSL handshake failed: Disconnected: connection reset by peer "
    "(connecting to a PLAINTEXT broker listener?) (after 2ms in state SSL_HANDSHAKE)"
)


def test_a_handshake_cut_short_is_a_wrong_listener_before_the_cluster_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    diagnostics = KafkaDiagnostics({}, "test.tls.librdkafka")
    diagnostics.log(logging.ERROR, HANDSHAKE_CUT)
    access = diagnostics.access_problem()
    assert access is not None and "does not speak TLS" in access.summary
    assert any(r.levelno == logging.ERROR for r in caplog.records)


def test_once_the_cluster_answered_over_tls_it_is_a_broker_going_away(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 20: a broker stopping mid-handshake during a rolling restart paged as a wrong
    security.protocol (an ERROR line, and the next collection gave up: up 0)."""
    diagnostics = KafkaDiagnostics({}, "test.tls.librdkafka")
    assert wait_for_metadata(Client(0.1, diagnostics), diagnostics, timeout=5) == "metadata"
    diagnostics.log(logging.ERROR, HANDSHAKE_CUT)
    assert diagnostics.access_problem() is None
    problem = diagnostics.problem
    assert problem is not None and problem.kind == "transport"
    assert "stopping or restarting" in problem.summary
    assert not any(r.levelno == logging.ERROR for r in caplog.records)
