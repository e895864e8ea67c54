"""The Kafka side of the simulator: a confluent-kafka producer tuned for safe bulk delivery.

acks=all and idempotence: a delivered message is in every in-sync replica exactly once, even when
the client retries. Batching (linger, large batches, lz4) is what makes hundreds of thousands of
small messages per second possible.

Across a broker restart librdkafka retries by itself (idempotence allows unlimited retries, in
order) until message.timeout.ms, long enough for leadership to move away and back. What it cannot
retry is a fatal error (the idempotent producer lost its sequence, e.g. after an unclean leader
election): the producer is then unusable, so `send` fails with ProducerError instead of waiting
forever for room in a queue nothing drains any more, and what was queued is purged, each message
getting a failed delivery report.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Final

from confluent_kafka import KafkaError, KafkaException, Producer

from vigia.common.kafka_diagnostics import KafkaDiagnostics, KafkaUnavailable, wait_for_topic
from vigia.ingest.simulator.delivery import DeliveryCallback

log = logging.getLogger(__name__)

DEFAULTS: Final[dict[str, str | int | bool]] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 50,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 262_144,
    # A broker restart moves leadership within seconds; two minutes also rides out a slow one.
    "message.timeout.ms": 120_000,
}


class ProducerError(RuntimeError):
    """The cluster cannot take our messages (unreachable, topic missing, fatal producer error)."""


class KafkaSink:
    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        options: Mapping[str, str],
        connect_timeout: float,
    ) -> None:
        config: dict[str, str | int | bool] = {
            **DEFAULTS,
            "bootstrap.servers": bootstrap_servers,
            "socket.connection.setup.timeout.ms": int(connect_timeout * 1000),
            **options,
        }
        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self._connect_timeout = connect_timeout
        self._fatal: KafkaError | None = None
        self.diagnostics = KafkaDiagnostics(options, "vigia.ingest.simulator.librdkafka")
        try:
            self._producer = Producer(
                {**config, **self.diagnostics.client_config(), "error_cb": self._on_error}
            )
        except KafkaException as exc:
            raise ProducerError(f"invalid producer configuration: {exc.args[0].str()}") from exc
        self.delivery_timeout = float(config["message.timeout.ms"]) / 1000.0

    def check(self) -> int:
        """Fail fast, within the connect timeout, when the cluster or the topic is not there.
        Returns the topic's partition count."""
        try:
            # By name: where the cluster creates topics on first use, this creates it.
            topic = wait_for_topic(
                self._producer, self.diagnostics, self._connect_timeout, self.topic, True
            )
        except KafkaUnavailable as exc:
            raise ProducerError(
                exc.sentence(self.bootstrap_servers, self._connect_timeout)
            ) from exc
        if topic is None:
            raise ProducerError(
                f"topic {self.topic!r} does not exist on {self.bootstrap_servers} "
                f"(waited {self._connect_timeout:g} s for it)"
            )
        return len(topic.partitions)

    def _on_error(self, error: KafkaError) -> None:
        self.diagnostics.on_error(error)
        # Other errors (a broker down, ...) are librdkafka's to recover from; its log says so.
        if error.fatal() and self._fatal is None:
            self._fatal = error

    def _serve(self, timeout: float) -> None:
        """Serve delivery reports; a fatal error, which poll raises once, is kept for `send`."""
        try:
            self._producer.poll(timeout)
        except KafkaException as exc:
            self._on_error(exc.args[0])

    def _give_up(self, error: KafkaError) -> ProducerError:
        self._producer.purge()  # every queued message gets its failed delivery report
        self._serve(0)
        return ProducerError(f"the producer cannot go on: {error.str()}")

    def send(self, key: bytes, value: bytes, on_delivery: DeliveryCallback) -> None:
        """Queue one message; ProducerError when the producer can take no more, ever."""
        while True:
            if self._fatal is not None:
                raise self._give_up(self._fatal)
            try:
                self._producer.produce(self.topic, value, key, on_delivery=on_delivery)
                return
            except BufferError:
                # The local queue is full: serve delivery reports until there is room.
                self._serve(0.05)
            except KafkaException as exc:
                raise self._give_up(exc.args[0]) from exc

    def poll(self, timeout: float = 0.0) -> None:
        self._serve(timeout)

    def pending(self) -> int:
        return len(self._producer)

    def flush(self, timeout: float) -> int:
        """Wait for delivery reports; return how many messages are still undelivered."""
        deadline = time.monotonic() + timeout
        while self.pending() and time.monotonic() < deadline:
            if self._fatal is not None:
                self._give_up(self._fatal)  # nothing queued would ever be delivered
            try:
                self._producer.flush(min(1.0, max(0.0, deadline - time.monotonic())))
            except KafkaException as exc:
                self._on_error(exc.args[0])
        return self.pending()
