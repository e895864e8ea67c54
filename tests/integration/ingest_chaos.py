"""The ingest job under broker chaos on a real cluster (issue 14): the brokers a test stops and
starts (tests/realstack's `broker_control`, remembering what it did and when), a chaos thread that
acts once the job has committed a batch, and the checks that every produced measure is stored once
and the group's committed offsets are the topic's end offsets."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from tests.realstack.targets import BrokerControl
from vigia.common import kafka_config
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import run_job
from vigia.ingest.kafka_source.adapter import KafkaAdmin
from vigia.ingest.schema import MEASURE_KEY_COLUMNS

IN_SYNC_TIMEOUT_S = 600.0
FIRST_BATCH_TIMEOUT_S = 600.0


@dataclass
class Brokers:
    """Stops and starts brokers (tests/realstack's broker_control); remembers what it did, and
    when."""

    bootstrap_servers: str
    control: BrokerControl
    events: list[tuple[float, str, int]] = field(default_factory=list)

    def stop(self, broker: int) -> None:
        self.control.stop(broker)
        self.events.append((time.monotonic(), "stop", broker))

    def start(self, broker: int) -> None:
        self.control.start(broker)
        self.events.append((time.monotonic(), "start", broker))

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap_servers, **kafka_config.from_env()})

    def ids(self) -> list[int]:
        return sorted(self.admin().list_topics(timeout=30).brokers)

    def partitions_led(self, name: str, broker: int) -> int:
        partitions = self.admin().list_topics(name, timeout=30).topics[name].partitions
        return Counter(p.leader for p in partitions.values())[broker]

    def wait_in_sync(self, name: str, broker: int) -> None:
        """Until ``broker`` is back in the metadata and every replica of topic ``name`` is in
        sync."""
        give_up = time.monotonic() + IN_SYNC_TIMEOUT_S
        while True:
            try:
                metadata = self.admin().list_topics(name, timeout=30)
                partitions = metadata.topics[name].partitions.values()
                if broker in metadata.brokers and all(
                    set(p.isrs) == set(p.replicas) for p in partitions
                ):
                    return
            except Exception:
                pass
            if time.monotonic() > give_up:
                raise AssertionError(
                    f"broker {broker} or the replicas of {name} not in sync after "
                    f"{IN_SYNC_TIMEOUT_S:g} s"
                )
            time.sleep(0.5)


@pytest.fixture
def brokers(real_kafka_bootstrap: str, broker_control: BrokerControl) -> Brokers:
    return Brokers(real_kafka_bootstrap, broker_control)


def job_config(servers: str, name: str, base: Path, batch_rows: int) -> IngestConfig:
    return IngestConfig(
        bootstrap_servers=servers,
        kafka_options=kafka_config.from_env(),
        topic=name,
        group_id=name,
        output=str(base / "measure"),
        quarantine=str(base / "quarantine"),
        checkpoint=str(base / "checkpoint"),
        available_now=True,
        max_offsets_per_trigger=batch_rows,
        trigger_interval=1.0,
        metrics_port=0,
    )


class Chaos(threading.Thread):
    """Runs ``action`` once ``done`` batches are committed (the next one is then running)."""

    def __init__(self, checkpoint: Path, done: int, action: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self._marker = checkpoint / "commits" / str(done - 1)
        self._action = action
        self.failures: list[BaseException] = []
        self.start()

    def run(self) -> None:
        give_up = time.monotonic() + FIRST_BATCH_TIMEOUT_S
        while not self._marker.exists():
            if time.monotonic() > give_up:
                return
            time.sleep(0.05)
        try:
            self._action()
        except BaseException as exc:
            self.failures.append(exc)


def check_stored_once_and_committed(config: IngestConfig, valid: int) -> None:
    measures = ds.dataset(config.output, partitioning="hive").to_table()
    assert measures.num_rows == valid
    assert measures.group_by(list(MEASURE_KEY_COLUMNS)).aggregate([]).num_rows == valid
    admin = KafkaAdmin(config.bootstrap_servers, config.kafka_options, config.group_id, 60)
    try:
        _, latest = admin.topic_watermarks([config.topic])
        assert admin.committed(latest) == latest
    finally:
        admin.close()


def run_through(
    session: SparkSession, config: IngestConfig, chaos: Chaos, brokers: Brokers
) -> float:
    """Run the job to the end; the time it ended. The chaos must have begun before that."""
    code = run_job(config, session)
    ended = time.monotonic()
    chaos.join(timeout=IN_SYNC_TIMEOUT_S * 4)
    assert not chaos.failures, chaos.failures
    assert code == 0
    assert brokers.events and brokers.events[0][0] < ended, (
        "the run ended before any broker was stopped: the test proved nothing"
    )
    return ended
