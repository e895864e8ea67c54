"""The JSON served at /api/v1/cluster (shape documented in docs/api.md).

`state_json` is built from one collection's state, once per collection; `source_json` from the
source watch and `probe_json` from the probe runner, at each request (both have their own
schedule). The document is the former with the source watch under "source" and the probe under
"probe", last.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from vigia.common.kafka_errors import kind_of
from vigia.exporter.connect.collector import connect_json
from vigia.exporter.connect.stall import Pipeline
from vigia.exporter.connect.watcher import ConnectReport
from vigia.exporter.hes.horizon import leg_horizon
from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.model.loss_horizon import Horizon
from vigia.exporter.model.pipeline_hops import hop_lags
from vigia.exporter.model.retention import CatchUpEstimate, Margin, NoRetention, Retention
from vigia.exporter.model.snapshot import Broker, BrokerLogDirs, ConsumerGroup, Topic
from vigia.exporter.model.state import (
    BrokerCounts,
    ExporterState,
    PartitionLag,
    UncommittedPartition,
)
from vigia.exporter.probe.runner import DISABLED, ProbeRunner
from vigia.exporter.probe.tracker import OUTCOMES

PROBE_KEY = "probe"
CONNECT_KEY = "connect"  # the Kafka Connect clusters (exporter.connect.collector.connect_json)
SOURCE_KEY = "source"


def cluster_json(
    state: ExporterState,
    probe: ProbeRunner | None = None,
    connect: Sequence[ConnectReport | None] = (),
    source: SourceWatcher | None = None,
) -> dict[str, Any]:
    """The whole document; no runner is the same as a disabled probe."""
    return {
        **state_json(state),
        SOURCE_KEY: source_json(source, state),
        PROBE_KEY: probe_json(probe),
        CONNECT_KEY: connect_json(
            connect, None if source is None else Pipeline(source.connector, source.flow)
        ),
    }


def source_json(source: SourceWatcher | None, state: ExporterState | None) -> dict[str, Any] | None:
    """The HES leg (None without --hes-dsn): the source watch's last round and the hops."""
    if source is None:
        return None
    look = source.look
    reading = look.hes if look is not None else None
    store_lag = None if state is None else state.max_lag_seconds.get((source.group, source.topic))
    return {
        "checked_at": look.checked_at if look is not None else None,
        "interval_seconds": source.interval,
        "count_interval_seconds": source.count_interval,
        "hes": {
            "up": look.hes_up if look is not None else None,
            "error": look.hes_error if look is not None else None,
            "newest_row_timestamp": reading.newest_row_timestamp if reading else None,
            "day_rows": {d.isoformat(): n for d, n in reading.day_rows.items()} if reading else {},
            "query_seconds": reading.query_seconds if reading else None,
            "day_rows_counted_at": reading.counted_at if reading else None,
        },
        "topic": {
            "name": source.topic,
            "newest_measure_timestamp": look.topic_newest_measure if look is not None else None,
            "error": look.topic_error if look is not None else None,
        },
        "group": source.group,
        "hop_lag_seconds": hop_lags(look, store_lag),
        "flow": flow_json(source),
        "binlog": binlog_json(source),
        "loss_horizon": loss_horizon_json(leg_horizon(source, state)),
    }


def loss_horizon_json(horizon: Horizon) -> dict[str, Any]:
    """How long until a measure is lost for good in the leg, and where
    (exporter.model.loss_horizon)."""
    return {
        "state": horizon.state,
        "seconds": horizon.seconds,
        "hop": horizon.hop,
        "complete": horizon.complete,
        "hops": [
            {
                "hop": h.hop,
                "state": h.state,
                "margin": None
                if h.margin_seconds is None
                else {"seconds": h.margin_seconds, "limit": h.limit, "method": h.method},
                "catch_up_seconds": h.catch_up_seconds,
                "reason": h.reason,
            }
            for h in horizon.hops
        ],
    }


