"""Consumers: produced vs consumed per group and topic, lag in messages and seconds, status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dash import html

from vigia.dashboard.cluster import Cluster, Group, GroupPartition
from vigia.dashboard.data import Matrix, Plan, Unreachable
from vigia.dashboard.views.common import (
    PALETTE,
    Filters,
    PageContext,
    Trace,
    TraceSet,
    card,
    column,
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

MAX_GROUPS_CHARTED = 8
PRODUCED = "#55606b"


def plan(filters: Filters) -> Plan:
    g = filters.matchers(group=True, topic=True)
    t = filters.matchers(topic=True)
    # Without a group selection, only the most lagging groups are charted: ask Prometheus for
    # just those (topk at each step), not for every group's series.
    only = (
        ""
        if filters.groups
        else (
            f" and on (consumergroup) topk({MAX_GROUPS_CHARTED}, "
            f"sum by (consumergroup) (kafka_consumergroup_lag_sum{{{g}}}))"
        )
    )
    return Plan(
        cluster=True,
        ranged={
            "produced": f"sum by (topic) (kafka_topic_messages_in_per_second{{{t}}})",
            "consumed": (
                "sum by (consumergroup, topic) "
                f"(kafka_consumergroup_messages_consumed_per_second{{{g}}}){only}"
            ),
            "lag": f"sum by (consumergroup, topic) (kafka_consumergroup_lag_sum{{{g}}}){only}",
            "lag_seconds": (
                f"max by (consumergroup, topic) (kafka_consumergroup_max_lag_seconds{{{g}}}){only}"
            ),
            "status": (
                "max by (consumergroup) (kafka_consumergroup_status{"
                + filters.matchers(group=True)
                + "})"
                + only
            ),
        },
    )


def charted_groups(
    groups: Sequence[Group],
    filters: Filters,
    lag: Matrix | Unreachable,
    n: int = MAX_GROUPS_CHARTED,
) -> list[str]:
    """The selected groups, else the n with the most lag now: by Prometheus' lag series when it
    has them (what the charts draw), else by the exporter's JSON."""
    if filters.groups:
        return sorted(filters.groups)
    latest: dict[str, float] = {}
    for series in [] if isinstance(lag, Unreachable) else lag:
        group = series.labels.get("consumergroup", "")
        latest[group] = latest.get(group, 0.0) + (series.last or 0.0)
    if not latest:
        latest = {g.group_id: float(g.lag or 0) for g in groups}
    return sorted(latest, key=lambda group: (-latest[group], group))[:n]


def group_rows(groups: Sequence[Group], filters: Filters) -> list[list[str]]:
    rows = []
    for g in groups:
        if not filters.keep_group(g.group_id):
            continue
        topics = [t for t in g.topics if filters.keep_topic(t.topic)]
        if filters.topics and not topics:
            continue  # a topic filter shows the groups reading those topics
        consumed = [
            t.messages_consumed_per_second
            for t in topics
            if t.messages_consumed_per_second is not None
        ]
        rows.append(
            [
                g.group_id,
                (g.state or "?").title(),
                _protocol(g),
                "?" if g.member_count is None else str(g.member_count),
                g.status or "–",
                ", ".join(t.topic for t in topics) or "–",
                fmt_int(g.lag),
                fmt_seconds(g.max_lag_seconds),
                fmt_number(sum(consumed)) if consumed else "–",
                _margin(g),
            ]
        )
    return rows


def _protocol(group: Group) -> str:
    """The group's protocol as its clients set it (`group.protocol`: classic, or consumer for
    KIP-848's), then its assignor: the exporter's `protocol` is the assignor, `type` the
    protocol."""
    kind = (group.type or "?").lower()
    return f"{kind} · {group.protocol}" if group.protocol else kind


def _margin(group: Group) -> str:
    """The smallest retention margin over the group's topics, flagged when it will not do."""
    margin = group.retention_margin_seconds
    if margin is None:
        return "–"
    return fmt_seconds(margin) + (" · at risk" if group.retention_at_risk else "")


