"""The probe through a broker stop and a leadership drift, on a steerable mock cluster.

The mock's topics get replicas [1, 2, 3] for every partition (preferred leader 1) and random
leaders; the test sets one leader per broker, as the planner's layout would. The mock has no
controller: it neither moves leaders when a broker stops nor answers ElectLeaders, so the test
moves leaders itself where a real controller would, and checks that the runner asks for the
election and says why it did not happen.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.probe.mock_control import MockClusterProcess
from tests.probe.test_runner_mock import count, stats, wait_for
from vigia.exporter.probe.runner import ProbeRunner, ProbeSettings

TOPIC = "vigia-probe"
SETTINGS = ProbeSettings(
    topic=TOPIC,
    interval_seconds=0.2,
    deadline_seconds=1.5,
    reconcile_interval_seconds=3.0,
    request_timeout_seconds=0.5,
)


def by_broker(runner: ProbeRunner, broker: int, outcome: str) -> int:
    return stats(runner).messages.get((broker, outcome), 0)


@pytest.fixture
def mock() -> Iterator[MockClusterProcess]:
    with MockClusterProcess(3) as cluster:
        cluster.command("topic", TOPIC, 3, 3)
        for partition, broker in ((0, 1), (1, 2), (2, 3)):
            cluster.command("leader", TOPIC, partition, broker)
        yield cluster


@pytest.fixture
def runner(mock: MockClusterProcess) -> Iterator[ProbeRunner]:
    # socket.timeout.ms bounds the ElectLeaders call, which the mock leaves unanswered.
    probe = ProbeRunner(
        {"bootstrap.servers": mock.bootstrap_servers, "socket.timeout.ms": 2000}, SETTINGS
    )
    probe.start()
    yield probe
    probe.stop()


def test_a_stopped_broker_fails_its_probes_only_and_recovery_needs_nobody(
    mock: MockClusterProcess, runner: ProbeRunner
) -> None:
    wait_for(lambda: runner.status == "running", "the probe to run")
    wait_for(
        lambda: all(by_broker(runner, b, "ok") >= 4 for b in (1, 2, 3)), "probes via every broker"
    )
    assert runner.coverage() == {1: True, 2: True, 3: True}

    mock.command("down", 1)
    wait_for(lambda: by_broker(runner, 1, "failed") >= 4, "broker 1's probes to fail", 20)
    ok_2, ok_3 = by_broker(runner, 2, "ok"), by_broker(runner, 3, "ok")
    wait_for(
        lambda: by_broker(runner, 2, "ok") >= ok_2 + 4 and by_broker(runner, 3, "ok") >= ok_3 + 4,
        "the other brokers' probes to stay ok",
    )
    assert by_broker(runner, 2, "failed") + by_broker(runner, 3, "failed") == 0

    mock.command("up", 1)
    ok_1 = by_broker(runner, 1, "ok")
    wait_for(lambda: by_broker(runner, 1, "ok") >= ok_1 + 4, "broker 1's probes ok again", 30)
    assert runner.status == "running"


def test_a_drifted_leader_is_reported_uncovered_and_an_election_is_asked_for(
    mock: MockClusterProcess, runner: ProbeRunner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vigia.exporter.probe.runner")
    wait_for(lambda: runner.coverage() == {1: True, 2: True, 3: True}, "full coverage")

    # Broker 1 restarted: its partition failed over to broker 2 and stayed there.
    mock.command("leader", TOPIC, 0, 2)
    wait_for(lambda: runner.coverage() == {1: False, 2: True, 3: True}, "broker 1 uncovered")
    assert runner.partitions == {0: 2, 1: 2, 2: 3}
    ok_2 = by_broker(runner, 2, "ok")
    wait_for(lambda: by_broker(runner, 2, "ok") >= ok_2 + 8, "partition 0's probes via broker 2")

    # The runner asks for partition 0 back on broker 1 (its preferred leader, in sync); the
    # mock never answers, and the runner says what that costs and which right it needs.
    wait_for(
        lambda: (
            "cannot hand probe partitions [0] back to their preferred leaders [1]" in caplog.text
        ),
        "the election to be asked for and fail",
        20,
    )
    assert "grant Alter on the cluster" in caplog.text
    assert "brokers [1] lead no probe partition" in caplog.text

    # What a controller does on ElectLeaders: broker 1 leads partition 0 again.
    mock.command("leader", TOPIC, 0, 1)
    wait_for(lambda: runner.coverage() == {1: True, 2: True, 3: True}, "coverage restored")
    ok_1 = by_broker(runner, 1, "ok")
    wait_for(lambda: by_broker(runner, 1, "ok") >= ok_1 + 4, "broker 1 probed again")
    assert count(runner, "failed") == 0
