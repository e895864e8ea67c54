"""Committed offsets through kafka-python after a group's coordinator moved (the Kafka adapter)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest
from kafka import errors as kafka_errors
from kafka.cluster import ClusterMetadata
from kafka.structs import OffsetAndMetadata, TopicPartition

from vigia.exporter.kafka.group_requests import OFFSETS, GroupAnswers, LegacyGroups


class MovedCoordinator:
    """kafka-python's admin as it behaves once a group's coordinator moved: the cached broker
    answers NOT_COORDINATOR (or cannot be reached) until the cache entry is gone, after which
    FindCoordinator finds the new one."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.cluster = ClusterMetadata()
        self.cluster._coordinators[("GROUP", "moved")] = 1  # the broker it was on
        self.cluster._coordinators[("GROUP", "stayed")] = 2
        self._manager = SimpleNamespace(cluster=self.cluster)

    def list_group_offsets(self, group_ids: list[str]) -> dict[str, Any]:
        if "moved" in group_ids and ("GROUP", "moved") in self.cluster._coordinators:
            raise self.error
        return {g: {TopicPartition("t", 0): OffsetAndMetadata(7, "", -1)} for g in group_ids}


@pytest.mark.parametrize(
    "error",
    [
        kafka_errors.NotCoordinatorError("OffsetFetchResponse failed for group 'moved'"),
        kafka_errors.CoordinatorNotAvailableError("OffsetFetchResponse failed for group 'moved'"),
        kafka_errors.NodeNotReadyError(1),  # the coordinator's broker is stopped
        kafka_errors.KafkaConnectionError("Connection refused"),
        kafka_errors.UnknownBrokerIdError(1),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_moved_coordinator_is_looked_up_again_at_the_next_collection(error: Exception) -> None:
    client = MovedCoordinator(error)
    with ThreadPoolExecutor(4) as pool:
        first = read_offsets(client, pool, ["moved", "stayed"])
        assert isinstance(first["moved"], type(error))
        assert first["stayed"].topic_partitions[0].offset == 7
        # Only the moved group's coordinator is forgotten.
        assert ("GROUP", "moved") not in client.cluster._coordinators
        assert client.cluster._coordinators[("GROUP", "stayed")] == 2
        second = read_offsets(client, pool, ["moved", "stayed"])
        assert second["moved"].topic_partitions[0].offset == 7


def read_offsets(client: Any, pool: ThreadPoolExecutor, group_ids: list[str]) -> dict[str, Any]:
    """Each group's outcome, waiting until every answer came."""
    answers = GroupAnswers()
    LegacyGroups(client, pool, answers).offsets(group_ids)
    while answers.waiting:
        assert answers.wait(timeout=5) is not None, "an answer did not come"
    return answers.outcomes[OFFSETS]
