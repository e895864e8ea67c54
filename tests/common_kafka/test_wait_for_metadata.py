"""`wait_for_metadata` on a scripted client: slow answers, refusals, authentication failures."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from common.kafka_diagnostics import KafkaDiagnostics, KafkaUnavailable, wait_for_metadata

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
