"""Replication: latency per broker (probe, JMX), out-of-sync replicas now and over time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dash import html

from vigia.dashboard.cluster import Cluster, Partition, filter_topics
from vigia.dashboard.data import Plan, Unreachable
from vigia.dashboard.views.common import (
    JMX,
    Filters,
    PageContext,
    broker_color,
    card,
    fmt_seconds,
    graph,
    line_figure,
    matrix_traces,
    no_topology,
    note,
    series_broker,
    simple_table,
)


def plan(filters: Filters, step: float) -> Plan:
    """`step` is the range queries' resolution: short episodes (a broker restart leaves replicas
    out of sync for seconds) are kept by taking each step's worst value, not the value at it."""
    span = f"[{max(int(step), 15)}s]"
    b = filters.matchers(broker=True)
    bt = filters.matchers(broker=True, topic=True)
    t = filters.matchers(topic=True)
    every_broker = f"0 * max by (broker) (kafka_broker_leader_partitions{{{b}}})"
    return Plan(
        cluster=True,
        ranged={
            "probe_latency": f"max by (broker) (vigia_probe_replication_latency_seconds{{{b}}})",
            "remote_time": (
                "max by (broker, instance) (kafka_network_requestmetrics_remotetimems"
                '{request="Produce",quantile="0.99"})'
            ),
            "fetcher_lag": "max by (broker, instance) (kafka_server_replicafetchermanager_maxlag)",
            # By default only out-of-sync replicas have series: 0 for the brokers without any.
            "out_of_sync": (
                "sum by (broker) "
                f"(1 - min_over_time(kafka_partition_replica_in_sync{{{bt}}}{span}))"
                f" or on (broker) {every_broker}"
            ),
            "out_of_sync_time": (
                f"max by (broker) (kafka_partition_replica_out_of_sync_seconds{{{bt}}})"
                f" or on (broker) {every_broker}"
            ),
            "urp": f"sum(max_over_time(kafka_topic_under_replicated_partitions{{{t}}}{span}))",
            "under_min_isr": (
                f"sum(max_over_time(kafka_topic_under_min_isr_partitions{{{t}}}{span}))"
            ),
            "probe_lost": (
                'sum by (broker) (increase(vigia_probe_messages_total{outcome=~"lost|failed"'
                + (f",{b}" if b else "")
                + "}[5m]))"
            ),
        },
    )


@dataclass(frozen=True)
class OutOfSyncReplica:
    topic: str
    partition: int
    broker: int
    seconds: float | None
    broker_down: bool


def out_of_sync_replicas(
    partitions: Sequence[Partition], down_brokers: Sequence[int]
) -> list[OutOfSyncReplica]:
    return [
        OutOfSyncReplica(p.topic, p.partition, b, p.out_of_sync_seconds.get(b), b in down_brokers)
        for p in partitions
        for b in p.out_of_sync
    ]


def out_of_sync_by_broker(replicas: Sequence[OutOfSyncReplica]) -> dict[int, int]:
    return dict(sorted(Counter(r.broker for r in replicas).items()))


