"""Pipeline: the data's path as hops — HES → Connect → Kafka → Spark → Parquet — led by the leg's
loss horizon (`views.horizon`), with each hop's counts, freshness and state, and how far each hop
is behind the one before.

Prometheus holds every number (the exporter's `--hes-dsn` / `--connect-url` families, the Connect
worker's JMX agent, the ingest job); the exporter's JSON adds the first line of a failed task's
trace and whether data is moving (its flow verdict and each source connector's stall cause,
docs/metrics.md "Stalls"). Each hop gets a light: red where prometheus/rules/hes.yml or alerts.yml
page, amber where they open a ticket or a threshold is half-way, grey when the hop reports nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dash import html

from vigia.dashboard.data import Plan, Unreachable, Vector, by_label, scalar
from vigia.dashboard.views.common import (
    PageContext,
    Status,
    card,
    fmt_int,
    fmt_number,
    fmt_seconds,
    graph,
    line_figure,
    matrix_traces,
    note,
    simple_table,
)
from vigia.dashboard.views.horizon import banner
from vigia.dashboard.views.overview import INGEST_GROUP, THRESHOLDS

TOPIC = "measure"
# prometheus/rules/hes.yml: HesToKafkaBehind pages at 15 min, HesDataLate tickets at 45 min.
HES_TO_KAFKA_RED = 900.0
HES_AGE_AMBER = 2700.0


def plan() -> Plan:
    t = f'topic="{TOPIC}"'
    return Plan(
        cluster=True,
        instant={
            "hes_up": "max(vigia_hes_up)",
            "hes_age": "time() - max(vigia_hes_newest_row_timestamp_seconds)",
            "hes_days": "max by (measure_date) (vigia_hes_day_rows)",
            "hes_connections": "max(mysql_global_status_threads_connected)",
            "binlog_state": "max by (state) (vigia_hes_binlog_retention_state) == 1",
            "binlog_margin": "min(vigia_hes_binlog_retention_margin_seconds)",
            "workers": "min by (connect) (kafka_connect_worker_up)",
            "tasks": "max by (connector, task, state) (kafka_connect_task_state) == 1",
            "stalled": "max by (connector, cause) (kafka_connect_connector_stalled) == 1",
            "connected": 'max by (server) (debezium_mysql_connected{context="streaming"})',
            "since_event": (
                "max by (server) "
                '(debezium_mysql_milli_seconds_since_last_event{context="streaming"}) / 1000'
            ),
            "written_rate": ("sum(rate(kafka_connect_source_task_source_record_write_total[5m]))"),
            "hes_to_kafka": 'max(vigia_pipeline_hop_lag_seconds{hop="hes_to_kafka"})',
            "kafka_rate": f"sum(kafka_topic_messages_in_per_second{{{t}}})",
            "kafka_retained": (
                f"sum(kafka_topic_partition_current_offset{{{t}}}) "
                f"- sum(kafka_topic_partition_oldest_offset{{{t}}})"
            ),
            "kafka_offline": f"sum(kafka_topic_partition_offline{{{t}}})",
            "ingest_active": "max(vigia_ingest_query_active)",
            "ingest_rate": "sum(vigia_ingest_input_rows_per_second)",
            "ingest_backlog": (
                f'max(kafka_consumergroup_max_lag_seconds{{consumergroup="{INGEST_GROUP}"}})'
            ),
            "kafka_to_store": 'max(vigia_pipeline_hop_lag_seconds{hop="kafka_to_store"})',
            "store_age": "time() - max(vigia_ingest_newest_measure_timestamp_seconds)",
            "store_days": "max by (measure_date) (vigia_ingest_day_measures)",
        },
        ranged={"hop_lag": "max by (hop) (vigia_pipeline_hop_lag_seconds)"},
    )


@dataclass(frozen=True)
class Hop:
    key: str
    name: str
    status: Status
    headline: str
    facts: tuple[tuple[str, str], ...]  # (label, value)


def _worst(*statuses: Status) -> Status:
    order: tuple[Status, ...] = ("red", "amber", "green", "grey")
    known = [s for s in statuses if s != "grey"]
    return min(known, key=order.index) if known else "grey"


def _level(value: float | None, amber: float, red: float) -> Status:
    if value is None:
        return "grey"
    return "red" if value >= red else "amber" if value >= amber else "green"


def _vector(v: Vector | Unreachable) -> Vector:
    return v if isinstance(v, list) else []


def _last_day(v: Vector | Unreachable) -> tuple[str, float] | None:
    days = by_label(_vector(v), "measure_date")
    if not days:
        return None
    day = max(days)
    return day, days[day]


# A hop the exporter is not told to watch and no other source reports: the deployment has none
# (the demo's simulator writes to Kafka itself), which is not a hop without data.
NOT_DEPLOYED = "not in this deployment"


def unwatched(raw: Mapping[str, Any] | Unreachable | None) -> frozenset[str]:
    """The hops the exporter's JSON says it does not watch: `hes` without --hes-dsn (its
    `source` is null), `connect` without --connect-url. Unknown while it does not answer."""
    if not isinstance(raw, Mapping):
        return frozenset()
    return frozenset(
        hop
        for hop, missing in (
            ("hes", raw.get("source") is None),
            ("connect", not raw.get("connect")),
        )
        if missing
    )


# What the demo (vigia-stack --demo) lacks for a hop a real deployment has.
DEMO_NEEDS = {
    "hes": ("the demo needs", "sudo apt-get install -y mariadb-server"),
    "connect": ("in the demo", "none (mock Kafka)"),
}


def _not_deployed(ctx: PageContext, key: str, name: str, flag: str) -> Hop:
    facts = (("watched with", f"vigia-exporter {flag}"),)
    return Hop(key, name, "grey", NOT_DEPLOYED, (*facts, DEMO_NEEDS[key]) if ctx.demo else facts)


def hes_hop(ctx: PageContext) -> Hop:
    up = scalar(ctx.instant("hes_up"))
    if up is None and "hes" in unwatched(ctx.fetched.cluster):
        return _not_deployed(ctx, "hes", "HES database", "--hes-dsn")
    age = scalar(ctx.instant("hes_age"))
    today = _last_day(ctx.instant("hes_days"))
    binlog, binlog_status = binlog_fact(
        ctx.instant("binlog_state"), scalar(ctx.instant("binlog_margin"))
    )
    status = _worst(
        "grey" if up is None else ("green" if up == 1 else "red"),
        _level(age, HES_AGE_AMBER / 2, HES_AGE_AMBER),
        binlog_status,
    )
    headline = "no data" if up is None else ("database up" if up == 1 else "database down")
    return Hop(
        "hes",
        "HES database",
        status,
        headline,
        (
            ("newest row", fmt_seconds(age) + " ago" if age is not None else "–"),
            (f"rows {today[0]}" if today else "rows today", fmt_int(today[1] if today else None)),
            ("connections", fmt_int(scalar(ctx.instant("hes_connections")))),
            ("binlog kept for", binlog),
        ),
    )


def binlog_fact(states: Vector | Unreachable, margin: float | None) -> tuple[str, Status]:
    """How long the HES keeps the binlog the connector still needs (the exporter's
    vigia_hes_binlog_retention_*; runbooks HesBinlogRetentionAtRisk, HesBinlogLost)."""
    state = next((s.labels.get("state") for s in _vector(states)), None)
    if state == "lost":
        return "LOST: purged unread", "red"
    if state == "none":
        return "forever (no purge)", "green"
    if state in ("ok", "at_risk") and margin is not None:
        return f"≥ {fmt_seconds(margin)}" + (" AT RISK" if state == "at_risk" else ""), (
            "red" if state == "at_risk" else "green"
        )
    return "–", "grey"


def task_states(v: Vector | Unreachable) -> dict[str, int]:
    """Tasks per current state, over every connector."""
    counts: dict[str, int] = {}
    for s in _vector(v):
        state = s.labels.get("state", "?")
        counts[state] = counts.get(state, 0) + 1
    return counts


def connect_hop(ctx: PageContext) -> Hop:
    workers = _vector(ctx.instant("workers"))
    states = task_states(ctx.instant("tasks"))
    if not workers and not states and "connect" in unwatched(ctx.fetched.cluster):
        return _not_deployed(ctx, "connect", "Kafka Connect (Debezium)", "--connect-url")
    connected = _vector(ctx.instant("connected"))
    since = scalar(ctx.instant("since_event"))
    down = [s.labels.get("connect", "?") for s in workers if s.value == 0]
    failed = states.get("FAILED", 0)
    disconnected = [s.labels.get("server", "?") for s in connected if s.value == 0]
    # A failed task has its own headline; the other causes are what REST alone does not show.
    stalled = [
        f"{s.labels.get('connector', '?')} ({s.labels.get('cause', '?')})"
        for s in _vector(ctx.instant("stalled"))
        if s.labels.get("cause") != "failed"
    ]
    status = _worst(
        "grey" if not workers else ("red" if down else "green"),
        "red" if failed or stalled else ("green" if states else "grey"),
        "red" if disconnected else ("green" if connected else "grey"),
    )
    if not workers and not states:
        headline = "no data"
    elif down:
        headline = f"worker down: {', '.join(down)}"
    elif stalled:
        headline = f"moves nothing: {', '.join(stalled)}"
    elif failed:
        headline = f"{failed} task{'s' if failed > 1 else ''} FAILED"
    elif disconnected:
        headline = f"not connected: {', '.join(disconnected)}"
    else:
        headline = "running"
    tasks = ", ".join(f"{n} {state}" for state, n in sorted(states.items())) or "–"
    debezium = (
        ", ".join(
            f"{s.labels.get('server', '?')} {'yes' if s.value == 1 else 'no'}" for s in connected
        )
        if connected
        else "no series (task failed?)"
        if states
        else "–"
    )
    return Hop(
        "connect",
        "Kafka Connect (Debezium)",
        status,
        headline,
        (
            ("tasks", tasks),
            ("data moving", _flow_state(ctx.fetched.cluster)),
            ("binlog connected", debezium),
            ("since last event", fmt_seconds(since)),
            ("rows written/s", fmt_number(scalar(ctx.instant("written_rate")))),
        ),
    )


def _flow(raw: Mapping[str, Any] | Unreachable | None) -> Mapping[str, Any]:
    """The exporter's flow verdict (`source.flow`), empty without --hes-dsn or an answer."""
    if not isinstance(raw, Mapping):
        return {}
    return (raw.get("source") or {}).get("flow") or {}


