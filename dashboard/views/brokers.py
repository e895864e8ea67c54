"""Brokers: leaders and followers per broker, leader skew, preferred leaders, CPU, memory, disk."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from dash import html

from vigia.dashboard.cluster import Cluster, LogDir
from vigia.dashboard.data import Plan, Unreachable
from vigia.dashboard.views.common import (
    JMX,
    NOT_AVAILABLE,
    Figure,
    Filters,
    PageContext,
    bar_figure,
    broker_color,
    card,
    empty_figure,
    fmt_bytes,
    fmt_int,
    graph,
    line_figure,
    matrix_traces,
    no_topology,
    not_available,
    note,
    series_broker,
    simple_table,
)

# JMX process metrics also exist for Prometheus, the exporter, ... — keep only Kafka broker targets.
_ON_BROKERS = "and on(job, instance) kafka_server_replicamanager_leadercount"


@dataclass(frozen=True)
class BrokerRow:
    id: int
    up: bool
    address: str
    is_controller: bool
    leaders: int
    followers: int
    replicas: int
    preferred: int
    not_on_preferred: int  # partitions whose preferred leader is this broker but led elsewhere
    leader_skew: float  # leaders minus the mean over live brokers
    disk_used: int | None
    disk_total: int | None
    disk_usable: int | None


def broker_rows(cluster: Cluster) -> list[BrokerRow]:
    replicas = Counter(r for p in cluster.partitions for r in p.replicas)
    not_preferred = Counter(
        p.replicas[0] for p in cluster.partitions if p.replicas and p.leader != p.replicas[0]
    )
    live = [b for b in cluster.brokers if b.up]
    mean = sum(b.leader_partitions for b in live) / len(live) if live else 0.0
    rows = []
    for b in cluster.brokers:
        dirs = [d for d in b.log_dirs if d.error is None]
        rows.append(
            BrokerRow(
                id=b.id,
                up=b.up,
                address=f"{b.host}:{b.port}" if b.host else "–",
                is_controller=b.is_controller or b.id == cluster.controller_id,
                leaders=b.leader_partitions,
                followers=b.follower_partitions,
                replicas=replicas[b.id],
                preferred=b.preferred_leader_partitions,
                not_on_preferred=not_preferred[b.id],
                leader_skew=b.leader_partitions - mean if b.up else 0.0,
                disk_used=sum(d.size_bytes or 0 for d in dirs) if dirs else None,
                disk_total=_sum_distinct_volumes(dirs, "total_bytes"),
                disk_usable=_sum_distinct_volumes(dirs, "usable_bytes"),
            )
        )
    return rows


def _sum_distinct_volumes(dirs: list[LogDir], attr: str) -> int | None:
    values = [getattr(d, attr) for d in dirs if getattr(d, attr) is not None]
    # Several log dirs on one volume report the same total/usable; count the volume once.
    return sum(set(values)) if values else None


@dataclass(frozen=True)
class LeaderBalance:
    max_deviation: float  # partitions away from an even share
    skew_ratio: float  # max leaders / mean leaders - 1 over live brokers


def leader_balance(rows: list[BrokerRow]) -> LeaderBalance:
    live = [r for r in rows if r.up]
    if not live:
        return LeaderBalance(0.0, 0.0)
    mean = sum(r.leaders for r in live) / len(live)
    top = max(r.leaders for r in live)
    return LeaderBalance(
        max_deviation=max(abs(r.leader_skew) for r in live),
        skew_ratio=top / mean - 1 if mean else 0.0,
    )


def plan(filters: Filters) -> Plan:
    b = filters.matchers(broker=True)
    return Plan(
        cluster=True,
        ranged={
            "leaders": f"sum by (broker) (kafka_broker_leader_partitions{{{b}}})",
            "cpu": f"sum by (broker, instance) (rate(process_cpu_seconds_total[2m]) {_ON_BROKERS})",
            "rss": f"sum by (broker, instance) (process_resident_memory_bytes {_ON_BROKERS})",
            "heap": (
                f'sum by (broker, instance) (jvm_memory_bytes_used{{area="heap"}} {_ON_BROKERS})'
            ),
        },
    )


def _keep_jmx(filters: Filters) -> Any:
    return lambda labels: "broker" not in labels or filters.keep_broker(labels["broker"])


@dataclass(frozen=True)
class LogDirRow:
    broker: int
    path: str
    kafka_bytes: int | None
    used_ratio: float | None  # of the whole volume, Kafka data and everything else
    usable_bytes: int | None
    total_bytes: int | None
    error: str | None


def log_dir_rows(cluster: Cluster, filters: Filters) -> list[LogDirRow]:
    rows = []
    lacking = cluster.lacks("describe_log_dirs")
    for b in cluster.brokers:
        if not filters.keep_broker(b.id):
            continue
        if lacking:
            rows.append(
                LogDirRow(b.id, "–", None, None, None, None, not_available("DescribeLogDirs"))
            )
            continue
        if b.log_dirs_error or not b.log_dirs:
            error = b.log_dirs_error or ("broker down" if not b.up else "no log dirs reported")
            rows.append(LogDirRow(b.id, "–", None, None, None, None, error))
        for d in b.log_dirs:
            ratio = (
                1 - d.usable_bytes / d.total_bytes
                if d.total_bytes and d.usable_bytes is not None
                else None
            )
            rows.append(
                LogDirRow(b.id, d.path, d.size_bytes, ratio, d.usable_bytes, d.total_bytes, d.error)
            )
    return rows


def volume_figure(rows: list[LogDirRow]) -> Figure:
    known = [r for r in rows if r.used_ratio is not None]
    if rows and all(r.error and r.error.startswith(NOT_AVAILABLE) for r in rows):
        return empty_figure("Log dir volumes", not_available("DescribeLogDirs"))
    if not known:
        return empty_figure("Log dir volumes", "no volume sizes (Kafka < 3.3 or exporter down)")
    colors = [
        "#c8323c" if r.used_ratio >= 0.85 else "#e0a020" if r.used_ratio >= 0.7 else "#2a9d6f"
        for r in known
        if r.used_ratio is not None
    ]
    fig = bar_figure(
        "Volume used (%)",
        [f"broker {r.broker} {r.path}" for r in known],
        {"used": [round((r.used_ratio or 0) * 100, 1) for r in known]},
        y_title="% of volume",
    )
    fig["data"][0]["marker"] = {"color": colors}
    fig["layout"]["yaxis"]["range"] = [0, 100]
    fig["layout"]["showlegend"] = False
    return fig


def disk_section(cluster: Cluster, filters: Filters) -> list[Any]:
    if cluster.lacks("describe_log_dirs"):  # one line, not a red row of "–" per broker
        return [
            html.Div(
                f"{not_available('DescribeLogDirs')}: each log dir's Kafka data, volume used and "
                "free space come from it.",
                className="muted",
                id="log-dirs-lacking",
            )
        ]
    rows = log_dir_rows(cluster, filters)
    table = simple_table(
        ["Broker", "Log dir", "Kafka data", "Volume used", "Free", "Volume size"],
        [
            [
                str(r.broker),
                r.path if r.error is None else f"{r.path} — {r.error}",
                fmt_bytes(r.kafka_bytes),
                "–" if r.used_ratio is None else f"{r.used_ratio:.1%}",
                fmt_bytes(r.usable_bytes),
                fmt_bytes(r.total_bytes),
            ]
            for r in rows
        ],
        id="log-dirs-table",
        row_classes=["row-bad" if r.error else "" for r in rows],
    )
    return [table, graph(volume_figure(rows), "fig-brokers-volumes")]


def build(ctx: PageContext) -> list[Any]:
    cluster = ctx.topology
    f = ctx.filters
    keep = _keep_jmx(f)
    cpu = matrix_traces(
        ctx.ranged("cpu"),
        series_broker,
        keep,
        metric="process_cpu_seconds_total",
        needs=JMX,
        color=broker_color,
    )
    rss = matrix_traces(
        ctx.ranged("rss"),
        lambda lab: f"{series_broker(lab)} RSS",
        keep,
        metric="process_resident_memory_bytes",
        needs=JMX,
        color=broker_color,
    )
    heap = matrix_traces(
        ctx.ranged("heap"),
        lambda lab: f"{series_broker(lab)} heap",
        keep,
        metric="jvm_memory_bytes_used",
        needs=JMX,
        color=broker_color,
        dash="dot",
    )
    leaders_hist = matrix_traces(
        ctx.ranged("leaders"),
        series_broker,
        metric="kafka_broker_leader_partitions",
        color=broker_color,
    )
    history = [
        card(
            "Leaders per broker over time",
            graph(
                line_figure(
                    "Leader partitions per broker",
                    leaders_hist,
                    y_title="partitions",
                    step=True,
                ),
                "fig-brokers-leaders-history",
            ),
        ),
        card(
            "CPU",
            graph(
                line_figure("CPU (cores used)", cpu, y_title="cores"),
                "fig-brokers-cpu",
            ),
        ),
        card(
            "Memory",
            graph(
                line_figure(
                    "Memory: process RSS (solid) and JVM heap used (dotted)",
                    rss + heap,
                    y_title="bytes",
                    extra_layout={"yaxis": {"tickformat": ".2s", "rangemode": "tozero"}},
                ),
                "fig-brokers-memory",
            ),
        ),
    ]
    if isinstance(cluster, Unreachable):
        return [
            html.Div(
                card("Brokers", no_topology(cluster), wide=True),
                className="grid",
            ),
            html.Div(history, className="grid"),
        ]
    rows = [r for r in broker_rows(cluster) if f.keep_broker(r.id)]
    balance = leader_balance(broker_rows(cluster))
    table = simple_table(
        [
            "Broker",
            "Status",
            "Address",
            "Leaders",
            "Followers",
            "Replicas",
            "Preferred leader of",
            "Not on preferred",
            "Leader skew",
            "Kafka data",
            "Free",
        ],
        [
            [
                f"{r.id}" + (" ★" if r.is_controller else ""),
                "up" if r.up else "DOWN",
                r.address,
                fmt_int(r.leaders),
                fmt_int(r.followers),
                fmt_int(r.replicas),
                fmt_int(r.preferred),
                fmt_int(r.not_on_preferred),
                f"{r.leader_skew:+.1f}",
                fmt_bytes(r.disk_used),
                fmt_bytes(r.disk_usable),
            ]
            for r in rows
        ],
        id="brokers-table",
        row_classes=[
            "row-bad" if not r.up else "row-warn" if r.not_on_preferred else "" for r in rows
        ],
    )
    categories = [f"broker {r.id}" for r in rows]
    counts = bar_figure(
        "Leader and follower partitions per broker",
        categories,
        {"leaders": [r.leaders for r in rows], "followers": [r.followers for r in rows]},
        y_title="partitions",
    )
    return [
        html.Div(
            [
                card(
                    "Brokers",
                    table,
                    note(
                        f"Leader skew: at most {balance.max_deviation:.1f} partitions from an even "
                        f"share; busiest broker leads {balance.skew_ratio:.0%} more than the mean. "
                        '★ = active controller. "Not on preferred": partitions whose preferred '
                        "(first) replica is this broker but whose leader is another broker."
                    ),
                    wide=True,
                ),
                card("Partitions per broker", graph(counts, "fig-brokers-partitions")),
                card("Disk per log dir", *disk_section(cluster, f)),
            ],
            className="grid",
        ),
        html.Div(history, className="grid"),
    ]