def build(ctx: PageContext) -> list[Any]:
    f = ctx.filters
    keep = lambda labels: "broker" not in labels or f.keep_broker(labels["broker"])  # noqa: E731
    probe = matrix_traces(
        ctx.ranged("probe_latency"),
        series_broker,
        metric="vigia_probe_replication_latency_seconds",
        color=broker_color,
    )
    remote = matrix_traces(
        ctx.ranged("remote_time"),
        series_broker,
        keep,
        0.001,
        metric="kafka_network_requestmetrics_remotetimems",
        needs=JMX,
        color=broker_color,
    )
    fetch_lag = matrix_traces(
        ctx.ranged("fetcher_lag"),
        series_broker,
        keep,
        metric="kafka_server_replicafetchermanager_maxlag",
        needs=JMX,
        color=broker_color,
    )
    oos_hist = matrix_traces(
        ctx.ranged("out_of_sync"),
        series_broker,
        metric="kafka_partition_replica_in_sync",
        color=broker_color,
    )
    oos_time = matrix_traces(
        ctx.ranged("out_of_sync_time"),
        series_broker,
        metric="kafka_partition_replica_out_of_sync_seconds",
        color=broker_color,
    )
    urp = matrix_traces(
        ctx.ranged("urp"),
        lambda _l: "under-replicated",
        metric="kafka_topic_under_replicated_partitions",
    )
    umi = matrix_traces(
        ctx.ranged("under_min_isr"),
        lambda _l: "under min ISR",
        metric="kafka_topic_under_min_isr_partitions",
    )
    lost = matrix_traces(
        ctx.ranged("probe_lost"),
        series_broker,
        metric="vigia_probe_messages_total",
        color=broker_color,
    )

    history = html.Div(
        [
            card(
                "Replication latency (probe)",
                graph(
                    line_figure(
                        "Replication latency per broker: acks=all minus acks=1 (probe)",
                        probe,
                        seconds=True,
                    ),
                    "fig-replication-probe",
                ),
            ),
            card(
                "Produce remote time (JMX)",
                graph(
                    line_figure(
                        "Produce remote time p99 per broker (waiting for followers)",
                        remote,
                        seconds=True,
                    ),
                    "fig-replication-remote-time",
                ),
            ),
            card(
                "Out-of-sync replicas over time",
                graph(
                    line_figure(
                        "Out-of-sync replicas per broker",
                        oos_hist,
                        y_title="replicas",
                        step=True,
                    ),
                    "fig-replication-oos-history",
                ),
            ),
            card(
                "Partitions not fully replicated",
                graph(
                    line_figure(
                        "Under-replicated and under-min-ISR partitions",
                        urp + umi,
                        y_title="partitions",
                        step=True,
                    ),
                    "fig-replication-urp-history",
                ),
            ),
            card(
                "Longest time out of sync",
                graph(
                    line_figure(
                        "Longest out-of-sync time per broker",
                        oos_time,
                        seconds=True,
                    ),
                    "fig-replication-oos-time",
                ),
            ),
            card(
                "Follower lag (JMX)",
                graph(
                    line_figure(
                        "Replica fetcher max lag per broker",
                        fetch_lag,
                        y_title="messages",
                    ),
                    "fig-replication-fetcher-lag",
                ),
            ),
            card(
                "Lost or failed probes",
                graph(
                    line_figure(
                        "Probe messages lost or failed (5 min)",
                        lost,
                        y_title="messages",
                    ),
                    "fig-replication-probe-lost",
                ),
            ),
        ],
        className="grid",
    )
    cluster = ctx.topology
    if isinstance(cluster, Unreachable):
        return [
            html.Div(
                card(
                    "Out-of-sync replicas now",
                    no_topology(cluster),
                    wide=True,
                ),
                className="grid",
            ),
            history,
        ]
    return [_current(cluster, f), history]


def _current(cluster: Cluster, f: Filters) -> html.Div:
    # user topics first: 50 __consumer_offsets rows would hide them
    ordered = sorted(filter_topics(cluster.topics, f.topics), key=lambda t: t.internal)
    partitions = [p for t in ordered for p in t.partitions]
    replicas = [
        r
        for r in out_of_sync_replicas(partitions, cluster.down_broker_ids)
        if f.keep_broker(r.broker)
    ]
    per_broker = out_of_sync_by_broker(replicas)
    brokers = [b.id for b in cluster.brokers if f.keep_broker(b.id)]
    shown = replicas[:200]
    table = simple_table(
        ["Topic", "Partition", "Broker", "Out of sync for", "Why"],
        [
            [
                r.topic,
                str(r.partition),
                str(r.broker),
                fmt_seconds(r.seconds),
                "broker down" if r.broker_down else "lagging follower",
            ]
            for r in shown
        ],
        id="out-of-sync-table",
        empty="Every replica is in sync.",
    )
    counts = simple_table(
        ["Broker", *[str(b) for b in brokers]],
        [["Out-of-sync replicas", *[str(per_broker.get(b, 0)) for b in brokers]]],
        id="out-of-sync-per-broker",
    )
    return html.Div(
        [
            card(
                f"Out-of-sync replicas now: {len(replicas)}",
                counts,
                html.Div(table, className="scroll-box"),
                note(f"Showing the first {len(shown)}.")
                if len(replicas) > len(shown)
                else html.Span(),
                wide=True,
                id="out-of-sync-card",
            ),
        ],
        className="grid",
    )
