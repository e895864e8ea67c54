"""ProbeRunner end to end against librdkafka's mock cluster (3 brokers, in-process or a child).

The mock has no controller, so CreateTopics/CreatePartitions time out, and it auto-creates topics
with 4 partitions on produce: these tests create the probe topic that way and check the runner's
"topic exists but cannot be altered" path. Lost detection is shown twice: with the probe consumer
stopped, and with every broker unreachable (the mock cluster runs in a child process that the test
freezes with SIGSTOP; the connections stay open but nothing answers).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.conftest import MockCluster
from vigia.exporter.probe.runner import ProbeRunner, ProbeSettings
from vigia.exporter.probe.tracker import ProbeStats

TOPIC = "vigia-probe"
FAST = ProbeSettings(
    topic=TOPIC,
    interval_seconds=0.2,
    deadline_seconds=1.5,
    reconcile_interval_seconds=60.0,
    request_timeout_seconds=0.5,
)
RUNNER_LOG = "vigia.exporter.probe.runner"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    give_up = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def create_topic_by_producing(bootstrap_servers: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    producer.produce(TOPIC, b"not a probe")  # also checks that foreign messages are ignored
    assert producer.flush(10) == 0


def leaders(bootstrap_servers: str) -> dict[int, int]:
    metadata = AdminClient({"bootstrap.servers": bootstrap_servers}).list_topics(TOPIC, timeout=5)
    return {p.id: p.leader for p in metadata.topics[TOPIC].partitions.values()}


def stats(runner: ProbeRunner) -> ProbeStats:
    result = runner.stats()
    assert result is not None
    return result


def count(runner: ProbeRunner, outcome: str) -> int:
    return sum(n for (_, o), n in stats(runner).messages.items() if o == outcome)


@pytest.fixture
def runners() -> Iterator[Callable[[str], ProbeRunner]]:
    started: list[ProbeRunner] = []

    def start(bootstrap_servers: str) -> ProbeRunner:
        runner = ProbeRunner({"bootstrap.servers": bootstrap_servers}, FAST)
        started.append(runner)
        runner.start()
        return runner

    yield start
    for runner in started:
        runner.stop()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("topic", "", "topic name"),
        ("interval_seconds", 0.0, "interval_seconds"),
        ("deadline_seconds", -1.0, "deadline_seconds"),
    ],
)
def test_invalid_settings_are_refused(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ProbeSettings(**{field: value})


def test_disabled_probe_starts_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=RUNNER_LOG)
    runner = ProbeRunner({"bootstrap.servers": "127.0.0.1:1"}, ProbeSettings(enabled=False))
    runner.start()
    assert runner.status == "disabled"
    assert runner.stats() is None
    assert "end-to-end probe disabled by configuration" in caplog.text
    runner.stop()


def test_clients_refusing_the_configuration_turn_the_probe_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=RUNNER_LOG)
    config = {"bootstrap.servers": "127.0.0.1:1", "fetch.wait.max.ms": "-5"}
    runner = ProbeRunner(config, FAST)
    runner.start()  # does not raise: the rest of the exporter keeps running
    assert runner.status.startswith("off: cannot create its Kafka clients (")
    assert "fetch.wait.max.ms" in runner.status and not runner.status.endswith("\n)")
    assert "end-to-end probe off: cannot create its Kafka clients" in caplog.text
    runner.stop()


def test_probe_is_off_and_says_why_when_the_topic_cannot_be_created(
    mock_cluster: MockCluster,
    runners: Callable[[str], ProbeRunner],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=RUNNER_LOG)
    runner = runners(mock_cluster.bootstrap_servers)
    wait_for(lambda: runner.status.startswith("off"), "the probe to give up")
    assert runner.status.startswith(f"off: cannot create probe topic {TOPIC!r}")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("end-to-end probe off: cannot create probe topic" in r.message for r in warnings)
    assert stats(runner).messages == {}
    topics = AdminClient({"bootstrap.servers": mock_cluster.bootstrap_servers}).list_topics(
        timeout=5
    )
    assert TOPIC not in topics.topics


def test_probe_measures_both_acks_round_trips_and_detects_a_stopped_consumer(
    mock_cluster: MockCluster,
    runners: Callable[[str], ProbeRunner],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=RUNNER_LOG)
    create_topic_by_producing(mock_cluster.bootstrap_servers)
    runner = runners(mock_cluster.bootstrap_servers)
    wait_for(lambda: runner.status == "running", "the probe to run")
    # The mock's auto-created partitions all prefer broker 1: the planner asks for partitions led
    # by 2 and 3, the mock cannot add them, and the runner probes what exists.
    assert "cannot add probe partitions led by brokers [2, 3]" in caplog.text
    assert runner.partitions == leaders(mock_cluster.bootstrap_servers)
    brokers = set(runner.partitions.values())

    def every_broker_has_round_trips() -> bool:
        s = stats(runner)
        return all(s.messages.get((b, "ok"), 0) >= 6 for b in brokers) and all(
            (b, acks) in s.produce_latency for b in brokers for acks in ("all", "1")
        )

    wait_for(every_broker_has_round_trips, "round trips through every leader")
    s = stats(runner)
    for broker in brokers:
        for acks in ("all", "1"):
            histogram = s.produce_latency[(broker, acks)]
            assert histogram.count >= 1
            assert 0 < histogram.sum / histogram.count < FAST.deadline_seconds
        assert s.roundtrip_latency[broker].count >= 6
        assert 0 < s.roundtrip_latency[broker].sum / s.roundtrip_latency[broker].count < 1.5
        assert s.replication_latency[broker] >= 0.0
        assert s.messages[(broker, "failed")] == 0
        assert s.messages[(broker, "lost")] == 0

    # Stop the probe consumer (the consumer thread applies an empty assignment): producers go on,
    # nothing is read any more, every new probe turns lost after its deadline.
    with runner._lock:
        runner._new_assignment = []
    time.sleep(0.5)
    ok_when_stopped = count(runner, "ok")
    wait_for(lambda: count(runner, "lost") >= 8 * len(brokers), "probes to be counted lost")
    assert count(runner, "ok") == ok_when_stopped
    assert count(runner, "failed") == 0

    # Reading again from the current end: probes are ok again.
    runner._assign(sorted(runner.partitions))
    wait_for(lambda: count(runner, "ok") >= ok_when_stopped + 8, "probes to be ok again")


MOCK_CHILD = """
import sys
from confluent_kafka import Producer
handle = Producer({"test.mock.num.brokers": 3, "log_level": 0})
brokers = sorted(handle.list_topics(timeout=10).brokers.values(), key=lambda b: b.id)
print(",".join(f"{b.host}:{b.port}" for b in brokers), flush=True)
sys.stdin.read()  # lives until the test closes stdin or kills it
"""


@pytest.fixture
def mock_cluster_process() -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", MOCK_CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        bootstrap_servers = process.stdout.readline().strip()
        assert bootstrap_servers, "the mock cluster child printed no address"
        yield process, bootstrap_servers
    finally:
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
        process.wait(10)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP to freeze the brokers")
def test_unreachable_brokers_turn_probes_failed_or_lost_and_recovery_is_seen(
    mock_cluster_process: tuple[subprocess.Popen[str], str],
    runners: Callable[[str], ProbeRunner],
) -> None:
    process, bootstrap_servers = mock_cluster_process
    create_topic_by_producing(bootstrap_servers)
    runner = runners(bootstrap_servers)
    wait_for(lambda: count(runner, "ok") >= 8, "probes before the outage")

    os.kill(process.pid, signal.SIGSTOP)
    time.sleep(0.3)  # anything already on its way back is read by now
    ok_during_outage = count(runner, "ok")
    # Sent during the outage: no ack comes, librdkafka reports a timeout at the deadline → failed.
    # Acked just before the freeze but not read yet → lost.
    wait_for(lambda: count(runner, "failed") >= 8, "produce failures while frozen", timeout=20)
    assert count(runner, "ok") == ok_during_outage
    not_ok = count(runner, "failed") + count(runner, "lost")

    os.kill(process.pid, signal.SIGCONT)
    wait_for(lambda: count(runner, "ok") >= ok_during_outage + 8, "probes ok after the outage")
    assert count(runner, "failed") + count(runner, "lost") >= not_ok