def binlog_json(source: SourceWatcher) -> dict[str, Any] | None:
    """How long the HES keeps the binlog the connector still needs (exporter.model.binlog); None
    without --connect-offsets-topic."""
    watch = source.binlog
    if watch is None:
        return None
    v = watch.verdict
    margin = None if v is None else v.margin
    expiry = None if v is None else v.expiry
    return {
        "connector": watch.connector,
        "offsets_topic": watch.offsets.topic,
        "interval_seconds": watch.interval,
        "floor_seconds": watch.tracker.floor_seconds,
        "checked_at": None if v is None else v.at,
        "state": None if v is None else v.state,
        "reason": None if v is None else v.reason,
        "file": None if v is None else v.file,
        "margin": None
        if margin is None
        else {"seconds": margin.seconds, "limit": margin.limit, "method": margin.method},
        "catch_up_seconds": None if v is None else v.catch_up_seconds,
        "behind_bytes": None if v is None else v.bytes_behind,
        "drain_bytes_per_second": None if v is None else v.drain_bytes_per_second,
        "losses": None if v is None else v.losses,
        "expire_seconds": None if expiry is None else expiry.seconds,
        "size_limit_bytes": None if expiry is None else expiry.size_bytes,
        "binlog_size_bytes": None if v is None else v.size_bytes,
    }


def flow_json(source: SourceWatcher) -> dict[str, Any]:
    """Is data moving from the HES to the topic (exporter.model.pipeline_flow)?"""
    flow = source.flow
    return {
        "connector": source.connector,
        "stall_after_seconds": source.stall_after,
        "state": flow.state if flow is not None else None,
        "checked_at": flow.checked_at if flow is not None else None,
        "topic_end_offsets": flow.end_offsets if flow is not None else None,
        "moved_at": flow.moved_at if flow is not None else None,
        "pending_since": flow.pending_since if flow is not None else None,
    }


def probe_json(probe: ProbeRunner | None) -> dict[str, Any]:
    enabled = probe is not None and probe.settings.enabled
    stats = None if probe is None else probe.stats()
    brokers: list[dict[str, Any]] = []
    if stats is not None:
        for broker in sorted({b for b, _ in stats.messages} | set(stats.replication_latency)):
            brokers.append(
                {
                    "broker": broker,
                    "replication_latency_seconds": stats.replication_latency.get(broker),
                    "messages": {o: stats.messages.get((broker, o), 0) for o in OUTCOMES},
                }
            )
    return {
        "status": probe.status if probe is not None else DISABLED,
        "topic": probe.settings.topic if probe is not None and enabled else None,
        "interval_seconds": probe.settings.interval_seconds
        if probe is not None and enabled
        else None,
        "brokers": brokers,
        "coverage": [
            {"broker": broker, "covered": covered}
            for broker, covered in sorted((probe.coverage() if probe is not None else {}).items())
        ],
    }


def state_json(state: ExporterState, cluster_name: str | None = None) -> dict[str, Any]:
    """`cluster_name`: the --cluster the exporter was given (omitted when None)."""
    snap = state.snapshot
    named = {} if cluster_name is None else {"name": cluster_name}
    return {
        "collected_at": snap.collected_at,
        "collection_duration_seconds": snap.durations.get("total"),
        "up": state.up,
        "errors": [
            {"phase": e.phase, "kind": kind_of(e.message) or "other", "message": e.message}
            for e in snap.errors
        ],
        "capabilities": dict(sorted(snap.capabilities.items())),
        "cluster": {
            **named,
            "cluster_id": snap.cluster_id,
            "controller_id": snap.controller_id,
            "controller_source": snap.controller_source,
        },
        "brokers": _brokers(state),
        "topics": [_topic(state, t) for t in snap.topics],
        "broker_topic_rates": [
            {"broker": broker, "topic": topic, "messages_in_per_second": rate}
            for (broker, topic), rate in sorted(state.broker_topic_rates.items())
        ],
        "groups": _groups(state),
    }


def _brokers(state: ExporterState) -> list[dict[str, Any]]:
    snap = state.snapshot
    known: dict[int, Broker] = {b.id: b for b in snap.brokers}
    log_dirs: dict[int, BrokerLogDirs] = {b.broker: b for b in snap.log_dirs}
    brokers = []
    # Brokers missing from metadata but still expected (holding replicas, KRaft voters) are listed
    # too: they are down.
    for broker_id in sorted(state.broker_counts.keys() | state.broker_up.keys()):
        counts = state.broker_counts.get(broker_id, BrokerCounts())
        meta = known.get(broker_id)
        dirs = log_dirs.get(broker_id)
        brokers.append(
            {
                "id": broker_id,
                "host": meta.host if meta else None,
                "port": meta.port if meta else None,
                "rack": meta.rack if meta else None,
                "online": meta is not None,
                "is_controller": broker_id == snap.controller_id,
                "leader_partitions": counts.leader,
                "follower_partitions": counts.follower_in_sync,
                "preferred_leader_partitions": counts.preferred_leader,
                "log_dirs_error": dirs.error if dirs else None,
                "log_dirs": None
                if dirs is None or dirs.error is not None
                else [
                    {
                        "path": d.path,
                        "error": d.error,
                        "size_bytes": sum(p.size_bytes for p in d.partitions)
                        if d.error is None
                        else None,
                        "total_bytes": d.total_bytes,
                        "usable_bytes": d.usable_bytes,
                    }
                    for d in dirs.log_dirs
                ],
            }
        )
    return brokers


