"""Groups with committed offsets and no members, for tests and benchmarks on a real cluster."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, wait
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from vigia.exporter.kafka.coordinator_requests import LIBRDKAFKA_MAX_REQUEST_TIMEOUT


def commit_groups(
    admin: AdminClient, commits: Mapping[str, Sequence[TopicPartition]], deadline_s: float = 300
) -> None:
    """Commits each group's offsets from outside it, again until the cluster took every partition.

    On a cluster seconds old, a commit can succeed as a call and fail per partition (its
    coordinator still loading): the group then does not exist. Kafka's own tools list 44 of 50
    groups seeded without this check (the "missing groups" of earlier lag benchmarks).
    """
    pending = dict(commits)
    deadline = time.monotonic() + deadline_s
    while pending:
        # librdkafka must never time these out itself (exporter/kafka/coordinator_requests.py).
        futures = {
            group: admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, list(partitions))],
                request_timeout=LIBRDKAFKA_MAX_REQUEST_TIMEOUT,
            )[group]
            for group, partitions in pending.items()
        }
        wait(futures.values(), timeout=60)
        refused = {group: _refusal(future) for group, future in futures.items()}
        pending = {group: commits[group] for group, why in refused.items() if why}
        if pending and time.monotonic() > deadline:
            group = next(iter(pending))
            raise AssertionError(
                f"{len(pending)} groups could not commit in {deadline_s:g} s, e.g. {group}: "
                f"{refused[group]}"
            )
        if pending:
            time.sleep(1)


def _refusal(future: Future[Any]) -> str | None:
    if not future.done():
        return "no answer"
    if future.exception() is not None:
        return str(future.exception())
    errors = [tp.error for tp in future.result().topic_partitions or [] if tp.error is not None]
    return str(errors[0]) if errors else None


def delete_groups(bootstrap: str, names: Sequence[str], deadline_s: float = 120) -> list[str]:
    """Deletes groups with no members, again until each is gone or `deadline_s` has passed; the
    groups not deleted. One FindCoordinator request for them all (KIP-699) and one DeleteGroups per
    coordinator, by kafka-python: librdkafka sends both for every group, a minute for 2,000 on a
    loaded 2-core machine. Best effort, for cleaning up after a test: a broker may be starting."""
    pending = list(names)
    deadline = time.monotonic() + deadline_s
    while pending and time.monotonic() < deadline:
        try:  # a new client each time: no coordinator remembered from before a move
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60_000)
        except KafkaError:
            time.sleep(1)
            continue
        try:
            results = admin.delete_groups(pending)
            pending = [g for g in pending if results.get(g) not in ("OK", "GroupIdNotFoundError")]
        except KafkaError:
            pass
        finally:
            admin.close()
        if pending:
            time.sleep(1)
    return pending
