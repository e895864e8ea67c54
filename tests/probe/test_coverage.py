"""Which brokers the probe covers, and which probe partitions go back to their preferred leader."""

from __future__ import annotations

from vigia.exporter.probe.planner import ProbePartition, coverage, preferred_elections

BROKERS = (1, 2, 3)
# The layout the planner creates: partition i's preferred leader is broker i + 1.
REPLICAS = {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}


def layout(
    leaders: dict[int, int], isr: dict[int, tuple[int, ...]] | None = None
) -> list[ProbePartition]:
    return [
        ProbePartition(p, leaders[p], REPLICAS[p], (isr or {}).get(p, REPLICAS[p]))
        for p in sorted(REPLICAS)
    ]


def test_balanced_layout_covers_every_broker_and_needs_nothing() -> None:
    partitions = layout({0: 1, 1: 2, 2: 3})
    assert coverage(BROKERS, partitions) == {1: True, 2: True, 3: True}
    assert preferred_elections(BROKERS, partitions) == ()


def test_after_a_rolling_restart_the_returned_broker_gets_its_partition_back() -> None:
    # Issue 15: after a rolling restart the probe partitions were led by {2, 2, 3}.
    partitions = layout({0: 2, 1: 2, 2: 3})
    assert coverage(BROKERS, partitions) == {1: False, 2: True, 3: True}
    assert preferred_elections(BROKERS, partitions) == (0,)


def test_a_stopped_broker_stays_listed_uncovered_and_is_not_elected() -> None:
    live = (2, 3)
    partitions = layout({0: 2, 1: 2, 2: 3}, isr={0: (2, 3), 1: (2, 3), 2: (3, 2)})
    assert coverage(live, partitions) == {1: False, 2: True, 3: True}
    assert preferred_elections(live, partitions) == ()


def test_a_restarted_broker_still_catching_up_waits_for_the_isr() -> None:
    partitions = layout({0: 2, 1: 2, 2: 3}, isr={0: (2, 3), 1: (2, 3, 1), 2: (3, 2, 1)})
    assert preferred_elections(BROKERS, partitions) == ()


def test_one_election_per_uncovered_broker_and_none_for_covered_ones() -> None:
    # Two brokers back at once; broker 3 leads partition 2 already, so partition 1, whose
    # preferred leader is 2, and partition 0 (preferred 1) are elected; nothing moves broker 3.
    partitions = layout({0: 3, 1: 3, 2: 3})
    assert coverage(BROKERS, partitions) == {1: False, 2: False, 3: True}
    assert preferred_elections(BROKERS, partitions) == (0, 1)
    # Two partitions preferring the same uncovered broker: only the first is elected.
    doubled = [*partitions, ProbePartition(3, 3, (1, 2, 3), (1, 2, 3))]
    assert preferred_elections(BROKERS, doubled) == (0, 1)


def test_a_leaderless_partition_is_elected_when_its_preferred_leader_is_in_sync() -> None:
    partitions = layout({0: -1, 1: 2, 2: 3}, isr={0: (1,)})
    assert coverage(BROKERS, partitions) == {1: False, 2: True, 3: True}
    assert preferred_elections(BROKERS, partitions) == (0,)


def test_a_new_broker_without_probe_replicas_is_listed_uncovered() -> None:
    partitions = layout({0: 1, 1: 2, 2: 3})
    assert coverage((*BROKERS, 4), partitions) == {1: True, 2: True, 3: True, 4: False}
    assert preferred_elections((*BROKERS, 4), partitions) == ()
