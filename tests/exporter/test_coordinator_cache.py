"""kafka-python's coordinator cache holds only groups that still exist (the Kafka adapter)."""

from __future__ import annotations

from types import SimpleNamespace

from kafka.cluster import ClusterMetadata
from kafka.protocol.metadata import CoordinatorType

from vigia.exporter.kafka.group_requests import coordinator_of, forget_gone_groups


def test_groups_no_longer_listed_leave_the_cache_and_live_ones_keep_their_coordinator() -> None:
    cluster = ClusterMetadata()
    for n in range(1000):  # groups created and deleted over the exporter's life
        cluster._coordinators[(CoordinatorType.GROUP, f"gone-{n}")] = n % 3
    cluster._coordinators[(CoordinatorType.GROUP, "live")] = 2
    cluster._coordinators[(CoordinatorType.TRANSACTION, "gone-1")] = 1
    client = SimpleNamespace(_manager=SimpleNamespace(cluster=cluster))

    forget_gone_groups(client, ["live", "listed-never-asked"])

    assert cluster._coordinators == {
        (CoordinatorType.GROUP, "live"): 2,
        (CoordinatorType.TRANSACTION, "gone-1"): 1,
    }
    assert coordinator_of(client, "live") == 2


def test_a_client_without_the_cache_is_left_alone() -> None:
    client = SimpleNamespace()
    forget_gone_groups(client, ["live"])
    assert vars(client) == {}
