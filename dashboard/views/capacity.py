"""Capacity: disk growth and days until full, partitions per broker, throughput, sizing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dash import dcc, html

from vigia.dashboard.cluster import Cluster, Topic
from vigia.dashboard.data import Plan, Unreachable, Vector
from vigia.dashboard.sizing import SizingError, SizingInputs, SizingResult, size_cluster
from vigia.dashboard.views import outage
from vigia.dashboard.views.common import (
    JMX,
    Filters,
    PageContext,
    bar_figure,
    broker_color,
    card,
    fmt_bytes,
    fmt_int,
    fmt_number,
    fmt_seconds,
    graph,
    line_figure,
    matrix_traces,
    no_topology,
    not_available,
    note,
    series_broker,
    simple_table,
)

DEFAULT_BYTES_PER_MESSAGE = 200.0
DEFAULT_PER_CONSUMER = 5000.0
DEFAULT_RETENTION_HOURS = 168.0
DEFAULT_DISK_BYTES = 1e12
DEFAULT_NETWORK_BYTES = 125e6  # 1 Gbit/s
GB, MB = 1e9, 1e6


def plan(filters: Filters, window_seconds: float) -> Plan:
    b = filters.matchers(broker=True)
    growth_window = f"{max(int(window_seconds), 300)}s"
    return Plan(
        cluster=True,
        instant={
            "growth": (
                f"sum by (broker, log_dir) (deriv(kafka_broker_log_dir_size_bytes{{{b}}}"
                f"[{growth_window}]))"
            ),
            "binlog_written": outage.BINLOG_WRITTEN,
        },
        ranged={
            "disk_used": f"sum by (broker) (kafka_broker_log_dir_size_bytes{{{b}}})",
            "messages_in": 'sum(kafka_topic_messages_in_per_second{topic!~"__.*"})',
            "bytes_in": (
                "sum by (broker) "
                '(rate(kafka_server_brokertopicmetrics_bytesin_total{topic=""}[5m]))'
            ),
            "bytes_out": (
                "sum by (broker) "
                '(rate(kafka_server_brokertopicmetrics_bytesout_total{topic=""}[5m]))'
            ),
        },
    )


@dataclass(frozen=True)
class DiskOutlook:
    broker: int
    used_bytes: int | None
    usable_bytes: int | None
    growth_bytes_per_second: float | None
    days_until_full: float | None  # None: not growing (or unknown)


def disk_outlook(cluster: Cluster, growth: Vector | Unreachable) -> list[DiskOutlook]:
    """Per broker: growth summed over its log dirs and the soonest log dir to fill."""
    per_dir: dict[tuple[str, str], float] = {}
    if isinstance(growth, list):
        per_dir = {
            (s.labels.get("broker", ""), s.labels.get("log_dir", "")): s.value
            for s in growth
            if s.value is not None
        }
    out = []
    for b in cluster.brokers:
        if not b.up:
            continue
        rates = [per_dir[(str(b.id), d.path)] for d in b.log_dirs if (str(b.id), d.path) in per_dir]
        days = [
            d.usable_bytes / per_dir[(str(b.id), d.path)] / 86400
            for d in b.log_dirs
            if d.usable_bytes is not None and per_dir.get((str(b.id), d.path), 0) > 0
        ]
        used = [d.size_bytes for d in b.log_dirs if d.size_bytes is not None]
        usable = {d.usable_bytes for d in b.log_dirs if d.usable_bytes is not None}
        out.append(
            DiskOutlook(
                broker=b.id,
                used_bytes=sum(used) if used else None,
                usable_bytes=sum(usable) if usable else None,
                growth_bytes_per_second=sum(rates) if rates else None,
                days_until_full=min(days) if days else None,
            )
        )
    return out


@dataclass(frozen=True)
class Prefill:
    topic: str | None
    inputs: SizingInputs
    sources: Mapping[str, str]  # input field -> where its value came from


def outage_budget_rows(cluster: Cluster, filters: Filters) -> list[list[str]]:
    """User topics Kafka deletes from by retention, the shortest outage budget first: how long a
    consumer that stopped now could stay stopped before losing a message."""
    topics = [
        t
        for t in cluster.topics
        if not t.internal and t.outage_budget_seconds is not None and filters.keep_topic(t.name)
    ]
    return [
        [
            t.name,
            f"{fmt_seconds(t.outage_budget_seconds)} ({t.outage_budget_limit})",
            fmt_number(t.messages_in_per_second) if t.messages_in_per_second is not None else "–",
            fmt_bytes(t.size_bytes),
        ]
        for t in sorted(topics, key=lambda t: (t.outage_budget_seconds, t.name))
    ]


def default_topic(cluster: Cluster, filters: Filters) -> str | None:
    """The first selected topic, else `measure`, else the busiest user topic."""
    names = [t.name for t in cluster.topics]
    for name in (*filters.topics, "measure"):
        if name in names:
            return name
    user = [t for t in cluster.topics if not t.internal]
    if not user:
        return None
    return max(user, key=lambda t: (t.messages_in_per_second or 0, t.name)).name


def live_queries(topic: str) -> dict[str, str]:
    """Instant queries for inputs the topology may lack (rates are null on its first collection)."""
    t = json.dumps(topic)  # a valid PromQL string literal
    return {
        "topic_rate": f"sum(kafka_topic_messages_in_per_second{{topic={t}}})",
        "per_member": (
            "max(sum by (consumergroup) "
            f"(kafka_consumergroup_messages_consumed_per_second{{topic={t}}})"
            " / on (consumergroup) (max by (consumergroup) (kafka_consumergroup_members) > 0))"
        ),
    }


def prefill(
    cluster: Cluster | None, topic_name: str | None, live: Mapping[str, float | None] | None = None
) -> Prefill:
    """Calculator inputs from the live topology, else from Prometheus (`live`, results of
    `live_queries`); every value says where it came from or that it is assumed."""
    live = live or {}
    topic: Topic | None = None
    if cluster is not None:
        topic = next((t for t in cluster.topics if t.name == topic_name), None)
    sources: dict[str, str] = {}

    def pick(key: str, value: float | None, default: float, what: str) -> float:
        if value is not None and value > 0:
            sources[key] = f"live: {what}"
            return value
        sources[key] = "assumed (no live value)"
        return default

    rate = topic.messages_in_per_second if topic else None
    if rate is None:
        rate = live.get("topic_rate")
    retained = [p.messages for p in topic.partitions if p.messages] if topic else []
    per_message = (
        topic.leader_size_bytes / sum(retained)
        if topic and topic.leader_size_bytes and retained
        else None
    )
    groups = (
        [g for g in cluster.groups if any(t.topic == topic_name for t in g.topics)]
        if (cluster and topic)
        else []
    )
    per_member = [
        t.messages_consumed_per_second / g.member_count
        for g in groups
        if g.member_count
        for t in g.topics
        if t.topic == topic_name and t.messages_consumed_per_second
    ]
    budget = topic.outage_budget_seconds if topic else None
    disks = (
        [d.total_bytes for b in cluster.brokers for d in b.log_dirs if d.total_bytes]
        if (cluster)
        else []
    )
    inputs = SizingInputs(
        target_messages_per_second=pick(
            "target_messages_per_second", rate, 1000.0, "current messages in/s"
        ),
        bytes_per_message=pick(
            "bytes_per_message",
            per_message,
            DEFAULT_BYTES_PER_MESSAGE,
            "leader bytes on disk ÷ messages retained",
        ),
        per_consumer_messages_per_second=pick(
            "per_consumer_messages_per_second",
            max(per_member) if per_member else live.get("per_member"),
            DEFAULT_PER_CONSUMER,
            "highest rate one member consumes now (a lower bound)",
        ),
        retention_hours=pick(
            "retention_hours",
            topic.retention_ms / 3.6e6 if topic and topic.retention_ms else None,
            DEFAULT_RETENTION_HOURS,
            "topic retention.ms",
        ),
        replication_factor=int(
            pick(
                "replication_factor",
                topic.replication_factor if topic else None,
                3,
                "topic replication factor",
            )
        ),
        consumer_groups=len(groups),
        disk_bytes_per_broker=pick(
            "disk_bytes_per_broker",
            min(disks) if disks else None,
            DEFAULT_DISK_BYTES,
            "smallest log dir volume",
        ),
        network_bytes_per_second_per_broker=DEFAULT_NETWORK_BYTES,
        outage_budget_hours=budget / 3600 if budget else 0.0,
    )
    sources["outage_budget_hours"] = (
        "live: what the topic survives now (type the outage to plan for)"
        if budget
        else "none asked for"
    )
    sources["consumer_groups"] = "live: groups with commits on the topic" if topic else "assumed"
    sources["network_bytes_per_second_per_broker"] = "assumed 1 Gbit/s NIC"
    return Prefill(topic_name, inputs, sources)


# (field, label, unit, scale from the form's unit to the input's unit)
CALCULATOR_FIELDS: Sequence[tuple[str, str, str, float]] = (
    ("target_messages_per_second", "Target throughput", "msg/s", 1.0),
    ("bytes_per_message", "Bytes per message", "B", 1.0),
    ("per_consumer_messages_per_second", "One consumer sustains", "msg/s", 1.0),
    ("retention_hours", "Retention", "h", 1.0),
    ("replication_factor", "Replication factor", "", 1.0),
    ("consumer_groups", "Consumer groups reading", "", 1.0),
    ("disk_bytes_per_broker", "Disk per broker", "GB", GB),
    ("network_bytes_per_second_per_broker", "Network per broker", "MB/s", MB),
    ("max_disk_utilization", "Max disk use", "ratio", 1.0),
    ("max_network_utilization", "Max network use", "ratio", 1.0),
    ("outage_budget_hours", "Survive a consumer outage of", "h", 1.0),
)


def form_values(inputs: SizingInputs) -> list[float]:
    return [round(getattr(inputs, f) / scale, 3) for f, _, _, scale in CALCULATOR_FIELDS]


def inputs_from_form(values: Sequence[float | None]) -> SizingInputs:
    if any(v is None for v in values):
        raise SizingError("fill in every field")
    kwargs: dict[str, Any] = {
        f: float(v) * scale
        for (f, _, _, scale), v in zip(CALCULATOR_FIELDS, values, strict=True)
        if v is not None
    }
    kwargs["replication_factor"] = int(kwargs["replication_factor"])
    kwargs["consumer_groups"] = int(kwargs["consumer_groups"])
    return SizingInputs(**kwargs)


def calculator(topics: Sequence[str], pre: Prefill) -> html.Div:
    """The sizing form; values stay as typed across auto-refreshes (this part is not refreshed)."""
    rows = [
        html.Tr(
            [
                html.Td(html.Label(label, htmlFor=f"sizing-{field}")),
                html.Td(
                    dcc.Input(
                        id=f"sizing-{field}",
                        type="number",
                        value=value,
                        min=0,
                        debounce=True,
                        className="num-input",
                    )
                ),
                html.Td(unit),
                html.Td(pre.sources.get(field, ""), className="muted"),
            ]
        )
        for (field, label, unit, _), value in zip(
            CALCULATOR_FIELDS, form_values(pre.inputs), strict=True
        )
    ]
    return card(
        "Sizing calculator",
        html.Div(
            [
                html.Label("Prefill from topic ", htmlFor="sizing-topic"),
                dcc.Dropdown(
                    id="sizing-topic",
                    options=list(topics),
                    value=pre.topic,
                    clearable=False,
                    style={"width": "260px", "display": "inline-block"},
                ),
            ],
            className="inline",
        ),
        html.Table(html.Tbody(rows), className="table form-table"),
        html.Div(id="sizing-result"),
        note(
            "Partitions = target ÷ one consumer's throughput. Brokers = max(disk: retained bytes × "
            "RF ÷ usable disk per broker; network: in = produce × RF, out = produce × (RF − 1 + "
            "groups), each ÷ usable network per broker; RF). Retention is raised to the outage "
            "budget: a consumer stopped that long then loses nothing."
        ),
        wide=True,
        id="sizing-card",
    )


def render_result(result: SizingResult | SizingError) -> html.Div:
    if isinstance(result, SizingError):
        return html.Div(f"Cannot size: {result}", className="error")
    r = result
    return html.Div(
        [
            html.Div(
                [
                    html.Span(f"{r.partitions}", className="big", id="sizing-partitions"),
                    html.Span(" partition " if r.partitions == 1 else " partitions "),
                    html.Span(
                        f"({r.partitions_balanced} to spread evenly over the brokers)",
                        className="muted",
                    ),
                ]
            ),
            html.Div(
                [
                    html.Span(f"{r.brokers}", className="big", id="sizing-brokers"),
                    html.Span(f" broker{'' if r.brokers == 1 else 's'}, limited by {r.limited_by}"),
                ]
            ),
            simple_table(
                ["", "Value", "Brokers needed"],
                [
                    ["Produce", f"{fmt_bytes(r.produce_bytes_per_second)}/s", ""],
                    ["Retention sized for", f"{r.retention_hours:g} h", ""],
                    ["Retained (one copy)", fmt_bytes(r.retained_bytes), ""],
                    ["Stored (all replicas)", fmt_bytes(r.stored_bytes), str(r.brokers_for_disk)],
                    [
                        "Network in (cluster)",
                        f"{fmt_bytes(r.network_in_bytes_per_second)}/s",
                        str(r.brokers_for_network),
                    ],
                    [
                        "Network out (cluster)",
                        f"{fmt_bytes(r.network_out_bytes_per_second)}/s",
                        str(r.brokers_for_network),
                    ],
                    ["Disk use per broker", f"{r.disk_utilization:.1%}", ""],
                    [
                        "Network use per broker (busiest direction)",
                        f"{r.network_utilization:.2%}",
                        "",
                    ],
                    [
                        "Catching up after the outage budget",
                        "never: consumers sustain no more than the target"
                        if r.catch_up_seconds is None
                        else fmt_seconds(r.catch_up_seconds),
                        "",
                    ],
                ],
                id="sizing-table",
            ),
        ],
        className="sizing-result",
    )


def compute(values: Sequence[float | None]) -> SizingResult | SizingError:
    try:
        return size_cluster(inputs_from_form(values))
    except SizingError as exc:
        return exc


def build(ctx: PageContext) -> list[Any]:
    f = ctx.filters
    keep = lambda labels: "broker" not in labels or f.keep_broker(labels["broker"])  # noqa: E731
    used = matrix_traces(
        ctx.ranged("disk_used"),
        series_broker,
        metric="kafka_broker_log_dir_size_bytes",
        color=broker_color,
    )
    msgs = matrix_traces(
        ctx.ranged("messages_in"),
        lambda _l: "user topics",
        metric="kafka_topic_messages_in_per_second",
    )
    b_in = matrix_traces(
        ctx.ranged("bytes_in"),
        lambda lab: f"{series_broker(lab)} in",
        keep,
        metric="kafka_server_brokertopicmetrics_bytesin_total",
        needs=JMX,
        color=broker_color,
    )
    b_out = matrix_traces(
        ctx.ranged("bytes_out"),
        lambda lab: f"{series_broker(lab)} out",
        keep,
        metric="kafka_server_brokertopicmetrics_bytesout_total",
        needs=JMX,
        color=broker_color,
        dash="dot",
    )
    lacks = ctx.cluster.lacks if ctx.cluster else lambda _capability: False
    trends = [
        card(
            "Disk used over time",
            graph(
                line_figure(
                    "Kafka data per broker",
                    used,
                    y_title="bytes",
                    empty_reason=(
                        not_available("DescribeLogDirs") if lacks("describe_log_dirs") else None
                    ),
                    extra_layout={"yaxis": {"tickformat": ".3s"}},
                ),
                "fig-capacity-disk-used",
            ),
        ),
        card(
            "Throughput trend (messages)",
            graph(
                line_figure(
                    "Messages in per second, user topics",
                    msgs,
                    y_title="msg/s",
                ),
                "fig-capacity-messages",
            ),
        ),
        card(
            "Throughput trend (bytes, JMX)",
            graph(
                line_figure(
                    "Bytes in (solid) / out (dotted) per second per broker",
                    b_in + b_out,
                    y_title="bytes/s",
                    extra_layout={"yaxis": {"tickformat": ".2s"}},
                ),
                "fig-capacity-bytes",
            ),
        ),
    ]
    cluster = ctx.topology
    if isinstance(cluster, Unreachable):
        return [
            html.Div(
                [
                    card(
                        "Disk outlook",
                        no_topology(cluster),
                        wide=True,
                    ),
                    *trends,
                ],
                className="grid",
            )
        ]
    outlook = [o for o in disk_outlook(cluster, ctx.instant("growth")) if f.keep_broker(o.broker)]
    replicas = Counter(r for p in cluster.partitions for r in p.replicas)
    brokers = [b for b in cluster.brokers if f.keep_broker(b.id)]
    partitions_fig = bar_figure(
        "Partitions per broker",
        [f"broker {b.id}" for b in brokers],
        {
            "replicas": [replicas[b.id] for b in brokers],
            "leaders": [b.leader_partitions for b in brokers],
        },
        y_title="partitions",
    )
    outlook_table = simple_table(
        ["Broker", "Kafka data", "Free", "Growth", "Days until full"],
        [
            [
                str(o.broker),
                fmt_bytes(o.used_bytes),
                fmt_bytes(o.usable_bytes),
                "–"
                if o.growth_bytes_per_second is None
                else f"{fmt_bytes(o.growth_bytes_per_second * 86400)}/day",
                "not growing"
                if o.days_until_full is None and o.growth_bytes_per_second is not None
                else "–"
                if o.days_until_full is None
                else fmt_number(o.days_until_full),
            ]
            for o in outlook
        ],
        id="disk-outlook-table",
        row_classes=[
            "row-bad" if o.days_until_full is not None and o.days_until_full < 7 else ""
            for o in outlook
        ],
    )
    if cluster.lacks("describe_log_dirs"):
        outlook_table = html.Div(
            f"{not_available('DescribeLogDirs')}: each broker's Kafka data, free space and "
            "growth come from it.",
            className="muted",
        )
    window = ctx.window.end - ctx.window.start
    return [
        html.Div(
            [
                card(
                    "Disk outlook",
                    outlook_table,
                    note(
                        "Growth is the slope of Kafka data over the selected range "
                        f"({window / 3600:g} h, at least 5 min); days until full = free bytes ÷ "
                        "growth."
                    ),
                    wide=True,
                ),
                card(
                    "Outage budget",
                    simple_table(
                        ["Topic", "A stopped consumer loses nothing for", "Messages in/s", "Size"],
                        outage_budget_rows(cluster, f),
                        id="outage-budget-table",
                        empty=(
                            f"{not_available('DescribeConfigs')}: each topic's retention.ms "
                            "and retention.bytes come from it."
                            if cluster.lacks("describe_configs")
                            else "No topic that Kafka deletes from by retention."
                        ),
                    ),
                    note(
                        "retention.ms, or the time the fastest partition takes to fill "
                        "retention.bytes at today's production (docs/lag.md#retention). Plan for "
                        "a longer outage with the sizing calculator below."
                    ),
                    wide=True,
                ),
                card(
                    "Outage budget per hop",
                    simple_table(
                        outage.COLUMNS,
                        outage.rows(
                            ctx.fetched.cluster,
                            cluster,
                            ctx.instant("binlog_written"),
                            ctx.outage_target_seconds,
                        ),
                        id="leg-budget-table",
                        empty="Neither the HES binlog nor topic measure is watched.",
                    ),
                    note(
                        "How long each reader of the leg may stay down, starting caught up, at "
                        "today's write rate, before its store purges a measure it has not read; "
                        "and the settings that make it the target (vigia-dashboard "
                        "--outage-target). A lower bound: the HES keeps a binlog file the expiry "
                        "after it is closed, Kafka a segment past its newest record."
                    ),
                    wide=True,
                ),
                card(
                    "Partitions per broker",
                    graph(partitions_fig, "fig-capacity-partitions"),
                    note(
                        f"{fmt_int(len(cluster.partitions))} partitions, "
                        f"{fmt_int(sum(replicas.values()))} replicas in total."
                    ),
                ),
                *trends,
            ],
            className="grid",
        )
    ]
