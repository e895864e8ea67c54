"""Ingest: the Spark job's micro-batches, backlog, invalid rows, freshness, daily completeness."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dash import html

from vigia.dashboard.data import Plan, Unreachable, Vector, by_label, scalar
from vigia.dashboard.views.common import (
    Figure,
    PageContext,
    Trace,
    TraceSet,
    bar_figure,
    card,
    empty_figure,
    fmt_int,
    fmt_number,
    fmt_seconds,
    graph,
    line_figure,
    matrix_traces,
    note,
    simple_table,
)
from vigia.dashboard.views.overview import INGEST_GROUP

# `vigia-ingest run --trigger-interval` default, drawn when the job does not export its interval.
DEFAULT_TRIGGER_INTERVAL = 30.0
_BY_QUERY = "sum by (query)"


def plan() -> Plan:
    return Plan(
        cluster=False,
        instant={
            "active": "max by (query) (vigia_ingest_query_active)",
            "input_total": "sum(vigia_ingest_input_rows_total)",
            "valid_total": "sum(vigia_ingest_valid_rows_total)",
            "invalid_total": "sum by (reason) (vigia_ingest_invalid_rows_total)",
            "last_batch_rows": "sum(vigia_ingest_batch_input_rows)",
            "freshness": "time() - max(vigia_ingest_newest_measure_timestamp_seconds)",
            "progress_age": "time() - max(vigia_ingest_last_progress_timestamp_seconds)",
            "trigger": "max(vigia_ingest_trigger_interval_seconds)",
            "day_measures": "max by (measure_date) (vigia_ingest_day_measures)",
            "completeness": '{__name__=~"vigia_ingest_.*completeness.*"}',
            **CATCH_UP_QUERIES,
            **SPARK_QUERIES,
        },
        ranged={
            "input_rate": f"{_BY_QUERY} (vigia_ingest_input_rows_per_second)",
            "processed_rate": f"{_BY_QUERY} (vigia_ingest_processed_rows_per_second)",
            # the last batch's own duration; a rate() ratio of the histogram's _sum and _count
            # is skewed by extrapolation when only a few batches fall in the window
            "batch_last": (
                'max by (query) (vigia_ingest_phase_duration_seconds{phase="triggerExecution"})'
            ),
            "batch_p95": (
                "histogram_quantile(0.95, sum by (query, le) "
                "(rate(vigia_ingest_batch_duration_seconds_bucket[5m])))"
            ),
            "rows_per_batch": f"{_BY_QUERY} (vigia_ingest_batch_input_rows)",
            "backlog_messages": "max by (topic) (vigia_ingest_offsets_behind_latest)",
            "group_lag": (
                f'sum by (topic) (kafka_consumergroup_lag_sum{{consumergroup="{INGEST_GROUP}"}})'
            ),
            "backlog_seconds": (
                f'max(kafka_consumergroup_max_lag_seconds{{consumergroup="{INGEST_GROUP}"}})'
            ),
            "invalid_rate": "sum by (reason) (rate(vigia_ingest_invalid_rows_total[5m]))",
            "freshness": "time() - max(vigia_ingest_newest_measure_timestamp_seconds)",
            "progress_age": "time() - max(vigia_ingest_last_progress_timestamp_seconds)",
            "margin_history": CATCH_UP_QUERIES["margin"].replace("topic, limit", "topic"),
            "catchup_history": CATCH_UP_QUERIES["catchup_seconds"],
            "executors_history": SPARK_QUERIES["executors"],
        },
    )


# The job's Spark application (ingest/spark_health.py, the job's Kafka calls): column -> query.
SPARK_QUERIES = {
    "executors": f"{_BY_QUERY} (vigia_ingest_executors)",
    "cores": f"{_BY_QUERY} (vigia_ingest_executor_cores)",
    "failed_tasks": f"{_BY_QUERY} (vigia_ingest_failed_tasks_total)",
    "executors_lost": f"{_BY_QUERY} (vigia_ingest_executors_lost_total)",
    "kafka_retries": f"{_BY_QUERY} (vigia_ingest_kafka_retries_total)",
}


def spark_rows(answers: Mapping[str, Vector | Unreachable]) -> list[list[str]]:
    """Per query: executors alive, their cores, failed task attempts, executors lost and Kafka
    calls retried since the job started; "–" where the job serves nothing (an older job, a driver
    whose UI did not answer)."""
    values = {
        key: by_label(answer, "query")
        for key in SPARK_QUERIES
        if isinstance(answer := answers.get(key), list)
    }
    queries = sorted(set(values.get("executors", {})) | set(values.get("failed_tasks", {})))
    return [
        [query, *(fmt_int(values.get(key, {}).get(query)) for key in SPARK_QUERIES)]
        for query in queries
    ]


# The exporter's catch-up and retention verdicts for the job's group (docs/lag.md#retention):
# answer -> (aggregation, family).
CATCH_UP_FAMILIES = {
    "backlog": ("sum by (topic)", "kafka_consumergroup_lag_sum"),
    "drain": ("sum by (topic)", "kafka_consumergroup_backlog_drain_messages_per_second"),
    "catchup_seconds": ("max by (topic)", "kafka_consumergroup_catchup_seconds"),
    "catchup_state": ("max by (topic)", "kafka_consumergroup_catchup_state"),
    "margin": ("min by (topic, limit)", "kafka_consumergroup_min_retention_margin_seconds"),
    "at_risk": ("max by (topic)", "kafka_consumergroup_retention_at_risk"),
    "lost": ("sum by (topic)", "kafka_consumergroup_lost_messages_sum"),
}
CATCH_UP_QUERIES = {
    key: f'{aggregation} ({family}{{consumergroup="{INGEST_GROUP}"}})'
    for key, (aggregation, family) in CATCH_UP_FAMILIES.items()
}
CATCH_UP_STATES = {0: "caught up", 1: "draining", 2: "holding", 3: "growing"}


def catch_up_rows(answers: Mapping[str, Vector | Unreachable]) -> list[list[str]]:
    """Per topic the group reads: backlog, drain rate, time to catch up, retention margin (and
    which limit), state, and the verdict: lost, at risk, ok."""
    values: dict[str, dict[str, float]] = {}
    limits: dict[str, str] = {}
    for key in CATCH_UP_QUERIES:
        answer = answers.get(key)
        if isinstance(answer, list):
            values[key] = by_label(answer, "topic")
            if key == "margin":
                limits = {s.labels.get("topic", ""): s.labels.get("limit", "") for s in answer}
    topics = sorted(set(values.get("backlog", {})) | set(values.get("margin", {})))
    rows = []
    for topic in topics:
        get = {key: found.get(topic) for key, found in values.items()}
        state = get.get("catchup_state")
        margin = get.get("margin")
        lost, risk = get.get("lost"), get.get("at_risk")
        verdict = (
            f"LOST {fmt_int(lost)}" if lost else "AT RISK" if risk else "ok" if risk == 0 else "–"
        )
        rows.append(
            [
                topic,
                fmt_int(get.get("backlog")),
                fmt_number(get.get("drain")) + "/s" if get.get("drain") is not None else "–",
                fmt_seconds(get.get("catchup_seconds")) if state != 2 and state != 3 else "never",
                fmt_seconds(margin) + f" ({limits[topic]})" if margin is not None else "–",
                CATCH_UP_STATES.get(int(state), "?") if state is not None else "–",
                verdict,
            ]
        )
    return rows


@dataclass(frozen=True)
class DayCompleteness:
    date: str
    measures: float | None
    ratio: float | None  # from a completeness ratio metric, when the job exports one


def daily_completeness(
    day_measures: Vector | Unreachable, completeness: Vector | Unreachable
) -> list[DayCompleteness]:
    measures = by_label(day_measures, "measure_date") if isinstance(day_measures, list) else {}
    ratios: dict[str, float] = {}
    if isinstance(completeness, list):
        ratios = by_label(
            (s for s in completeness if "ratio" in s.labels.get("__name__", "")), "measure_date"
        )
    days = sorted(set(measures) | set(ratios))
    return [DayCompleteness(d, measures.get(d), ratios.get(d)) for d in days]


def completeness_figure(days: Sequence[DayCompleteness], reason: str) -> Figure:
    if not days:
        return empty_figure("Measures stored per day", reason)
    fig = bar_figure(
        "Measures stored per day",
        [d.date for d in days],
        {"measures stored": [d.measures for d in days]},
        y_title="measures",
    )
    if any(d.ratio is not None for d in days):
        fig["data"][0]["text"] = [
            f"{fmt_int(d.measures)}" + (f" ({d.ratio:.1%})" if d.ratio is not None else "")
            for d in days
        ]
    return fig


def invalid_summary(
    invalid: Vector | Unreachable, valid: float | None, total: float | None
) -> list[list[str]]:
    rows = []
    if isinstance(invalid, list):
        for s in sorted(invalid, key=lambda s: -(s.value or 0)):
            share = (s.value or 0) / total if total else None
            rows.append(
                [
                    s.labels.get("reason", "?"),
                    fmt_int(s.value),
                    f"{share:.2%}" if share is not None else "–",
                ]
            )
    if valid is not None:
        rows.append(
            ["(valid rows written)", fmt_int(valid), f"{valid / total:.2%}" if total else "–"]
        )
    return rows


def _active_text(active: Vector | Unreachable) -> str:
    if isinstance(active, Unreachable) or not active:
        return "no data"
    return ", ".join(
        f"{s.labels.get('query', 'query')}: {'running' if s.value == 1 else 'stopped'}"
        for s in active
    )


def build(ctx: PageContext) -> list[Any]:
    def named(suffix: str) -> Callable[[Mapping[str, str]], str]:
        return lambda labels: f"{labels.get('query', 'ingest')} {suffix}"

    inp = matrix_traces(
        ctx.ranged("input_rate"), named("input"), metric="vigia_ingest_input_rows_per_second"
    )
    proc = matrix_traces(
        ctx.ranged("processed_rate"),
        named("processed"),
        dash="dot",
        metric="vigia_ingest_processed_rows_per_second",
    )
    avg = matrix_traces(
        ctx.ranged("batch_last"), named("last batch"), metric="vigia_ingest_phase_duration_seconds"
    )
    p95 = matrix_traces(
        ctx.ranged("batch_p95"), named("p95"), metric="vigia_ingest_batch_duration_seconds"
    )
    rows = matrix_traces(
        ctx.ranged("rows_per_batch"), named("rows"), metric="vigia_ingest_batch_input_rows"
    )
    group_lag = matrix_traces(
        ctx.ranged("group_lag"),
        lambda lab: f"{INGEST_GROUP} lag · {lab.get('topic', '?')}",
        metric="kafka_consumergroup_lag_sum",
    )
    behind = matrix_traces(
        ctx.ranged("backlog_messages"),
        lambda lab: f"job's offsets behind · {lab.get('topic', '?')}",
        dash="dot",
        metric="vigia_ingest_offsets_behind_latest",
    )
    backlog_s = matrix_traces(
        ctx.ranged("backlog_seconds"),
        lambda _l: f"{INGEST_GROUP} lag (s)",
        metric="kafka_consumergroup_max_lag_seconds",
    )
    invalid = matrix_traces(
        ctx.ranged("invalid_rate"),
        lambda lab: lab.get("reason", "?"),
        metric="vigia_ingest_invalid_rows_total",
    )
    fresh = matrix_traces(
        ctx.ranged("freshness"),
        lambda _l: "newest stored measure age",
        metric="vigia_ingest_newest_measure_timestamp_seconds",
    )
    progress = matrix_traces(
        ctx.ranged("progress_age"),
        lambda _l: "time since last batch",
        dash="dot",
        metric="vigia_ingest_last_progress_timestamp_seconds",
    )

    trigger = scalar(ctx.instant("trigger"))
    trigger_label = (
        f"trigger interval {trigger:g} s"
        if trigger is not None
        else f"default trigger interval {DEFAULT_TRIGGER_INTERVAL:g} s (not exported)"
    )
    duration_traces = avg + p95
    if duration_traces:
        times = duration_traces.traces[0].times
        level = trigger if trigger is not None else DEFAULT_TRIGGER_INTERVAL
        line = Trace(trigger_label, [times[0], times[-1]], [level, level], "dash")
        duration_traces = duration_traces + TraceSet((line,), "", 0)

    input_total = scalar(ctx.instant("input_total"))
    valid_total = scalar(ctx.instant("valid_total"))
    summary = simple_table(
        [
            "Query",
            "Last batch rows",
            "Newest measure age",
            "Last batch",
            "Rows read",
            "Trigger interval",
        ],
        [
            [
                _active_text(ctx.instant("active")),
                fmt_int(scalar(ctx.instant("last_batch_rows"))),
                fmt_seconds(scalar(ctx.instant("freshness"))),
                (fmt_seconds(scalar(ctx.instant("progress_age"))) + " ago")
                if scalar(ctx.instant("progress_age")) is not None
                else "–",
                fmt_int(input_total),
                fmt_seconds(trigger if trigger is not None else DEFAULT_TRIGGER_INTERVAL),
            ]
        ],
        id="ingest-summary",
    )
    catch_up = catch_up_rows({key: ctx.instant(key) for key in CATCH_UP_QUERIES})
    margin_traces = matrix_traces(
        ctx.ranged("margin_history"),
        lambda lab: f"retention margin · {lab.get('topic', '?')}",
        metric="kafka_consumergroup_min_retention_margin_seconds",
    )
    catchup_traces = matrix_traces(
        ctx.ranged("catchup_history"),
        lambda lab: f"time to catch up · {lab.get('topic', '?')}",
        dash="dot",
        metric="kafka_consumergroup_catchup_seconds",
    )
    spark = spark_rows({key: ctx.instant(key) for key in SPARK_QUERIES})
    executors = matrix_traces(
        ctx.ranged("executors_history"), named("executors"), metric="vigia_ingest_executors"
    )
    day_measures = ctx.instant("day_measures")
    days = daily_completeness(day_measures, ctx.instant("completeness"))
    why_days = (
        str(day_measures)
        if isinstance(day_measures, Unreachable)
        else "vigia_ingest_day_measures not exported yet"
    )
    return [
        html.Div(
            [
                card("Ingest job", summary, wide=True),
                card(
                    "Rates",
                    graph(
                        line_figure(
                            "Input vs processed rows per second",
                            inp + proc,
                            y_title="rows/s",
                        ),
                        "fig-ingest-rates",
                    ),
                ),
                card(
                    "Batch duration",
                    graph(
                        line_figure(
                            "Batch duration vs trigger interval",
                            duration_traces,
                            seconds=True,
                        ),
                        "fig-ingest-batch-duration",
                    ),
                ),
                card(
                    "Rows per batch",
                    graph(
                        line_figure(
                            "Rows in the last batch",
                            rows,
                            y_title="rows",
                            step=True,
                        ),
                        "fig-ingest-rows",
                    ),
                ),
                card(
                    "Backlog (messages)",
                    graph(
                        line_figure(
                            "Messages not yet ingested",
                            group_lag + behind,
                            y_title="messages",
                        ),
                        "fig-ingest-backlog",
                    ),
                ),
                card(
                    "Catch-up and retention",
                    simple_table(
                        [
                            "Topic",
                            "Backlog",
                            "Drain rate",
                            "Time to catch up",
                            "Retention margin",
                            "State",
                            "Verdict",
                        ],
                        catch_up,
                        id="catch-up-table",
                        row_classes=[
                            "row-bad" if r[6].startswith(("LOST", "AT RISK")) else ""
                            for r in catch_up
                        ],
                        empty="No catch-up data from the exporter yet.",
                    ),
                    graph(
                        line_figure(
                            "Retention margin vs time to catch up",
                            margin_traces + catchup_traces,
                            seconds=True,
                        ),
                        "fig-ingest-catch-up",
                    ),
                    note(
                        "The margin is the time until Kafka may delete the oldest measure the job "
                        "has not read (a lower bound); at risk when catching up takes longer, or "
                        "the margin is under 6 h and the backlog does not drain. Runbook: "
                        "IngestRetentionAtRisk."
                    ),
                    wide=True,
                ),
                card(
                    "Spark cluster",
                    simple_table(
                        [
                            "Query",
                            "Executors",
                            "Cores",
                            "Failed tasks",
                            "Executors lost",
                            "Kafka retries",
                        ],
                        spark,
                        id="spark-table",
                        row_classes=[
                            "row-bad" if r[1] == "0" or r[4] not in ("0", "–") else ""
                            for r in spark
                        ],
                        empty="No Spark cluster metrics from the job yet.",
                    ),
                    graph(
                        line_figure(
                            "Spark executors alive", executors, y_title="executors", step=True
                        ),
                        "fig-ingest-executors",
                    ),
                    note(
                        "Counts since the job started. Spark reruns a failed or lost executor's "
                        "tasks elsewhere; runbooks IngestExecutorsLost and IngestTasksFailing."
                    ),
                ),
                card(
                    "Backlog (seconds)",
                    graph(
                        line_figure(
                            f"Lag of {INGEST_GROUP} in seconds",
                            backlog_s,
                            seconds=True,
                        ),
                        "fig-ingest-backlog-seconds",
                    ),
                ),
                card(
                    "Freshness",
                    graph(
                        line_figure(
                            "Age of the newest stored measure and of the last batch",
                            fresh + progress,
                            seconds=True,
                        ),
                        "fig-ingest-freshness",
                    ),
                ),
                card(
                    "Invalid rows",
                    graph(
                        line_figure(
                            "Quarantined rows per second by reason",
                            invalid,
                            y_title="rows/s",
                        ),
                        "fig-ingest-invalid",
                    ),
                    simple_table(
                        ["Reason", "Rows", "Share of rows read"],
                        invalid_summary(ctx.instant("invalid_total"), valid_total, input_total),
                        id="invalid-table",
                        empty="No invalid-row counts yet.",
                    ),
                ),
                card(
                    "Daily completeness",
                    graph(completeness_figure(days, why_days), "fig-ingest-completeness"),
                    note(
                        "Rows stored per measure date (last 7 days). Run `vigia-ingest "
                        "completeness --date D` for expected vs stored and the missing keys."
                    ),
                ),
            ],
            className="grid",
        )
    ]
