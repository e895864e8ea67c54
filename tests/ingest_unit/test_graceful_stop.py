"""When a query asked to stop after its current batch stops, look by look."""

from __future__ import annotations

from vigia.ingest.graceful_stop import GracefulStop

IDLE, ACTIVE = False, True


def test_no_stop_asked_never_stops() -> None:
    stopping = GracefulStop()
    looks = [(active, n) for n in range(5) for active in (IDLE, ACTIVE)]
    assert not any(stopping.due(False, False, active, n) for active, n in looks)


def test_stop_now_stops_at_once_even_mid_batch() -> None:
    assert GracefulStop().due(False, True, ACTIVE, 3)


def test_a_stop_seen_between_batches_stops_at_once() -> None:
    assert GracefulStop().due(True, False, IDLE, 7)


def test_a_stop_seen_mid_batch_waits_for_that_batch_only() -> None:
    stopping = GracefulStop()
    # Batch 8 runs (7 completed) when the stop is first seen.
    assert not stopping.due(True, False, ACTIVE, 7)
    assert not stopping.due(True, False, ACTIVE, 7)
    # Batch 8 completed and 9 began at once: no gap was ever seen, the stop comes anyway.
    assert stopping.due(True, False, ACTIVE, 8)


def test_a_stop_before_the_first_batch_completes_waits_for_batch_0() -> None:
    stopping = GracefulStop()
    assert not stopping.due(True, False, ACTIVE, -1)
    assert stopping.due(True, False, ACTIVE, 0)


def test_the_awaited_batch_is_the_one_running_when_the_stop_was_first_seen() -> None:
    stopping = GracefulStop()
    assert not stopping.due(False, False, ACTIVE, 2)
    assert not stopping.due(True, False, ACTIVE, 4)  # batch 5 running: the awaited one
    assert not stopping.due(True, False, ACTIVE, 4)
    assert stopping.due(True, False, ACTIVE, 5)
