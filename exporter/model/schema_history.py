"""Is a Debezium connector's schema history topic safe? (pure)

Debezium's MySQL connector replays its schema history topic (every DDL it has seen, from the
snapshot on) at each start to parse the binlog rows that follow: a record deleted there cannot be
recovered without a new snapshot. So the topic must keep everything forever and be as durable as
the data topic: ``cleanup.policy=delete`` (compaction would keep one DDL per key and lose the
history, Debezium refuses a compacted one at start), ``retention.ms=-1``, ``retention.bytes=-1``,
and at least the replication factor and ``min.insync.replicas`` of the pipeline topic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

MISSING: Final = "missing"  # not among the collected topics
REASONS: Final = (
    MISSING,
    "retention_ms",
    "retention_bytes",
    "cleanup_policy",
    "replication_factor",
    "min_insync_replicas",
)


def unsafe_reasons(
    configs: Mapping[str, str] | None,
    replication_factor: int | None,
    reference_replication_factor: int | None,
    reference_min_insync: int | None,
) -> frozenset[str]:
    """What makes the topic unsafe; `configs` None: the topic is not there. A config the
    collection did not read (its configs phase failed) is not judged."""
    if configs is None:
        return frozenset({MISSING})
    found = set()
    for key, reason in (("retention.ms", "retention_ms"), ("retention.bytes", "retention_bytes")):
        value = configs.get(key)
        if value is not None and value.strip() != "-1":
            found.add(reason)
    policy = configs.get("cleanup.policy")
    if policy is not None and {p.strip() for p in policy.split(",")} != {"delete"}:
        found.add("cleanup_policy")
    if (
        replication_factor is not None
        and reference_replication_factor is not None
        and replication_factor < reference_replication_factor
    ):
        found.add("replication_factor")
    min_insync = configs.get("min.insync.replicas")
    if (
        min_insync is not None
        and reference_min_insync is not None
        and min_insync.isdigit()
        and int(min_insync) < reference_min_insync
    ):
        found.add("min_insync_replicas")
    return frozenset(found)
