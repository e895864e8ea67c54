"""The Capacity page's outage budget per hop of the leg: how long Connect, and the ingest job, may
stay down at today's write rate before a measure is lost, and the settings a target budget needs
(`dashboard.leg_budget`). Reads the exporter's JSON (the binlog's expiry, topic `measure`) and
Prometheus (the binlog's write rate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vigia.dashboard.cluster import Cluster, Topic
from vigia.dashboard.data import Unreachable, Vector, scalar
from vigia.dashboard.leg_budget import (
    Budget,
    binlog_budget,
    binlog_settings,
    kafka_budget,
    kafka_settings,
)
from vigia.dashboard.views.common import fmt_bytes

TOPIC = "measure"
BINLOG_WRITTEN = "sum(rate(vigia_hes_binlog_written_bytes_total[1h]))"
COLUMNS = ["Hop", "May stay down", "Budget now", "Target", "Settings for the target", "Disk"]


def _duration(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours / 24:g} d" if hours >= 48 and hours % 24 == 0 else f"{hours:g} h"


def _budget(budget: Budget) -> str:
    if budget.seconds is None:
        return "unlimited (nothing purges)" if budget.limit == "none" else "unknown"
    return f"{_duration(round(budget.seconds))} ({budget.limit})"


def _advice(budget: Budget, target: float, needs: str) -> str:
    if budget.limit == "none":
        return "none needed: nothing purges"
    if budget.seconds is not None and budget.seconds >= target:
        return "kept: " + needs
    return "raise to at least: " + needs


def binlog_row(
    raw: Mapping[str, Any] | Unreachable | None, written: Vector | Unreachable, target: float
) -> list[str] | None:
    """None when the exporter does not watch the binlog (no --hes-dsn or offsets topic)."""
    source = raw.get("source") if isinstance(raw, Mapping) else None
    watched = (source or {}).get("binlog")
    if not watched:
        return None
    expire, size_limit = watched.get("expire_seconds"), watched.get("size_limit_bytes")
    rate = scalar(written)
    budget = binlog_budget(expire, size_limit, rate)
    settings = binlog_settings(target, size_limit, rate)
    needs = f"binlog_expire_logs_seconds={settings.expire_seconds}"
    if settings.size_limit_bytes is not None:
        needs += f", max_binlog_total_size={settings.size_limit_bytes}"
    return [
        "HES binlog → Connect",
        "Kafka Connect (Debezium)",
        _budget(budget),
        _duration(target),
        _advice(budget, target, needs),
        _disk(settings.disk_bytes, "of binlog on the HES"),
    ]


def kafka_row(
    raw: Mapping[str, Any] | Unreachable | None, cluster: Cluster, target: float
) -> list[str] | None:
    """None without topic `measure`."""
    topic = next((t for t in cluster.topics if t.name == TOPIC), None)
    if topic is None:
        return None
    limits = _retention(raw)
    budget = kafka_budget(
        topic.outage_budget_seconds, topic.outage_budget_limit, limits.get("none") != "unknown"
    )
    settings = kafka_settings(
        target,
        limits.get("bytes"),
        _bytes_per_second(topic),
        len(topic.partitions),
        topic.replication_factor,
    )
    needs = f"retention.ms={settings.retention_ms}"
    if settings.retention_bytes is not None:
        needs += f", retention.bytes={settings.retention_bytes}"
    return [
        f"Kafka {TOPIC} → ingest job",
        "the ingest job (vigia-ingest)",
        _budget(budget),
        _duration(target),
        _advice(budget, target, needs),
        _disk(settings.disk_bytes, f"on the brokers (RF {topic.replication_factor})"),
    ]


def _disk(bytes_: float | None, where: str) -> str:
    return "unknown: no write rate yet" if bytes_ is None else f"{fmt_bytes(bytes_)} {where}"


def _retention(raw: Mapping[str, Any] | Unreachable | None) -> Mapping[str, Any]:
    """Topic `measure`'s retention in the exporter's JSON (ms, bytes, none)."""
    topics = raw.get("topics") if isinstance(raw, Mapping) else None
    found = next((t for t in topics or () if t.get("name") == TOPIC), None)
    return (found or {}).get("retention") or {"none": "unknown"}


def _bytes_per_second(topic: Topic) -> float | None:
    """Messages in/s × the bytes a retained message takes on the leader."""
    retained = sum(p.messages or 0 for p in topic.partitions)
    if topic.messages_in_per_second is None or not topic.leader_size_bytes or not retained:
        return None
    return topic.messages_in_per_second * topic.leader_size_bytes / retained


def rows(
    raw: Mapping[str, Any] | Unreachable | None,
    cluster: Cluster,
    written: Vector | Unreachable,
    target: float,
) -> list[list[str]]:
    return [
        row
        for row in (binlog_row(raw, written, target), kafka_row(raw, cluster, target))
        if row is not None
    ]
