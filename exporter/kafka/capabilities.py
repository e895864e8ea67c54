"""Which optional Kafka APIs the cluster supports, learnt from its answers.

An API the cluster does not support (librdkafka's mock cluster, several managed Kafka-compatible
services) is a fact about the cluster, not a failure of the exporter: the tracker remembers it,
the adapter stops asking for RECHECK_SECONDS (brokers get upgraded), and the families it feeds are
left out without a phase error. Each change is logged once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType

from confluent_kafka import KafkaError, KafkaException
from kafka import errors as kafka_errors

log = logging.getLogger(__name__)

RECHECK_SECONDS = 600.0
# librdkafka: _UNSUPPORTED_FEATURE when the broker's ApiVersions lack the API (what the mock
# answers for DescribeConfigs and DescribeGroups); UNSUPPORTED_VERSION when the broker rejects it.
_UNSUPPORTED_CODES = frozenset({KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION})


def is_unsupported(exc: object) -> bool:
    """True when the error (an exception, or a KafkaError as ListGroups lists them) says the
    cluster does not support the API, rather than that the call failed."""
    if isinstance(exc, kafka_errors.UnsupportedVersionError):  # IncompatibleBrokerVersion too
        return True
    kafka_error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    return isinstance(kafka_error, KafkaError) and kafka_error.code() in _UNSUPPORTED_CODES


class CapabilityTracker:
    """Thread-safe: the adapter's phases report from the collection pool concurrently."""

    def __init__(
        self,
        recheck_seconds: float = RECHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._recheck = recheck_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._known: dict[str, bool] = {}
        self._off_since: dict[str, float] = {}

    def should_ask(self, capability: str) -> bool:
        """False while the capability is off and was found off less than RECHECK_SECONDS ago."""
        with self._lock:
            since = self._off_since.get(capability)
        return since is None or self._clock() - since >= self._recheck

    def supported(self, capability: str) -> None:
        with self._lock:
            was = self._known.get(capability)
            self._known[capability] = True
            self._off_since.pop(capability, None)
        if was is False:
            log.info("the cluster supports %s again", capability)

    def unsupported(self, capability: str, reason: str) -> None:
        with self._lock:
            was = self._known.get(capability)
            self._known[capability] = False
            self._off_since[capability] = self._clock()
        if was is not False:
            # A fact about the cluster, shown as vigia_exporter_capability and "not available on
            # this cluster" in the Dash app: nothing for an operator to fix, so not a warning.
            log.info(
                "the cluster does not support %s (%s): its metrics are left out, "
                "vigia_exporter_capability{capability=%r} is 0; checking again every %g s",
                capability,
                reason,
                capability,
                self._recheck,
            )

    def snapshot(self) -> Mapping[str, bool]:
        with self._lock:
            return MappingProxyType(dict(self._known))
