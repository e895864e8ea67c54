"""Probe latency tracker: histograms, replication estimate, round trip and exactly-once outcomes."""

from __future__ import annotations

import pytest

from vigia.exporter.probe.tracker import LatencyTracker, ProbeStats


def send(tracker: LatencyTracker, round_id: int, partition: int, broker: int, at: float) -> None:
    for acks in ("all", "1"):
        tracker.sent(
            f"{round_id}:{partition}:{acks}",
            partition=partition,
            broker=broker,
            acks=acks,
            round_id=round_id,
            at=at,
        )


def bucket(stats: ProbeStats, broker: int, acks: str, bound: float) -> int:
    return dict(stats.produce_latency[(broker, acks)].buckets)[bound]


def test_produce_latency_per_broker_and_acks() -> None:
    tracker = LatencyTracker()
    send(tracker, 1, 0, 1, at=100.0)
    tracker.delivered("1:0:all", at=100.004)  # no client latency: measured from sent_at
    tracker.delivered("1:0:1", at=100.5, latency=0.0008)  # the client's own measure wins
    stats = tracker.stats()
    assert set(stats.produce_latency) == {(1, "all"), (1, "1")}
    assert stats.produce_latency[(1, "all")].count == 1
    assert stats.produce_latency[(1, "all")].sum == pytest.approx(0.004)
    assert bucket(stats, 1, "all", 0.0025) == 0
    assert bucket(stats, 1, "all", 0.005) == 1
    assert bucket(stats, 1, "1", 0.001) == 1
    assert bucket(stats, 1, "1", float("inf")) == 1


def test_replication_latency_is_the_recent_median_of_the_differences() -> None:
    tracker = LatencyTracker(replication_window=3)
    for round_id, (all_ms, one_ms) in enumerate([(50, 1), (5, 2), (6, 2), (7, 2)], start=1):
        send(tracker, round_id, 0, 2, at=float(round_id))
        tracker.delivered(f"{round_id}:0:all", at=0, latency=all_ms / 1000)
        tracker.delivered(f"{round_id}:0:1", at=0, latency=one_ms / 1000)
    # Differences 49, 3, 4, 5 ms; the window keeps the last three → median 4 ms.
    assert tracker.stats().replication_latency == {2: pytest.approx(0.004)}


def test_replication_latency_is_never_negative() -> None:
    tracker = LatencyTracker()
    send(tracker, 1, 0, 3, at=0.0)
    tracker.delivered("1:0:all", at=0, latency=0.001)
    tracker.delivered("1:0:1", at=0, latency=0.002)
    assert tracker.stats().replication_latency == {3: 0.0}


def test_round_trip_and_ok() -> None:
    tracker = LatencyTracker()
    send(tracker, 1, 0, 1, at=10.0)
    tracker.delivered("1:0:all", at=10.003, latency=0.003)
    tracker.delivered("1:0:1", at=10.002, latency=0.002)
    assert tracker.received("1:0:all", at=10.25)
    assert tracker.received("1:0:1", at=10.5)
    stats = tracker.stats()
    assert stats.roundtrip_latency[1].count == 2
    assert stats.roundtrip_latency[1].sum == pytest.approx(0.75)
    assert stats.messages == {(1, "ok"): 2, (1, "failed"): 0, (1, "lost"): 0}
    assert stats.pending == 0


def test_not_consumed_by_the_deadline_is_lost_and_a_late_arrival_is_ignored() -> None:
    tracker = LatencyTracker(deadline_seconds=5.0)
    send(tracker, 1, 0, 2, at=0.0)
    tracker.delivered("1:0:all", at=0.01)
    tracker.delivered("1:0:1", at=0.01)
    assert tracker.expire(4.99) == 0
    assert tracker.expire(5.0) == 2
    assert not tracker.received("1:0:all", at=6.0)
    stats = tracker.stats()
    assert stats.messages[(2, "lost")] == 2
    assert stats.messages[(2, "ok")] == 0
    assert 2 not in stats.roundtrip_latency
    assert stats.pending == 0