def _topic(state: ExporterState, topic: Topic) -> dict[str, Any]:
    partitions = []
    for p in topic.partitions:
        status = state.partition_status[(topic.name, p.partition)]
        sizes = {
            str(r): state.replica_sizes[(topic.name, p.partition, r)]
            for r in p.replicas
            if (topic.name, p.partition, r) in state.replica_sizes
        }
        partitions.append(
            {
                "partition": p.partition,
                "leader": p.leader,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "offline_replicas": list(p.offline_replicas),
                "earliest_offset": p.earliest_offset,
                "latest_offset": p.latest_offset,
                "under_replicated": status.under_replicated,
                "under_min_isr": status.under_min_isr,
                "offline": status.offline,
                "leader_is_preferred": status.leader_is_preferred,
                "replica_size_bytes": sizes,
                "out_of_sync_seconds": {
                    str(r): state.out_of_sync_seconds.get((topic.name, p.partition, r), 0.0)
                    for r in p.replicas
                },
            }
        )
    return {
        "name": topic.name,
        "internal": topic.internal,
        "min_insync_replicas": state.min_isr[topic.name],
        "size_bytes": state.topic_size_bytes.get(topic.name),
        "leader_size_bytes": state.topic_leader_size_bytes.get(topic.name),
        "messages_in_per_second": state.topic_rates.get(topic.name),
        "retention": _retention(state.retention.retention.get(topic.name, "unknown")),
        "outage_budget": _margin(state.retention.outage_budgets.get(topic.name)),
        "partitions": partitions,
    }


def _retention(limits: Retention | NoRetention) -> dict[str, Any]:
    """The limits Kafka deletes the topic's records by, or why it deletes none by them."""
    if isinstance(limits, Retention):
        return {"ms": limits.ms, "bytes": limits.bytes, "none": None}
    return {"ms": None, "bytes": None, "none": limits}


def _margin(margin: Margin | None) -> dict[str, Any] | None:
    if margin is None:
        return None
    return {"seconds": margin.seconds, "limit": margin.limit, "method": margin.method}


