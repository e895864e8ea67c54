"""Recorded cluster responses (tests/fixtures/kafka-4.0-3node/*.json) as typed snapshots, and
`replay`, which runs them through the real exporter pipeline (derive → collectors → exposition,
and the JSON API) so other components can test against realistic exporter output without Kafka.
A replay has no end-to-end probe: its output is what an exporter run with --no-probe serves.
A recording may add `"record_times": [{"topic", "partition", "offset", "record_offset",
"timestamp_ms"}]`, the records the record-times step read (the fixtures have none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vigia.exporter.collectors import exposition
from vigia.exporter.model.granularity import DEFAULT, Granularity
from vigia.exporter.model.lag_status import DEFAULT_WINDOW_SIZE
from vigia.exporter.model.snapshot import (
    CAPABILITIES,
    Broker,
    BrokerLogDirs,
    ClusterSnapshot,
    CommittedOffset,
    ConsumerGroup,
    GroupMember,
    LogDir,
    LogDirPartition,
    Partition,
    PhaseError,
    Quorum,
    QuorumReplica,
    RecordTime,
    Topic,
    TopicPartitionRef,
    resolve_controller,
)
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.web import api


class RecordingError(ValueError):
    """A recording file that is not in the fixtures' shape."""


@dataclass(frozen=True, slots=True)
class Replayed:
    collected_at: float
    exposition: str  # what /metrics serves after this collection
    cluster_json: dict[str, Any]  # what /api/v1/cluster serves after this collection


def load_snapshot(path: str | Path) -> ClusterSnapshot:
    """A recorded fixture JSON as the same snapshot type the Kafka adapter produces."""
    path = Path(path)
    try:
        return snapshot_from_recording(json.loads(path.read_text(encoding="utf-8")))
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{path}: not a cluster recording ({exc!r})") from exc


def replay(
    paths: Iterable[str | Path],
    *,
    lag_status_window: int = DEFAULT_WINDOW_SIZE,
    granularity: Granularity = DEFAULT,
) -> list[Replayed]:
    """Feed recordings, in the given order, to the exporter pipeline as successive collections
    (with one history, as one exporter would; `lag_status_window` as --lag-status-window, the
    exposition at `granularity`)."""
    results: list[Replayed] = []
    state: ExporterState | None = None
    history = History.create(lag_status_window)
    for path in paths:
        state = derive(state, load_snapshot(path), history)
        results.append(
            Replayed(
                state.snapshot.collected_at,
                exposition(state, granularity=granularity),
                api.cluster_json(state),
            )
        )
    return results


def snapshot_from_recording(data: Mapping[str, Any]) -> ClusterSnapshot:
    cluster = data["cluster"]
    quorum = _quorum(data.get("quorum"))
    in_metadata = {int(b["id"]) for b in cluster["brokers"]}
    controller_id, controller_source = resolve_controller(
        quorum, cluster.get("controller_id"), "describe_cluster", in_metadata
    )
    # The recorder asked every node, the exporter asks only the brokers in the metadata: a stopped
    # broker's answer (UnknownBrokerIdError) is what the exporter never sees.
    log_dirs = tuple(
        _broker_log_dirs(b) for b in data.get("log_dirs", []) if int(b["broker"]) in in_metadata
    )
    errors = [
        PhaseError("log_dirs", f"broker {b.broker}: {b.error}")
        for b in log_dirs
        if b.error is not None
    ]
    errors += [PhaseError("recording", str(message)) for message in data.get("errors", [])]
    return ClusterSnapshot(
        collected_at=float(data["collected_at"]),
        cluster_id=cluster.get("cluster_id"),
        controller_id=controller_id,
        controller_source=controller_source,
        brokers=tuple(
            sorted(
                (
                    Broker(int(b["id"]), b["host"], int(b["port"]), b.get("rack"))
                    for b in cluster["brokers"]
                ),
                key=lambda b: b.id,
            )
        ),
        topics=tuple(sorted((_topic(t) for t in data["topics"]), key=lambda t: t.name)),
        log_dirs=log_dirs,
        groups=tuple(sorted((_group(g) for g in data.get("groups", [])), key=lambda g: g.group_id)),
        quorum=quorum,
        errors=tuple(errors),
        record_times=tuple(
            RecordTime(
                r["topic"],
                int(r["partition"]),
                int(r["offset"]),
                int(r["record_offset"]),
                None if r.get("timestamp_ms") is None else int(r["timestamp_ms"]),
            )
            for r in data.get("record_times", [])
        ),
        # Recorded from a Kafka 4.0 cluster that answered every API the exporter uses.
        capabilities=MappingProxyType(dict.fromkeys(CAPABILITIES, True)),
    )