def test_late_arrival_is_lost() -> None:
    tracker = LatencyTracker(deadline_seconds=5.0)
    send(tracker, 1, 0, 1, at=0.0)
    tracker.delivered("1:0:all", at=0.01)
    assert not tracker.received("1:0:all", at=5.5)  # before expire() ran, but past the deadline
    assert tracker.stats().messages[(1, "lost")] == 1
    assert 1 not in tracker.stats().roundtrip_latency


def test_undelivered_at_the_deadline_waits_for_the_report() -> None:
    tracker = LatencyTracker(deadline_seconds=5.0)
    send(tracker, 1, 0, 1, at=0.0)
    assert tracker.expire(6.0) == 0  # no delivery report yet: the producer is still trying
    tracker.delivered("1:0:all", at=6.5, error=True)  # message.timeout.ms ran out
    assert tracker.stats().messages[(1, "failed")] == 1
    assert tracker.expire(9.99) == 0
    assert tracker.expire(10.0) == 1  # acks=1 never reported at all: lost after two deadlines
    assert tracker.stats().messages == {(1, "ok"): 0, (1, "failed"): 1, (1, "lost"): 1}
    assert tracker.stats().pending == 0


def test_failed_produce_is_failed_not_lost() -> None:
    tracker = LatencyTracker(deadline_seconds=5.0)
    send(tracker, 1, 0, 1, at=0.0)
    tracker.delivered("1:0:all", at=5.0, error=True)
    tracker.delivered("1:0:1", at=0.001, latency=0.001)
    assert tracker.expire(10.0) == 1  # only the acks=1 message, delivered but never consumed
    stats = tracker.stats()
    assert stats.messages == {(1, "ok"): 0, (1, "failed"): 1, (1, "lost"): 1}
    assert (1, "all") not in stats.produce_latency
    assert stats.replication_latency == {}  # no pair without both acks settings


def test_consumed_before_its_delivery_report_counts_once() -> None:
    tracker = LatencyTracker(deadline_seconds=5.0)
    send(tracker, 1, 0, 1, at=0.0)
    assert tracker.received("1:0:all", at=0.002)
    assert tracker.stats().pending == 2  # still waiting for the acks=all report
    tracker.delivered("1:0:all", at=0.003, latency=0.003)
    tracker.delivered("1:0:1", at=0.003, error=True)  # failed: not consumed → failed
    assert not tracker.received("1:0:all", at=0.004)  # duplicate read
    tracker.expire(100.0)
    stats = tracker.stats()
    assert stats.messages == {(1, "ok"): 1, (1, "failed"): 1, (1, "lost"): 0}
    assert stats.produce_latency[(1, "all")].count == 1


def test_error_report_after_consumption_stays_ok() -> None:
    tracker = LatencyTracker()
    send(tracker, 1, 0, 1, at=0.0)
    tracker.received("1:0:1", at=0.1)
    tracker.delivered("1:0:1", at=0.2, error=True)
    assert tracker.stats().messages[(1, "ok")] == 1
    assert tracker.stats().messages[(1, "failed")] == 0


def test_unknown_messages_are_ignored() -> None:
    tracker = LatencyTracker()
    assert not tracker.received("other-exporter:1:0:all", at=1.0)
    tracker.delivered("nope", at=1.0, latency=0.1)
    assert tracker.stats() == ProbeStats({}, {}, {}, {}, 0)


def test_every_outcome_exists_for_every_probed_broker() -> None:
    tracker = LatencyTracker()
    send(tracker, 1, 0, 1, at=0.0)
    send(tracker, 1, 1, 2, at=0.0)
    assert tracker.stats().messages == {(b, o): 0 for b in (1, 2) for o in ("ok", "failed", "lost")}


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="deadline"):
        LatencyTracker(deadline_seconds=0)
    with pytest.raises(ValueError, match="replication_window"):
        LatencyTracker(replication_window=0)
    with pytest.raises(ValueError, match="acks"):
        LatencyTracker().sent("x", partition=0, broker=1, acks="0", round_id=1, at=0.0)
