"""Overview: one screen answering "is everything fine?" — red/amber/green lights with numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dash import html

from vigia.dashboard.cluster import Cluster
from vigia.dashboard.data import Plan, Unreachable, scalar
from vigia.dashboard.views.alerts import alerts_table
from vigia.dashboard.views.common import (
    PageContext,
    Status,
    card,
    fmt_int,
    fmt_seconds,
    graph,
    line_figure,
    matrix_traces,
    not_available,
)

INGEST_GROUP = "vigia-ingest"
# Messages the ingest job has left: its consumer group's lag, or, on a cluster whose groups the
# exporter cannot list (librdkafka's mock in `make demo`, some managed services), the job's own
# count after its last batch (the largest partition's).
INGEST_LAG = (
    f'sum(kafka_consumergroup_lag_sum{{consumergroup="{INGEST_GROUP}"}})'
    " or max(vigia_ingest_offsets_behind_latest)"
)


@dataclass(frozen=True)
class Thresholds:
    """Amber/red limits. Red is where prometheus/rules/alerts.yml pages (IngestDataStale: newest
    measure older than 1 h; IngestBacklogGrowing: 15 min behind), so a red light means a page."""

    freshness_amber: float = 30 * 60  # two 15-minute measure periods
    freshness_red: float = 3600
    backlog_amber: float = 5 * 60
    backlog_red: float = 15 * 60
    exporter_stale: float = 120  # 8 collection intervals at the default 15 s


THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Light:
    key: str
    label: str
    status: Status
    value: str
    detail: str = ""


def plan() -> Plan:
    return Plan(
        cluster=True,
        alerts=True,
        instant={
            "freshness": "time() - max(vigia_ingest_newest_measure_timestamp_seconds)",
            "progress_age": "time() - max(vigia_ingest_last_progress_timestamp_seconds)",
            "backlog_seconds": (
                f'max(kafka_consumergroup_max_lag_seconds{{consumergroup="{INGEST_GROUP}"}})'
            ),
            "backlog_messages": INGEST_LAG,
            "exporter_up": "min(vigia_exporter_up)",
        },
        ranged={
            "messages_in": "sum(kafka_topic_messages_in_per_second)",
            "ingest_lag": INGEST_LAG,
        },
    )


def _level(value: float, amber: float, red: float) -> Status:
    return "red" if value >= red else "amber" if value >= amber else "green"


def _names(items: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" +{len(items) - limit} more" if len(items) > limit else "")


def cluster_lights(cluster: Cluster | Unreachable) -> list[Light]:
    keys = [
        ("brokers", "Brokers up"),
        ("controller", "Controller"),
        ("offline", "Offline partitions"),
        ("under_min_isr", "Under min ISR"),
        ("urp", "Under-replicated"),
        ("preferred", "Leaders not preferred"),
    ]
    if isinstance(cluster, Unreachable):
        return [Light(k, label, "grey", "?", "exporter unreachable") for k, label in keys]
    parts = cluster.partitions
    down = cluster.down_broker_ids
    total = len(cluster.brokers)
    offline = [f"{p.topic}-{p.partition}" for p in parts if p.offline]
    under_min = [f"{p.topic}-{p.partition}" for p in parts if p.under_min_isr]
    urp = [p for p in parts if p.under_replicated]
    not_preferred = [p for p in parts if not p.offline and not p.leader_is_preferred]
    if cluster.controller_id is None and cluster.lacks("describe_quorum"):
        # Without DescribeQuorum only Metadata names a controller; a cluster that names none
        # there either (librdkafka's mock) has nothing to show, which is not a missing one.
        controller = Light(
            "controller", "Controller", "grey", "n/a", not_available("DescribeQuorum")
        )
    elif cluster.controller_id is None:
        controller = Light("controller", "Controller", "red", "none", "no active controller known")
    else:
        source = cluster.controller_source or "unknown source"
        controller = Light(
            "controller",
            "Controller",
            "green" if source == "quorum" else "amber",
            f"broker {cluster.controller_id}",
            f"from {source}",
        )
    return [
        Light(
            "brokers",
            "Brokers up",
            "red" if down or total == 0 else "green",
            f"{total - len(down)} / {total}",
            f"down: {', '.join(str(b) for b in down)}" if down else "all brokers in metadata",
        ),
        controller,
        Light(
            "offline",
            "Offline partitions",
            "red" if offline else "green",
            str(len(offline)),
            _names(offline) if offline else "every partition has a leader",
        ),
        Light(
            "under_min_isr",
            "Under min ISR",
            "grey",
            "n/a",
            not_available("DescribeConfigs: min.insync.replicas unknown"),
        )
        # Without DescribeConfigs only assumed values (vigia-exporter --assumed-topic-config).
        if cluster.lacks("describe_configs")
        and any(t.min_insync_replicas is None for t in cluster.topics)
        else Light(
            "under_min_isr",
            "Under min ISR",
            "red" if under_min else "green",
            str(len(under_min)),
            _names(under_min) if under_min else "acks=all writes can succeed",
        ),
        Light(
            "urp",
            "Under-replicated",
            "amber" if urp else "green",
            str(len(urp)),
            f"{len(urp)} of {len(parts)} partitions" if urp else f"all {len(parts)} in sync",
        ),
        Light(
            "preferred",
            "Leaders not preferred",
            "amber" if not_preferred else "green",
            str(len(not_preferred)),
            "run a preferred leader election or wait for auto-rebalance"
            if not_preferred
            else "leadership balanced",
        ),
    ]


def alerts_light(alerts: Sequence[Mapping[str, Any]] | Unreachable | None) -> Light:
    if alerts is None or isinstance(alerts, Unreachable):
        return Light("alerts", "Active alerts", "grey", "?", "Alertmanager unreachable")
    severities = [str(a.get("labels", {}).get("severity", "")) for a in alerts]
    critical = severities.count("critical")
    status: Status = "red" if critical else "amber" if alerts else "green"
    detail = f"{critical} critical, {len(alerts) - critical} other" if alerts else "none firing"
    return Light("alerts", "Active alerts", status, str(len(alerts)), detail)


def ingest_lights(
    freshness: float | None,
    progress_age: float | None,
    backlog_seconds: float | None,
    backlog_messages: int | None,
    t: Thresholds = THRESHOLDS,
) -> list[Light]:
    if freshness is None:
        fresh = Light(
            "freshness", "Ingest freshness", "grey", "no data", "no ingest metrics in Prometheus"
        )
    else:
        detail = "newest stored measure"
        if progress_age is not None:
            detail += f"; last batch {fmt_seconds(progress_age)} ago"
        fresh = Light(
            "freshness",
            "Ingest freshness",
            _level(freshness, t.freshness_amber, t.freshness_red),
            fmt_seconds(freshness),
            detail,
        )
    lag_text = (
        f"{fmt_int(backlog_messages)} messages behind" if backlog_messages is not None else ""
    )
    if backlog_seconds is None:
        backlog = Light(
            "backlog",
            "Ingest backlog",
            "grey",
            "no data" if backlog_messages is None else f"{fmt_int(backlog_messages)} msgs",
            "messages behind; no lag in seconds for this cluster"
            if lag_text
            else f"no lag data for group {INGEST_GROUP}",
        )
    else:
        backlog = Light(
            "backlog",
            "Ingest backlog",
            _level(backlog_seconds, t.backlog_amber, t.backlog_red),
            fmt_seconds(backlog_seconds),
            lag_text or "lag of the oldest unconsumed measure",
        )
    return [fresh, backlog]


def exporter_light(
    cluster: Cluster | Unreachable, prom_up: float | None, now: float, t: Thresholds = THRESHOLDS
) -> Light:
    if isinstance(cluster, Unreachable):
        detail = cluster.reason
        if prom_up is not None:
            detail += f"; Prometheus last saw vigia_exporter_up={prom_up:g}"
        return Light("exporter", "Exporter", "red", "unreachable", detail)
    age = now - cluster.collected_at if cluster.collected_at is not None else None
    if age is not None and age > t.exporter_stale:
        return Light(
            "exporter", "Exporter", "amber", "stale", f"last collection {fmt_seconds(age)} ago"
        )
    if not cluster.up or cluster.errors:
        return Light(
            "exporter",
            "Exporter",
            "amber",
            "partial",
            _names(list(cluster.errors), 2) or "last collection incomplete",
        )
    return Light(
        "exporter",
        "Exporter",
        "green",
        "up",
        f"last collection {fmt_seconds(age)} ago"
        + (
            f", took {fmt_seconds(cluster.collection_duration_seconds)}"
            if cluster.collection_duration_seconds is not None
            else ""
        ),
    )


def ingest_backlog_messages(cluster: Cluster | Unreachable) -> int | None:
    if isinstance(cluster, Unreachable):
        return None
    group = next((g for g in cluster.groups if g.group_id == INGEST_GROUP), None)
    return group.lag if group else None


def ingest_backlog_seconds(cluster: Cluster | Unreachable) -> float | None:
    if isinstance(cluster, Unreachable):
        return None
    group = next((g for g in cluster.groups if g.group_id == INGEST_GROUP), None)
    return group.max_lag_seconds if group else None


def render_light(light: Light) -> html.Div:
    return html.Div(
        [
            html.Div(light.label, className="light-label"),
            html.Div(light.value, className="light-value"),
            html.Div(light.detail, className="light-detail"),
        ],
        id=f"light-{light.key}",
        className=f"light light-{light.status}",
        title=f"{light.label}: {light.value} ({light.status})",
    )


def build(ctx: PageContext) -> list[Any]:
    cluster = ctx.topology
    # Seconds and messages from the same source (Prometheus, else the exporter's JSON), so the
    # light's value and its detail describe the same moment.
    backlog_s = scalar(ctx.instant("backlog_seconds"))
    backlog_m = scalar(ctx.instant("backlog_messages"))
    if backlog_s is None and backlog_m is None:
        backlog_s = ingest_backlog_seconds(cluster)
        backlog_m = ingest_backlog_messages(cluster)
    lights = [
        *cluster_lights(cluster),
        alerts_light(ctx.fetched.alerts),
        *ingest_lights(
            scalar(ctx.instant("freshness")),
            scalar(ctx.instant("progress_age")),
            backlog_s,
            None if backlog_m is None else int(backlog_m),
        ),
        exporter_light(cluster, scalar(ctx.instant("exporter_up")), ctx.now),
    ]
    throughput = matrix_traces(
        ctx.ranged("messages_in"),
        lambda _l: "all topics",
        metric="kafka_topic_messages_in_per_second",
    )
    lag = matrix_traces(
        ctx.ranged("ingest_lag"), lambda _l: INGEST_GROUP, metric="kafka_consumergroup_lag_sum"
    )
    return [
        html.Div([render_light(light) for light in lights], className="lights", id="lights"),
        html.Div(
            [
                card("Active alerts (Alertmanager)", alerts_table(ctx.fetched.alerts), wide=True),
                card(
                    "Messages in",
                    graph(
                        line_figure(
                            "Messages in per second",
                            throughput,
                            y_title="msg/s",
                        ),
                        "fig-overview-throughput",
                    ),
                ),
                card(
                    "Ingest backlog",
                    graph(
                        line_figure(
                            f"Lag of {INGEST_GROUP} (messages)",
                            lag,
                            y_title="messages",
                        ),
                        "fig-overview-ingest-lag",
                    ),
                ),
            ],
            className="grid",
        ),
    ]