def partition_status_rows(groups: Sequence[Group], filters: Filters) -> list[dict[str, Any]]:
    return [
        {
            "group": g.group_id,
            "topic": p.topic,
            "partition": p.partition,
            "committed_offset": p.committed_offset,
            "latest_offset": p.latest_offset,
            "lag": p.lag,
            "lag_seconds": p.lag_seconds,
            "status": p.status or "–",
            "window": _window(p),
        }
        for g in groups
        if filters.keep_group(g.group_id)
        for p in g.partitions
        if filters.keep_topic(p.topic)
    ]


PARTITION_STATUS_COLUMNS = [
    column("group", "Group", "wide"),
    column("topic", "Topic", "wide"),
    column("partition", "Partition", "numeric"),
    column("committed_offset", "Committed offset", "numeric"),
    column("latest_offset", "Latest offset", "numeric"),
    column("lag", "Lag (messages)", "numeric"),
    column("lag_seconds", "Lag (s)", "seconds"),
    column("status", "Status"),
    column("window", "Status window"),
]


def _window(p: GroupPartition) -> str:
    """How much of the status evaluation window has been observed (OK until it is complete)."""
    if p.status_window_complete is None:
        return "–"
    if p.status_window_complete:
        return "complete"
    if p.status_window_completeness is not None:
        return f"{p.status_window_completeness:.0%} observed"
    return "incomplete"


def produced_vs_consumed(
    produced: Matrix | Unreachable, consumed: Matrix | Unreachable, groups: Sequence[str]
) -> TraceSet:
    """Consumed rate of each charted group per topic, and a dotted produced rate per such topic.

    A pair is left out only when nothing is produced or consumed (idle topics crowd the legend);
    a group consuming nothing from a busy topic stays: that is the story this chart tells.
    """
    if isinstance(consumed, Unreachable):
        return TraceSet((), str(consumed), 0)
    if not consumed:
        reason = "no kafka_consumergroup_messages_consumed_per_second series (not exported yet?)"
        return TraceSet((), reason, 0)
    busy_topics = {
        s.labels.get("topic", "")
        for s in ([] if isinstance(produced, Unreachable) else produced)
        if any(s.values)
    }
    pairs = [
        s
        for s in consumed
        if s.labels.get("consumergroup") in groups
        and (any(s.values) or s.labels.get("topic") in busy_topics)
    ]
    pairs.sort(key=lambda s: (s.labels.get("consumergroup", ""), s.labels.get("topic", "")))
    topics = {s.labels.get("topic") for s in pairs}
    traces = [
        Trace(f"produced · {s.labels['topic']}", s.times, s.values, dash="dot", color=PRODUCED)
        for s in ([] if isinstance(produced, Unreachable) else produced)
        if s.labels.get("topic") in topics
    ]
    traces += [
        Trace(
            f"consumed · {s.labels.get('consumergroup')} · {s.labels.get('topic')}",
            s.times,
            s.values,
            color=PALETTE[i % len(PALETTE)],
        )
        for i, s in enumerate(pairs)
    ]
    reason = "every charted group and its topics are idle in this time range"
    return TraceSet(tuple(traces), reason, len(traces))