def _ints(values: Sequence[Any]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _topic(t: Mapping[str, Any]) -> Topic:
    partitions = tuple(
        Partition(
            partition=int(p["partition"]),
            leader=int(p["leader"]),
            replicas=_ints(p["replicas"]),
            isr=_ints(p["isr"]),
            offline_replicas=_ints(p.get("offline_replicas", [])),
            earliest_offset=p.get("earliest_offset"),
            latest_offset=p.get("latest_offset"),
        )
        for p in t["partitions"]
    )
    configs = {k: str(v) for k, v in (t.get("configs") or {}).items() if v is not None}
    return Topic(
        name=t["name"],
        internal=bool(t.get("internal", False)),
        partitions=tuple(sorted(partitions, key=lambda p: p.partition)),
        configs=MappingProxyType(configs),
    )


def _broker_log_dirs(b: Mapping[str, Any]) -> BrokerLogDirs:
    return BrokerLogDirs(
        broker=int(b["broker"]),
        error=b.get("error"),
        log_dirs=tuple(
            LogDir(
                path=d["path"],
                error=d.get("error"),
                total_bytes=d.get("total_bytes"),
                usable_bytes=d.get("usable_bytes"),
                partitions=tuple(
                    LogDirPartition(
                        topic=p["topic"],
                        partition=int(p["partition"]),
                        size_bytes=int(p["size_bytes"]),
                        offset_lag=int(p.get("offset_lag", 0)),
                        is_future=bool(p.get("is_future", False)),
                    )
                    for p in d.get("partitions", [])
                ),
            )
            for d in b.get("log_dirs", [])
        ),
    )


def _group(g: Mapping[str, Any]) -> ConsumerGroup:
    committed = g.get("committed")
    return ConsumerGroup(
        group_id=g["group_id"],
        state=g.get("state"),
        type=g.get("type"),
        protocol=g.get("protocol"),
        coordinator=g.get("coordinator"),
        members=tuple(
            GroupMember(
                member_id=m["member_id"],
                client_id=m["client_id"],
                host=m["host"],
                assignment=tuple(
                    TopicPartitionRef(a["topic"], int(a["partition"])) for a in m["assignment"]
                ),
            )
            for m in g.get("members", [])
        ),
        committed=None
        if committed is None
        else tuple(
            sorted(
                (
                    CommittedOffset(c["topic"], int(c["partition"]), int(c["offset"]))
                    for c in committed
                ),
                key=lambda c: (c.topic, c.partition),
            )
        ),
    )


def _replica(r: Mapping[str, Any]) -> QuorumReplica:
    return QuorumReplica(
        id=int(r["id"]),
        log_end_offset=r.get("log_end_offset"),
        last_fetch_timestamp_ms=r.get("last_fetch_timestamp_ms"),
        last_caught_up_timestamp_ms=r.get("last_caught_up_timestamp_ms"),
    )


def _quorum(q: Mapping[str, Any] | None) -> Quorum | None:
    if not q:
        return None
    return Quorum(
        leader_id=int(q["leader_id"]),
        voters=tuple(_replica(r) for r in q.get("voters", [])),
        observers=tuple(_replica(r) for r in q.get("observers", [])),
    )
