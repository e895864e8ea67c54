"""Topics: searchable partition table, topic × broker leader matrix, size treemap, rates."""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

from dash import html

from vigia.dashboard.cluster import Cluster, Partition, Topic, filter_topics
from vigia.dashboard.data import Plan, Unreachable
from vigia.dashboard.views.common import (
    Figure,
    Filters,
    PageContext,
    card,
    column,
    empty_figure,
    fmt_bytes,
    fmt_int,
    fmt_number,
    fmt_seconds,
    graph,
    grid,
    line_figure,
    matrix_traces,
    no_topology,
    not_available,
    note,
    simple_table,
)


def plan(filters: Filters) -> Plan:
    t = filters.matchers(topic=True)
    bt = filters.matchers(broker=True, topic=True)
    return Plan(
        cluster=True,
        ranged={
            "topic_rate": f"sum by (topic) (kafka_topic_messages_in_per_second{{{t}}})",
            "broker_topic_rate": (
                f"sum by (broker, topic) (kafka_broker_topic_messages_in_per_second{{{bt}}})"
            ),
        },
    )


def visible_partitions(topics: Sequence[Topic], filters: Filters) -> list[Partition]:
    """Partitions of the selected topics that have a replica on a selected broker."""
    return [
        p
        for t in topics
        for p in t.partitions
        if not filters.brokers or any(filters.keep_broker(r) for r in p.replicas)
    ]


def _flags(p: Partition) -> str:
    flags = []
    if p.offline:
        flags.append("offline")
    if p.under_min_isr:
        flags.append("under min ISR")
    if p.under_replicated:
        flags.append("URP")
    if not p.offline and not p.leader_is_preferred:
        flags.append("not preferred")
    return ", ".join(flags)