def _flow_state(raw: Mapping[str, Any] | Unreachable | None) -> str:
    return str(_flow(raw).get("state") or "–")


def stall_rows(raw: Mapping[str, Any] | Unreachable | None, now: float) -> list[list[str]]:
    """(Connect, connector, data, cause, rows waiting for) of every source connector the exporter
    judges (/api/v1/cluster `connect[].stalls`): the pipeline's connector shows the flow's state
    (moving, idle, pending, …), the others only whether they are stalled (REST alone)."""
    if not isinstance(raw, Mapping):
        return []
    flow = _flow(raw)
    rows = []
    for cluster in raw.get("connect") or ():
        for stall in cluster.get("stalls") or ():
            mine = stall.get("connector") == flow.get("connector")
            if stall.get("stalled"):
                data = "STALLED"
            else:
                data = str(flow.get("state") or "–") if mine else "not stalled"
            pending = flow.get("pending_since") if mine else None
            rows.append(
                [
                    str(cluster.get("connect")),
                    str(stall.get("connector")),
                    data,
                    str(stall.get("cause") or "–"),
                    fmt_seconds(now - pending) if pending is not None else "–",
                ]
            )
    return rows


def kafka_hop(ctx: PageContext) -> Hop:
    behind = scalar(ctx.instant("hes_to_kafka"))
    offline = scalar(ctx.instant("kafka_offline"))
    rate = scalar(ctx.instant("kafka_rate"))
    status = _worst(
        _level(behind, HES_TO_KAFKA_RED / 3, HES_TO_KAFKA_RED),
        "grey" if offline is None else ("red" if offline > 0 else "green"),
    )
    return Hop(
        "kafka",
        f"Kafka topic {TOPIC}",
        status,
        "no data" if rate is None else f"{fmt_number(rate)} msg/s",
        (
            ("behind the HES", fmt_seconds(behind)),
            ("messages retained", fmt_int(scalar(ctx.instant("kafka_retained")))),
            ("offline partitions", fmt_int(offline)),
        ),
    )


