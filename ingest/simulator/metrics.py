"""The simulator's own /metrics (``--metrics-port``, 9311): what it delivered, how far behind it is.

- ``vigia_simulator_messages_total{outcome="produced"|"failed"}`` (counter): delivery reports.
- ``vigia_simulator_malformed_messages_total{reason}`` (counter): malformed records delivered, by
  the reason validation must reject them for (every reason always present).
- ``vigia_simulator_duplicate_messages_total`` (counter): corrections delivered.
- ``vigia_simulator_pending_messages`` (gauge): handed to the producer, not yet acknowledged.
- ``vigia_simulator_backlog_seconds`` (gauge): simulated seconds between the clock and the oldest
  reading not yet handed to the producer (live and outage modes; 0 in backfill).
- ``vigia_simulator_last_sent_timestamp_seconds`` (gauge): ts of the newest reading handed over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from vigia.ingest.schema import REASONS
from vigia.ingest.simulator.delivery import DeliveryTally


@dataclass
class RunState:
    """Gauges the runner keeps up to date (plain floats: one writer, readers tolerate staleness)."""

    backlog_seconds: float = 0.0
    last_sent_ts: float = 0.0


class SimulatorCollector(Collector):
    def __init__(self, tally: DeliveryTally, state: RunState, pending: Callable[[], int]) -> None:
        self._tally = tally
        self._state = state
        self._pending = pending

    def collect(self) -> Iterator[Metric]:
        snap = self._tally.snapshot()
        messages = CounterMetricFamily(
            "vigia_simulator_messages",
            "Messages whose delivery the brokers acknowledged (produced) or that failed",
            labels=["outcome"],
        )
        messages.add_metric(["produced"], snap.produced)
        messages.add_metric(["failed"], snap.failed)
        yield messages
        malformed = CounterMetricFamily(
            "vigia_simulator_malformed_messages",
            "Malformed records delivered, by the reason validation should reject them for",
            labels=["reason"],
        )
        for reason in REASONS:
            malformed.add_metric([reason.value], snap.malformed.get(reason, 0))
        yield malformed
        yield CounterMetricFamily(
            "vigia_simulator_duplicate_messages",
            "Corrections (re-sent readings with a later ts) delivered",
            value=snap.duplicates,
        )
        yield GaugeMetricFamily(
            "vigia_simulator_pending_messages",
            "Messages handed to the producer and not yet acknowledged",
            value=self._pending(),
        )
        yield GaugeMetricFamily(
            "vigia_simulator_backlog_seconds",
            "Simulated seconds between the clock and the oldest reading not yet sent",
            value=self._state.backlog_seconds,
        )
        yield GaugeMetricFamily(
            "vigia_simulator_last_sent_timestamp_seconds",
            "ts of the newest reading handed to the producer",
            value=self._state.last_sent_ts,
        )


class MetricsServer:
    """/metrics on its own thread; `stop()` closes the socket."""

    def __init__(self, address: str, port: int, collector: Collector) -> None:
        registry = CollectorRegistry()
        registry.register(collector)
        self._server, self._thread = start_http_server(port, addr=address, registry=registry)

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
