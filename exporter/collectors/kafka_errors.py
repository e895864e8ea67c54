"""The last collection's errors by kind, so that an alert can tell rejected credentials or TLS
settings (nothing works until someone changes them) from an unreachable or partial cluster."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from vigia.common.kafka_errors import KINDS, kind_of
from vigia.exporter.collectors.base import StateCollector, gauge
from vigia.exporter.model.state import ExporterState

OTHER = "other"
LAST_COLLECTION_ERRORS_HELP = (
    "Errors of the last collection by kind: authentication (SASL rejected), tls (handshake "
    "failed: unknown CA, hostname mismatch, ...), authorization (an ACL denies it), transport "
    "(unreachable, timed out), other. Always 5 series; /api/v1/cluster errors say more."
)


class KafkaErrorCollector(StateCollector):
    def families(self, state: ExporterState) -> Iterator[Metric]:
        counts = dict.fromkeys((*KINDS, OTHER), 0)
        for error in state.snapshot.errors:
            counts[kind_of(error.message) or OTHER] += 1
        yield gauge(
            "vigia_exporter_last_collection_errors", LAST_COLLECTION_ERRORS_HELP, ["kind"], counts
        )