def spark_hop(ctx: PageContext) -> Hop:
    active = scalar(ctx.instant("ingest_active"))
    backlog = scalar(ctx.instant("ingest_backlog"))
    status = _worst(
        "grey" if active is None else ("green" if active == 1 else "red"),
        _level(backlog, THRESHOLDS.backlog_amber, THRESHOLDS.backlog_red),
    )
    headline = "no data" if active is None else ("running" if active == 1 else "stopped")
    return Hop(
        "spark",
        "Spark ingest job",
        status,
        headline,
        (
            ("rows read/s", fmt_number(scalar(ctx.instant("ingest_rate")))),
            (f"{INGEST_GROUP} behind", fmt_seconds(backlog)),
        ),
    )


def parquet_hop(ctx: PageContext) -> Hop:
    age = scalar(ctx.instant("store_age"))
    behind = scalar(ctx.instant("kafka_to_store"))
    today = _last_day(ctx.instant("store_days"))
    return Hop(
        "parquet",
        "Parquet store",
        _level(age, THRESHOLDS.freshness_amber, THRESHOLDS.freshness_red),
        "no data" if age is None else f"newest {fmt_seconds(age)} old",
        (
            ("behind Kafka", fmt_seconds(behind)),
            (f"rows {today[0]}" if today else "rows today", fmt_int(today[1] if today else None)),
        ),
    )