def _ids(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def _out_of_sync_text(p: Partition) -> str:
    missing = p.out_of_sync
    if not missing:
        return ""
    parts = []
    for broker in missing:
        seconds = p.out_of_sync_seconds.get(broker)
        parts.append(f"{broker}: {fmt_seconds(seconds)}" if seconds is not None else str(broker))
    return "; ".join(parts)


def partition_rows(
    partitions: Sequence[Partition], internal: Set[str] = frozenset()
) -> list[dict[str, Any]]:
    """Rows of the partition table: partitions with a problem first, then user topics, then the
    `internal` ones. Raw numbers, so the table sorts them numerically."""
    ordered = sorted(
        partitions, key=lambda p: (not _flags(p), p.topic in internal, p.topic, p.partition)
    )
    return [
        {
            "topic": p.topic,
            "partition": p.partition,
            "leader": p.leader if p.leader is not None else "none",
            "replicas": _ids(p.replicas),
            "isr": _ids(p.isr),
            "out_of_sync": _out_of_sync_text(p),
            "size_bytes": p.size_bytes,
            "earliest_offset": p.earliest_offset,
            "latest_offset": p.latest_offset,
            "messages": p.messages,
            "flags": _flags(p),
        }
        for p in ordered
    ]


PARTITION_COLUMNS = [
    column("topic", "Topic", "wide"),
    column("partition", "Partition", "numeric"),
    column("leader", "Leader"),
    column("replicas", "Replicas"),
    column("isr", "ISR"),
    column("out_of_sync", "Out of sync (broker: time)", "wide"),
    column("size_bytes", "Size (bytes)", "numeric"),
    column("earliest_offset", "Earliest offset", "numeric"),
    column("latest_offset", "Latest offset", "numeric"),
    column("messages", "Messages", "numeric"),
    column("flags", "Flags"),
]


def leader_matrix(
    topics: Sequence[Topic], broker_ids: Sequence[int]
) -> tuple[list[str], list[int], list[list[int]]]:
    """(topic names, broker ids, counts[topic][broker]) of partitions led per topic and broker."""
    index = {b: i for i, b in enumerate(broker_ids)}
    z = []
    for t in topics:
        row = [0] * len(broker_ids)
        for p in t.partitions:
            if p.leader in index:
                row[index[p.leader]] += 1
        z.append(row)
    return [t.name for t in topics], list(broker_ids), z


def leader_matrix_figure(topics: Sequence[Topic], broker_ids: Sequence[int]) -> Figure:
    """Counts in the cells; colour = the broker's share of the topic's leaders (even = pale)."""
    names, brokers, z = leader_matrix(topics, broker_ids)
    if not names or not brokers:
        return empty_figure("Leaders per topic and broker", "no topics")
    shares = [[v / sum(row) if sum(row) else 0.0 for v in row] for row in z]
    return {
        "data": [
            {
                "type": "heatmap",
                "x": [f"broker {b}" for b in brokers],
                "y": names,
                "z": shares,
                "zmin": 0,
                "zmax": 1,
                "text": [[str(v) for v in row] for row in z],
                "texttemplate": "%{text}",
                "colorscale": [[0, "#f4f7fb"], [1 / len(brokers), "#c9daf5"], [1, "#1f4fa8"]],
                "hovertemplate": "%{y} on %{x}: %{text} leaders (%{z:.0%})<extra></extra>",
                "showscale": False,
                "xgap": 2,
                "ygap": 2,
            }
        ],
        "layout": {
            "title": {"text": "Leaders per topic × broker", "font": {"size": 14}, "x": 0.01},
            "margin": {"l": 160, "r": 20, "t": 60, "b": 20},
            "height": min(140 + 26 * len(names), 900),
            "yaxis": {"autorange": "reversed", "type": "category"},
            "xaxis": {"type": "category", "side": "top"},
            "paper_bgcolor": "white",
            "plot_bgcolor": "white",
            "uirevision": "leader-matrix",
        },
    }


def treemap_figure(partitions: Sequence[Partition], lacks_sizes: bool = False) -> Figure:
    if lacks_sizes:
        return empty_figure("Partition sizes", not_available("DescribeLogDirs"))
    sized = [p for p in partitions if p.size_bytes is not None]
    if not sized:
        return empty_figure("Partition sizes", "no log dir sizes from the exporter")
    totals: dict[str, int] = {}
    for p in sized:
        totals[p.topic] = totals.get(p.topic, 0) + (p.size_bytes or 0)
    ids = list(totals) + [f"{p.topic}/{p.partition}" for p in sized]
    labels = list(totals) + [f"{p.topic}-{p.partition}" for p in sized]
    parents = [""] * len(totals) + [p.topic for p in sized]
    values = list(totals.values()) + [p.size_bytes or 0 for p in sized]
    return {
        "data": [
            {
                "type": "treemap",
                "ids": ids,
                "labels": labels,
                "parents": parents,
                "values": values,
                "branchvalues": "total",
                # formatted in the browser: 1,000 pre-formatted strings would slow each refresh
                "texttemplate": "%{label}<br>%{value:.3s}B",
                "hovertemplate": "%{label}: %{value:,} bytes<extra></extra>",
                "maxdepth": 2,
            }
        ],
        "layout": {
            "title": {"text": "Partition sizes (leader replica)", "font": {"size": 14}, "x": 0.01},
            "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
            "height": 420,
            "uirevision": "treemap",
        },
    }


def topic_rows(topics: Sequence[Topic]) -> list[list[str]]:
    rows = []
    for t in topics:
        urp = sum(p.under_replicated for p in t.partitions)
        retained = [p.messages for p in t.partitions if p.messages is not None]
        rows.append(
            [
                t.name + (" (internal)" if t.internal else ""),
                fmt_int(len(t.partitions)),
                fmt_int(t.replication_factor),
                fmt_int(t.min_insync_replicas),
                fmt_number(t.messages_in_per_second),
                fmt_int(sum(retained) if retained else None),
                fmt_bytes(t.leader_size_bytes),
                fmt_bytes(t.size_bytes),
                fmt_int(urp),
            ]
        )
    return rows


def build(ctx: PageContext) -> list[Any]:
    f = ctx.filters
    topic_rate = matrix_traces(
        ctx.ranged("topic_rate"),
        lambda lab: lab.get("topic", "?"),
        metric="kafka_topic_messages_in_per_second",
        drop_idle=True,
    )
    bt_rate = matrix_traces(
        ctx.ranged("broker_topic_rate"),
        lambda lab: f"broker {lab.get('broker', '?')} · {lab.get('topic', '?')}",
        metric="kafka_broker_topic_messages_in_per_second",
        drop_idle=True,
    )
    rates = html.Div(
        [
            card(
                "Messages in per topic",
                graph(
                    line_figure(
                        "Messages in per second, per topic",
                        topic_rate,
                        y_title="msg/s",
                    ),
                    "fig-topics-rate",
                ),
            ),
            card(
                "Messages in per broker and topic",
                graph(
                    line_figure(
                        "Messages in per second, per leader broker and topic",
                        bt_rate,
                        y_title="msg/s",
                    ),
                    "fig-topics-broker-rate",
                ),
            ),
        ],
        className="grid",
    )
    cluster = ctx.topology
    if isinstance(cluster, Unreachable):
        return [
            html.Div(
                card("Topics", no_topology(cluster), wide=True),
                className="grid",
            ),
            rates,
        ]
    return [*_topology_sections(cluster, f), rates]


def _topology_sections(cluster: Cluster, f: Filters) -> list[Any]:
    topics = filter_topics(cluster.topics, f.topics)
    partitions = visible_partitions(topics, f)
    broker_ids = [b.id for b in cluster.brokers if f.keep_broker(b.id)]
    table = grid(
        "partitions-table",
        PARTITION_COLUMNS,
        partition_rows(partitions, {t.name for t in topics if t.internal}),
        row_styles=[
            ("params.data.flags.includes('offline')", "#f9c9c9"),
            ("params.data.flags.includes('min ISR')", "#fde2e2"),
            ("params.data.flags.includes('URP')", "#fff4dc"),
        ],
        search_placeholder="search partitions (e.g. measure URP)",
    )
    return [
        html.Div(
            [
                card(
                    "Topics",
                    simple_table(
                        [
                            "Topic",
                            "Partitions",
                            "RF",
                            "Min ISR",
                            "Msg/s",
                            "Messages retained",
                            "Size (leaders)",
                            "Size (all replicas)",
                            "URP",
                        ],
                        topic_rows(topics),
                        id="topics-table",
                    ),
                    wide=True,
                ),
                card(
                    f"Partitions ({len(partitions)})",
                    note(
                        "Problems first. Every search word must match some column; column "
                        "menus filter and sort."
                    ),
                    table,
                    wide=True,
                ),
                card(
                    "Leader distribution",
                    graph(leader_matrix_figure(topics, broker_ids), "fig-topics-leader-matrix"),
                ),
                card(
                    "Partition sizes",
                    graph(
                        treemap_figure(partitions, cluster.lacks("describe_log_dirs")),
                        "fig-topics-treemap",
                    ),
                ),
            ],
            className="grid",
        )
    ]