def _catch_up(estimate: CatchUpEstimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {
        "state": estimate.state.name.lower(),
        "backlog": estimate.backlog,
        "drain_per_second": estimate.drain_per_second,
        "consuming": estimate.consuming,
        "seconds": estimate.seconds,
    }


def _groups(state: ExporterState) -> list[dict[str, Any]]:
    lags: dict[str, list[PartitionLag]] = defaultdict(list)
    for item in state.group_lags:
        lags[item.group].append(item)
    uncommitted: dict[str, list[UncommittedPartition]] = defaultdict(list)
    for u in state.uncommitted:
        uncommitted[u.group].append(u)
    return [
        _group(state, g, lags[g.group_id], uncommitted[g.group_id]) for g in state.snapshot.groups
    ]


def _group(
    state: ExporterState,
    group: ConsumerGroup,
    lags: list[PartitionLag],
    uncommitted: list[UncommittedPartition],
) -> dict[str, Any]:
    per_topic: dict[str, list[PartitionLag]] = defaultdict(list)
    for item in lags:
        per_topic[item.topic].append(item)
    not_committed: dict[str, list[UncommittedPartition]] = defaultdict(list)
    for u in uncommitted:
        not_committed[u.topic].append(u)
    evaluation = state.group_status.get(group.group_id)
    topics = []
    view = state.retention
    for topic in sorted(per_topic.keys() | not_committed.keys()):
        items = per_topic[topic]
        owned = [u for u in not_committed[topic] if u.owned]
        # Committed partitions, and those a live member owns uncommitted (docs/lag.md).
        counted = [*(i.partition for i in items), *(u.partition for u in owned)]
        behind = [i.partition for i in items if i.lag] + [u.partition for u in owned if u.backlog]
        losses = [
            lost for i in items if (lost := view.losses.get((group.group_id, topic, i.partition)))
        ]
        known = [i.lag for i in items if i.lag is not None]
        known += [u.backlog for u in not_committed[topic] if u.owned and u.backlog is not None]
        topics.append(
            {
                "topic": topic,
                "lag": sum(known) if known else None,
                "uncommitted_partitions": len(not_committed[topic]),
                "committed_offset_sum": sum(i.committed for i in items),
                "max_lag_seconds": state.max_lag_seconds.get((group.group_id, topic)),
                "max_lag_seconds_method": _max_method(state, group.group_id, topic, counted),
                "max_lag_seconds_withheld": _withheld(state, group.group_id, topic, behind),
                "messages_consumed_per_second": state.consumed_rates.get((group.group_id, topic)),
                "retention_margin": _margin(view.margins.get((group.group_id, topic))),
                "catch_up": _catch_up(view.catch_up.get((group.group_id, topic))),
                "retention_at_risk": view.at_risk.get((group.group_id, topic)),
                "lost_messages": sum(lost.missing for lost in losses) if losses else None,
                "lost_messages_detected": sum(lost.counted for lost in losses) if losses else None,
            }
        )
    return {
        "group_id": group.group_id,
        "state": group.state,
        "type": group.type,
        "protocol": group.protocol,
        "coordinator": group.coordinator,
        "denied": list(group.denied),
        "status": None if evaluation is None else evaluation.status.name,
        "status_window_completeness": None if evaluation is None else evaluation.complete,
        "members": None
        if group.members is None
        else [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "assignment": [{"topic": a.topic, "partition": a.partition} for a in m.assignment],
            }
            for m in group.members
        ],
        "topics": topics,
        "partitions": sorted(
            [_group_partition(state, i) for i in lags]
            + [_uncommitted_partition(state, u) for u in uncommitted],
            key=lambda p: (p["topic"], p["partition"]),
        ),
    }


def _uncommitted_partition(state: ExporterState, u: UncommittedPartition) -> dict[str, Any]:
    key = (u.group, u.topic, u.partition)
    return {
        "topic": u.topic,
        "partition": u.partition,
        "committed_offset": None,
        "owned": u.owned,
        "latest_offset": None,
        "lag": u.backlog if u.owned else None,
        "lag_seconds": state.lag_seconds.get(key),
        "lag_seconds_method": state.lag_seconds_methods.get(key),
        "status": None,
        "status_window_complete": None,
        "status_window_completeness": None,
        "retention_margin": None,
        "lost_messages": None,
    }


def _max_method(state: ExporterState, group: str, topic: str, partitions: list[int]) -> str | None:
    """The method of the partition that gave max_lag_seconds (null when that is null)."""
    if (group, topic) not in state.max_lag_seconds:
        return None
    keys = [(group, topic, p) for p in partitions if (group, topic, p) in state.lag_seconds]
    return state.lag_seconds_methods[max(keys, key=lambda k: state.lag_seconds[k])]


def _withheld(state: ExporterState, group: str, topic: str, partitions: list[int]) -> str | None:
    """Why max_lag_seconds is null while the topic has lag (docs/lag.md), else null."""
    if (group, topic) in state.max_lag_seconds:
        return None
    missing = [p for p in partitions if (group, topic, p) not in state.lag_seconds]
    if not missing:
        return None
    return (
        f"{len(missing)} of {len(partitions)} partitions with lag have no lag seconds yet "
        "(record not read, history too short)"
    )


def _group_partition(state: ExporterState, item: PartitionLag) -> dict[str, Any]:
    key = (item.group, item.topic, item.partition)
    evaluation = state.lag_status.get(key)
    return {
        "topic": item.topic,
        "partition": item.partition,
        "committed_offset": item.committed,
        "latest_offset": item.latest,
        "lag": item.lag,
        "lag_seconds": state.lag_seconds.get(key),
        "lag_seconds_method": state.lag_seconds_methods.get(key),
        "status": None if evaluation is None else evaluation.status.name,
        "status_window_complete": None if evaluation is None else evaluation.window_complete,
        "status_window_completeness": None if evaluation is None else evaluation.complete,
        "retention_margin": _margin(state.retention.partition_margins.get(key)),
        "lost_messages": loss.missing if (loss := state.retention.losses.get(key)) else None,
    }