def hops(ctx: PageContext) -> list[Hop]:
    return [hes_hop(ctx), connect_hop(ctx), kafka_hop(ctx), spark_hop(ctx), parquet_hop(ctx)]


def failed_tasks(raw: Mapping[str, Any] | Unreachable | None) -> list[list[str]]:
    """(Connect, connector/task, state, first trace line) of every task not RUNNING, from the
    exporter's /api/v1/cluster `connect` section; lenient like the rest of the JSON parsing."""
    if not isinstance(raw, Mapping):
        return []
    rows = []
    for cluster in raw.get("connect") or ():
        if not cluster.get("up", False):
            rows.append(
                [str(cluster.get("connect")), "–", "NOT ANSWERING", str(cluster.get("error"))]
            )
            continue
        for connector in cluster.get("connectors") or ():
            for task in connector.get("tasks") or ():
                if task.get("state") != "RUNNING":
                    rows.append(
                        [
                            str(cluster.get("connect")),
                            f"{connector.get('name')}/{task.get('id')}",
                            str(task.get("state")),
                            task.get("trace_first_line") or "",
                        ]
                    )
    return rows


def _render(hop: Hop) -> html.Div:
    return html.Div(
        [
            html.Div(hop.name, className="light-label"),
            html.Div(hop.headline, className="hop-headline"),
            html.Table(
                [
                    html.Tr([html.Td(label), html.Td(value, className="hop-value")])
                    for label, value in hop.facts
                ],
                className="hop-facts",
            ),
        ],
        id=f"hop-{hop.key}",
        className=f"light hop light-{hop.status}",
        title=f"{hop.name}: {hop.headline} ({hop.status})",
    )


def flow(items: Sequence[Hop]) -> html.Div:
    children: list[Any] = []
    for i, hop in enumerate(items):
        if i:
            children.append(html.Div("→", className="hop-arrow"))
        children.append(_render(hop))
    return html.Div(children, className="hops", id="pipeline-hops")


def stall_note(raw: Mapping[str, Any] | Unreachable | None) -> str:
    """How the exporter judges a stall, with its settings when it says them."""
    source = (raw.get("source") if isinstance(raw, Mapping) else None) or {}
    every = source.get("interval_seconds")
    after = (source.get("flow") or {}).get("stall_after_seconds")
    if every is None or after is None:
        return (
            "Without the exporter's watch of the HES (--hes-dsn) a connector is judged on "
            "Connect's REST alone: only a FAILED or unassigned task is a stall."
        )
    return (
        f"The exporter reads the HES's newest row and the topic's end offsets every {every:g} s: "
        f"rows the topic lacks and no record reaching it for {after:g} s is a stall, whatever "
        "Connect's REST says (runbook HesConnectorStalled: what to do for each cause)."
    )


def build(ctx: PageContext) -> list[Any]:
    stalls = stall_rows(ctx.fetched.cluster, ctx.now)
    lag = matrix_traces(
        ctx.ranged("hop_lag"),
        lambda labels: labels.get("hop", "?").replace("_", " "),
        metric="vigia_pipeline_hop_lag_seconds",
    )
    return [
        banner(ctx.fetched.cluster),
        flow(hops(ctx)),
        html.Div(
            [
                card(
                    "Connect tasks not running",
                    simple_table(
                        ["Connect", "Task", "State", "First line of the trace"],
                        failed_tasks(ctx.fetched.cluster),
                        id="connect-tasks",
                        empty="Every task is RUNNING (or no --connect-url is watched).",
                    ),
                    note(
                        "A FAILED task stays failed until it is restarted through the REST API "
                        "(runbook HesConnectorFailed)."
                    ),
                ),
                card(
                    "Is data moving from the HES to Kafka?",
                    simple_table(
                        ["Connect", "Connector", "Data", "Cause", "Rows waiting for"],
                        stalls,
                        id="connect-stalls",
                        row_classes=["row-bad" if r[2] == "STALLED" else "" for r in stalls],
                        empty="No source connector is watched (vigia-exporter --connect-url).",
                    ),
                    note(stall_note(ctx.fetched.cluster)),
                ),
                card(
                    "How far each hop is behind the one before",
                    graph(
                        line_figure("Hop lag", lag, seconds=True),
                        "fig-pipeline-hop-lag",
                    ),
                    *(
                        [
                            note(
                                "The hop lags are measured by the exporter's watch of the HES "
                                f"(vigia-exporter --hes-dsn): {NOT_DEPLOYED}."
                            )
                        ]
                        if "hes" in unwatched(ctx.fetched.cluster)
                        else []
                    ),
                ),
            ],
            className="grid",
        ),
    ]
