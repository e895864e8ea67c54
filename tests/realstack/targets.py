"""What the real-system suites are handed: where the cluster, Connect and the HES are, and how to
stop and start a broker or the HES. The same whether the harness started them or a user points the
suites at their own (environment variables, docs/development.md#real-systems)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class BrokerControl(Protocol):
    def stop(self, broker: int) -> None:
        """Returns once the broker has stopped."""

    def start(self, broker: int) -> None:
        """Returns once the broker serves again."""


def broker_command(template: str, broker: int) -> str:
    """The one convention for a user's stop/start commands: `{broker}` becomes the broker id, and
    a command without it gets the id appended as its last argument."""
    return template.format(broker=broker) if "{broker}" in template else f"{template} {broker}"


@dataclass(frozen=True)
class ShellBrokers:
    """A user's cluster: VIGIA_TEST_KAFKA_BROKER_STOP / _START, run by the shell."""

    stop_command: str
    start_command: str

    def stop(self, broker: int) -> None:
        subprocess.run(
            broker_command(self.stop_command, broker), shell=True, check=True, timeout=300
        )

    def start(self, broker: int) -> None:
        subprocess.run(
            broker_command(self.start_command, broker), shell=True, check=True, timeout=300
        )


@dataclass(frozen=True)
class KafkaTarget:
    bootstrap: str
    brokers: BrokerControl | None = None
    jmx_urls: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SecuredTarget:
    """A SASL_SSL (or SSL, SASL_PLAINTEXT) listener and the client settings that reach it, in
    the form VIGIA_KAFKA_OPTIONS takes; the principal may do what the README's ACLs grant."""

    bootstrap: str
    options: dict[str, str]


@dataclass(frozen=True)
class ConnectTarget:
    url: str
    jmx_url: str = ""


@dataclass(frozen=True)
class HesTarget:
    dsn: str  # read-only (the exporter's source watch)
    writer_dsn: str = ""  # may INSERT into hes.measure
    signal_dsn: str = ""  # may INSERT into hes.debezium_signal (vigia-ingest repair)
    stop: Callable[[], None] | None = None
    start: Callable[[], None] | None = None


def shell(command: str) -> Callable[[], None]:
    def run() -> None:
        subprocess.run(command, shell=True, check=True, timeout=300)

    return run
