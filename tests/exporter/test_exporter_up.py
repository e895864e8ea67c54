"""`vigia_exporter_up` while brokers come and go (issue 20): the errors a broker's stop or return
causes elsewhere in a collection are the cluster's state; anything else still fails it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.exporter.test_exporter_state import _snap
from vigia.exporter.model.snapshot import BrokerLogDirs, ClusterSnapshot, PhaseError
from vigia.exporter.model.state import BROKER_SETTLE_SECONDS, derive

# Recorded on the real cluster in the collection during which broker 1 stopped.
WHILE_A_BROKER_STOPS = (
    PhaseError("configs", "1 of 18 resources failed, first: 1: KafkaError _TIMED_OUT: Failed "),
    PhaseError("groups", "ListGroups: KafkaError _TIMED_OUT: Local: Timed out"),
    PhaseError("offsets", "2 of 796 partition offsets failed, first: latest: timed out"),
)
LOG_DIRS_OF_1_FAILED = (BrokerLogDirs(1, "NodeNotReadyError: 1", ()),)


def _collection(
    errors: tuple[PhaseError, ...], log_dirs: tuple[BrokerLogDirs, ...] = (), at: float = 100.0
) -> ClusterSnapshot:
    return replace(_snap(at, {"t": [(1, 10), (2, 10)]}, errors=errors), log_dirs=log_dirs)


def test_errors_a_stopping_broker_causes_keep_up_1_when_its_own_requests_fail() -> None:
    snapshot = _collection(WHILE_A_BROKER_STOPS, log_dirs=LOG_DIRS_OF_1_FAILED)
    assert not snapshot.ok
    assert derive(None, snapshot).up


def test_the_same_errors_with_every_broker_answering_are_a_failure() -> None:
    assert not derive(None, _collection(WHILE_A_BROKER_STOPS)).up


def test_a_broker_the_cluster_expects_but_the_metadata_lacks_excuses_them_too() -> None:
    snapshot = _collection(WHILE_A_BROKER_STOPS)
    without_3 = replace(snapshot, brokers=tuple(b for b in snapshot.brokers if b.id != 3))
    assert derive(None, without_3).up


def test_a_broker_leaving_the_isrs_while_still_in_the_metadata_excuses_them_too() -> None:
    """A controlled shutdown: leaders move off the broker and it leaves the ISRs before it leaves
    the metadata; requests sent to it meanwhile time out."""
    snapshot = _snap(100.0, {"t": [(2, 10), (3, 10)]}, isr=(2, 3), errors=WHILE_A_BROKER_STOPS)
    assert derive(None, snapshot).up


def test_a_broker_back_in_the_metadata_for_less_than_a_minute_excuses_them_too() -> None:
    """Its groups' coordinators load, its share of ListGroups waits and its leaders come back to
    it for a while after it is in the metadata again, its ISRs and its own answers whole."""
    before = _collection(())
    away = replace(before, brokers=tuple(b for b in before.brokers if b.id != 3))
    back = derive(derive(None, away), _collection(WHILE_A_BROKER_STOPS, at=110.0))
    assert back.brokers_moved_at == {3: 110.0}
    later = derive(back, _collection(WHILE_A_BROKER_STOPS, at=110.0 + BROKER_SETTLE_SECONDS - 1))
    assert back.up and later.up
    settled = derive(later, _collection(WHILE_A_BROKER_STOPS, at=110.0 + BROKER_SETTLE_SECONDS))
    assert settled.brokers_moved_at == {}
    assert not settled.up


def test_a_broker_going_away_is_remembered_across_a_collection_without_metadata() -> None:
    before = _collection(())
    away = replace(
        before, brokers=tuple(b for b in before.brokers if b.id != 3), collected_at=110.0
    )
    blind = replace(_collection((PhaseError("metadata", "timed out"),), at=112.0), topics=())
    state = derive(derive(derive(None, before), away), blind)
    assert state.brokers_moved_at == {3: 110.0}
    assert derive(state, _collection(WHILE_A_BROKER_STOPS, at=114.0)).up


def test_a_request_to_a_broker_handle_librdkafka_retired_is_broker_motion_too() -> None:
    """Recorded in the 30-restart drill (benchmarks/exporter_restarts.py, step 13): librdkafka
    retires the handle of a broker that left the metadata and fails what was queued on it, seen in
    the collection where the broker is back."""
    retired = PhaseError(
        "groups",
        "ListGroups: KafkaError _DESTROY_BROKER: Local: Broker handle destroyed without "
        "termination",
    )
    before = _collection(())
    away = replace(before, brokers=tuple(b for b in before.brokers if b.id != 3))
    assert derive(derive(None, away), _collection((retired,))).up
    assert not derive(None, _collection((retired,))).up  # with no broker moving, a failure


def test_a_broker_config_request_cut_by_its_controlled_shutdown_is_broker_motion_too() -> None:
    """Recorded on the real cluster's rolling restart (CI run of 2026-11-26): the broker's own
    DescribeConfigs lost its connection while the broker left the ISRs, one collection before it
    left the metadata; the exporter said up 0 for that one collection."""
    cut = PhaseError(
        "configs",
        "1 of 12 resources failed, first: 1: KafkaError _TRANSPORT: Failed while waiting for "
        "response from broker: Local: Broker transport failure",
    )
    snapshot = _snap(100.0, {"t": [(2, 10), (3, 10)]}, isr=(2, 3), errors=(cut,))
    assert derive(None, snapshot).up
    assert not derive(None, _collection((cut,))).up  # with no broker moving, a failure


@pytest.mark.parametrize(
    "error",
    [
        PhaseError("groups", "ListGroups: KafkaError _TRANSPORT: SASL authentication error: x"),
        PhaseError("configs", "1 of 18 resources failed, first: t: Broker: Topic authorization"),
        PhaseError("cluster", "ValueError: unexpected answer"),
        PhaseError("metadata", "KafkaError _TIMED_OUT: Local: Timed out"),
    ],
)
def test_access_errors_other_failures_and_no_metadata_still_fail_it(error: PhaseError) -> None:
    snapshot = _collection((*WHILE_A_BROKER_STOPS, error), log_dirs=LOG_DIRS_OF_1_FAILED)
    assert not derive(None, snapshot).up


def test_leaders_moving_between_brokers_that_stay_up_excuse_them_for_a_minute() -> None:
    """Recorded on the real cluster (CI run of 2026-11-29): the controller's periodic preferred-
    leader election moved 189 leaders, every broker up and every ISR whole; the next collection's
    ListOffsets waited until the deadline and 23 groups' coordinators were moving."""
    election = (
        PhaseError("group_coordinator", "23 of 77 groups whose coordinator is moving failed"),
        PhaseError("offsets", "3 of 770 partition offsets failed, first: earliest: timed out"),
    )
    before = derive(None, _snap(100.0, {"t": [(1, 10), (2, 10)]}))
    moved = derive(before, _snap(102.0, {"t": [(2, 10), (2, 10)]}, errors=election))
    assert moved.brokers_moved_at == {1: 102.0, 2: 102.0}
    assert moved.up
    still = _snap(102.0 + BROKER_SETTLE_SECONDS, {"t": [(2, 10), (2, 10)]}, errors=election)
    assert not derive(moved, still).up