def build(ctx: PageContext) -> list[Any]:
    f = ctx.filters
    cluster = ctx.topology
    groups = list(cluster.groups) if not isinstance(cluster, Unreachable) else []
    charted = charted_groups(groups, f, ctx.ranged("lag"))
    in_chart = lambda labels: labels.get("consumergroup") in charted  # noqa: E731

    def group_topic(labels: Mapping[str, str]) -> str:
        return f"{labels.get('consumergroup', '?')} · {labels.get('topic', '?')}"

    consumed_metric = "kafka_consumergroup_messages_consumed_per_second"
    flow = produced_vs_consumed(ctx.ranged("produced"), ctx.ranged("consumed"), charted)
    lag = matrix_traces(
        ctx.ranged("lag"), group_topic, in_chart, metric="kafka_consumergroup_lag_sum"
    )
    lag_s = matrix_traces(
        ctx.ranged("lag_seconds"),
        group_topic,
        in_chart,
        metric="kafka_consumergroup_max_lag_seconds",
    )
    status = matrix_traces(
        ctx.ranged("status"),
        lambda lab: lab.get("consumergroup", "?"),
        in_chart,
        metric="kafka_consumergroup_status",
    )
    subset = note(
        f"Charts show {len(charted)} group(s): "
        + (", ".join(charted) if charted else "none")
        + ("" if f.groups else " — the most lagging; pick groups in the filter to change.")
        + f" Consumed = {consumed_metric}."
    )
    charts = html.Div(
        [
            card(
                "Produced vs consumed",
                graph(
                    line_figure(
                        "Produced (dotted) vs consumed, messages per second",
                        flow,
                        y_title="msg/s",
                    ),
                    "fig-consumers-flow",
                ),
                subset,
                wide=True,
            ),
            card(
                "Lag in messages",
                graph(
                    line_figure(
                        "Lag per group and topic (messages)",
                        lag,
                        y_title="messages",
                    ),
                    "fig-consumers-lag",
                ),
            ),
            card(
                "Lag in seconds",
                graph(
                    line_figure(
                        "Lag per group and topic (seconds)",
                        lag_s,
                        seconds=True,
                    ),
                    "fig-consumers-lag-seconds",
                ),
            ),
            card(
                "Status over time",
                graph(
                    line_figure(
                        "Group status (1 OK, 2 WARN, 3 ERR)",
                        status,
                        y_title="status",
                        step=True,
                        extra_layout={
                            "yaxis": {
                                "tickvals": [1, 2, 3],
                                "ticktext": ["OK", "WARN", "ERR"],
                                "range": [0.5, 3.5],
                            }
                        },
                    ),
                    "fig-consumers-status",
                ),
            ),
        ],
        className="grid",
    )
    if isinstance(cluster, Unreachable):
        return [
            html.Div(
                card(
                    "Consumer groups",
                    no_topology(cluster),
                    wide=True,
                ),
                className="grid",
            ),
            charts,
        ]
    return [_tables(cluster, f), charts]


def _tables(cluster: Cluster, f: Filters) -> html.Div:
    rows = group_rows(cluster.groups, f)
    status_rows = partition_status_rows(cluster.groups, f)
    return html.Div(
        [
            card(
                f"Consumer groups ({len(rows)})",
                simple_table(
                    [
                        "Group",
                        "State",
                        "Protocol",
                        "Members",
                        "Status",
                        "Topics",
                        "Lag (messages)",
                        "Max lag (s)",
                        "Consumed msg/s",
                        "Retention margin",
                    ],
                    rows,
                    id="groups-table",
                    row_classes=[
                        "row-bad"
                        if r[4] == "ERR" or r[9].endswith("at risk")
                        else "row-warn"
                        if r[4] == "WARN"
                        else ""
                        for r in rows
                    ],
                    empty="Consumer groups: " + not_available("ListGroups")
                    if cluster.lacks("list_groups")
                    else "No consumer groups.",
                ),
                *(
                    [note("State and members: " + not_available("DescribeGroups"))]
                    if cluster.lacks("describe_groups")
                    else []
                ),
                wide=True,
            ),
            card(
                "Status per group and partition",
                grid(
                    "group-partitions-table",
                    PARTITION_STATUS_COLUMNS,
                    status_rows,
                    page_size=15,
                    row_styles=[
                        ("/STOP|STALL|REWIND/.test(params.data.status)", "#fde2e2"),
                        ("params.data.status.includes('WARN')", "#fff4dc"),
                    ],
                    search_placeholder="search (e.g. billing measure)",
                ),
                wide=True,
            ),
        ],
        className="grid",
    )
