"""An exporter watched through broker restarts on a real cluster (issue 20 §0, §1; issue 10 §1):
one exporter process (probe on, on a topic of its own) whose every scrape is kept, so a test can
say `vigia_exporter_up` stayed 1 throughout. It runs on `secured_target`'s listener, as in
production, so the probe's preferred-leader elections go through it too.

A hundred groups with committed offsets are added first: their offsets are fetched from their
coordinators every collection (kafka-python, one OffsetFetch per coordinator), requests in flight
when their coordinator goes away. Listed EMPTY, they are not described; librdkafka, whose
coordinator requests hit a use-after-free when their coordinator moved
(benchmarks/rdkafka_coord_timeout_crash.py), describes only consumer-protocol groups. A hundred
rather than issue 20's few hundred, for the CI run's 45 minutes on two cores. The groups and the
probe topic are deleted at the end. Conditions are waited for with deadlines; "up stays 1" is
every scrape of a watcher that scrapes twice a second from the first complete collection on.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from tests.exporter.exposition import Samples, samples, value
from tests.exporter.live import Running, exporter_process, wait_for
from tests.realstack.groups import commit_groups, delete_groups
from tests.realstack.targets import BrokerControl, SecuredTarget
from tests.realstack.topics import create_topic
from vigia.common.kafka_config import ENV_VAR

pytestmark = pytest.mark.integration

GROUPS = 100
PARTITIONS = 6
DEADLINE = 240.0  # a node's start with a few thousand partitions to load, on a loaded machine
COLLECTION_INTERVAL = 2


@dataclass
class Watch:
    """Every scrape from the first complete collection on: (monotonic time, up or None when the
    scrape itself failed)."""

    looks: list[tuple[float, float | None]] = field(default_factory=list)
    first_look_at: str = ""  # wall clock, to find the exporter log's lines of a bad look
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self, exporter: Running) -> None:
        started = False
        while not self.stop.wait(0.5):
            try:
                up = value(
                    samples(httpx.get(f"{exporter.url}/metrics", timeout=5).text),
                    "vigia_exporter_up",
                )
            except (httpx.HTTPError, OSError):
                up = None
            started = started or up == 1
            if started:
                self.first_look_at = self.first_look_at or datetime.now().isoformat(" ")
                self.looks.append((time.monotonic(), up))

    def assert_up_throughout(self, exporter: Running) -> None:
        bad = [(round(t - self.looks[0][0]), up) for t, up in self.looks if up != 1]
        if bad:
            errors = exporter.get("/api/v1/cluster").json().get("errors")
            raise AssertionError(
                f"up not 1 in {len(bad)} of {len(self.looks)} scrapes (seconds after "
                f"{self.first_look_at}, value): "
                f"{bad[:20]}; errors now: {errors}; the exporter's own lines:\n"
                + _own_lines(exporter.log_text())
            )
        assert len(self.looks) > 10, "the watcher hardly scraped"


def _own_lines(log: str) -> str:
    """The exporter's state changes (librdkafka's connection lines left out): which collection
    failed, and why, when a CI log is all there is."""
    return "\n".join(line for line in log.splitlines() if "librdkafka" not in line)


@pytest.fixture(scope="module")
def groups(real_kafka_bootstrap: str) -> Iterator[list[str]]:
    """GROUPS groups with committed offsets on a topic of their own (no members)."""
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap})
    topic = f"vigia-it-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka_bootstrap, topic, PARTITIONS, replication=3)
    names = [f"{topic}-g{n}" for n in range(GROUPS)]
    commit_groups(
        admin, {name: [TopicPartition(topic, p, 0) for p in range(3)] for name in names}, DEADLINE
    )
    try:
        yield names
    finally:
        delete_groups(real_kafka_bootstrap, names, 60)
        admin.delete_topics([topic], request_timeout=60)[topic].exception(timeout=60)


@pytest.fixture
def watched(
    secured_target: SecuredTarget,
    groups: list[str],
    tmp_path: Path,
) -> Iterator[tuple[Running, Watch]]:
    """An exporter on the secured listener, with a probe topic of its own, short intervals and a
    probe round every second (5 s by default), so that "probes ok through every broker again" is
    seconds of waiting, not half a minute."""
    probe_topic = f"vigia-it-probe-{uuid.uuid4().hex[:8]}"
    options = dict(secured_target.options)
    env = {ENV_VAR: ",".join(f"{k}={v}" for k, v in options.items())}
    args = (
        *("--bootstrap-servers", secured_target.bootstrap),
        *("--collection-interval", str(COLLECTION_INTERVAL), "--probe-topic", probe_topic),
        *("--probe-interval", "1"),
    )
    watch = Watch()
    try:
        with exporter_process(tmp_path / "exporter.log", *args, env=env) as exporter:
            try:
                wait_for(
                    lambda: value(exporter.metrics(), "vigia_exporter_up") == 1,
                    DEADLINE,
                    "a first complete collection",
                )
            except AssertionError:
                errors = exporter.get("/api/v1/cluster").json().get("errors")
                raise AssertionError(f"never up 1: {errors}") from None
            thread = threading.Thread(target=watch.run, args=(exporter,), daemon=True)
            thread.start()
            try:
                yield exporter, watch
            finally:
                watch.stop.set()
                thread.join(10)
            assert "Assertion" not in exporter.log_text()
    finally:
        admin = AdminClient({"bootstrap.servers": secured_target.bootstrap, **options})
        admin.delete_topics([probe_topic], request_timeout=60)[probe_topic].exception(timeout=60)


def cluster_doc(exporter: Running) -> dict[str, Any]:
    doc: dict[str, Any] = exporter.get("/api/v1/cluster").json()
    return doc


def stop_and_start(
    exporter: Running, broker_control: BrokerControl, broker: int, down_seconds: float
) -> None:
    """Stops `broker`, waits until the exporter reports it down, keeps it down `down_seconds`,
    starts it and waits until it is back with its log dirs read."""
    broker_control.stop(broker)
    try:
        wait_for(
            lambda: value(exporter.metrics(), "kafka_broker_up", broker=str(broker)) == 0,
            DEADLINE,
            f"broker {broker} reported down",
        )
        time.sleep(down_seconds)  # the outage itself: what is measured is what happens during it
    finally:
        broker_control.start(broker)

    def back() -> Samples | None:
        found = exporter.metrics()
        dirs = [k for n, k in found if n == "kafka_broker_log_dir_size_bytes"]
        if value(found, "kafka_broker_up", broker=str(broker)) != 1:
            return None
        return found if any(k["broker"] == str(broker) for k in dirs) else None

    wait_for(back, DEADLINE, f"broker {broker} back with its log dirs")


def probe_ok(exporter: Running, broker: int) -> int:
    for entry in cluster_doc(exporter)["probe"]["brokers"]:
        if entry["broker"] == broker:
            return int(entry["messages"]["ok"])
    return 0


def down(exporter: Running, broker: int) -> Samples | None:
    found = exporter.metrics()
    return found if value(found, "kafka_broker_up", broker=str(broker)) == 0 else None