def test_partitions_only_one_collection_has_move_no_leader() -> None:
    """A topic created or deleted between two collections, or a collection without metadata, is
    no leadership change."""
    before = derive(None, _snap(100.0, {"t": [(1, 10)]}))
    created = derive(before, _snap(102.0, {"t": [(1, 10)], "u": [(2, 0)]}))
    blind = derive(created, replace(_snap(104.0, {}), topics=()))
    assert created.brokers_moved_at == blind.brokers_moved_at == {}


def test_a_leader_answering_that_its_epoch_moves_excuses_them_for_a_minute() -> None:
    """Recorded on the real cluster (CI run of 2026-11-30): a broker behind on the metadata
    answered UNKNOWN_LEADER_EPOCH until the deadline for the partitions it led, and this
    collection's metadata, read before the leaders moved, showed the same leaders as the last."""
    behind = (
        PhaseError(
            "offsets",
            "86 of 770 partition offsets failed, first: earliest t-0: KafkaError "
            "UNKNOWN_LEADER_EPOCH: Broker: Leader epoch is newer than broker epoch",
        ),
    )
    before = derive(None, _snap(100.0, {"t": [(1, 10), (2, 10)]}))
    unanswered = _snap(102.0, {"t": [(1, 10), (2, 10)]}, errors=behind)
    assert not derive(before, unanswered).up  # no leader moved, as far as the metadata shows
    said = derive(before, replace(unanswered, leaders_moving=frozenset({("t", 0)})))
    assert said.brokers_moved_at == {1: 102.0}
    assert said.up
    later = _snap(102.0 + BROKER_SETTLE_SECONDS, {"t": [(1, 10), (2, 10)]}, errors=behind)
    assert not derive(said, later).up
