"""Test topics that every broker knows before a client uses them.

A KRaft broker applies the metadata log at its own pace: right after CreateTopics returns, the
broker a client asks may not know the topic yet. A librdkafka consumer that subscribes then is told
"unknown topic" and looks again only at its next periodic metadata refresh (five minutes by
default), so a test that reads at once can wait for minutes. Each broker is therefore asked on its
own, by a new client bootstrapped from it alone (its only connection, so the one asked), until
it answers with every partition led.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE = 240.0  # any one condition; CI's machine runs two drills at a load of 30 and more


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    *,
    replication: int | None = None,
    config: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
    timeout: float = DEADLINE,
) -> None:
    """Creates `name` (replication: min(3, brokers) unless given) and returns once every broker
    has it in its metadata with a leader for each partition."""
    settings = {"bootstrap.servers": bootstrap, **(options or {})}
    admin = AdminClient(settings)
    brokers = admin.list_topics(timeout=30).brokers
    factor = replication or min(3, len(brokers))
    topic = NewTopic(name, partitions, factor, config=dict(config or {}))
    admin.create_topics([topic], request_timeout=timeout)[name].result(timeout=timeout)
    give_up = time.monotonic() + timeout
    for broker in brokers.values():
        alone = {**settings, "bootstrap.servers": f"{broker.host}:{broker.port}"}
        while not _knows(AdminClient(alone), name, partitions):
            if time.monotonic() > give_up:
                raise AssertionError(f"broker {broker.id} did not learn of topic {name} in time")
            time.sleep(0.2)


def _knows(admin: AdminClient, name: str, partitions: int) -> bool:
    found = admin.list_topics(name, timeout=10).topics.get(name)
    if found is None or found.error is not None or len(found.partitions) != partitions:
        return False
    return all(p.leader >= 0 for p in found.partitions.values())
