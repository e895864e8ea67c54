"""Which source connectors move nothing, and why (pure): Kafka Connect's REST answer beside the
pipeline's flow verdict (`exporter.model.pipeline_flow`).

A source connector is stalled, with one cause, when:

- `failed`: it or one of its tasks is FAILED. A failed task never moves the next row, and never
  recovers by itself, so this holds whether or not the HES is writing;
- `unassigned`: it or a task is UNASSIGNED or RESTARTING, or it has fewer tasks than configured,
  while the flow is stalled (for the pipeline's connector) or at all (for other source
  connectors, whose data the exporter cannot see). Connect hands unassigned tasks out again by
  itself, after `scheduled.rebalance.max.delay.ms` at most; a HES with nothing to write loses
  nothing meanwhile;
- `connect_down`: the Connect cluster's REST API does not answer while the flow is stalled (only
  the pipeline's connector is judged then, from its last answer);
- `silent`: REST says RUNNING and yet the flow is stalled: the task is on no live worker (REST
  keeps the last status a worker wrote, issue 23), or Debezium lost the HES's binlog, or the
  worker cannot write to Kafka. The JMX series (not scraped by the exporter) tell those apart;
  the runbook HesConnectorStalled says how.

A PAUSED or STOPPED connector is never stalled: someone stopped it. Only the pipeline's connector
(`--pipeline-connector`, the one writing the HES's rows to `--pipeline-topic`) is judged on the
flow, while the flow is known (`--hes-dsn`, and the last look read both the HES and the topic);
otherwise it is judged on REST alone, like the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from vigia.exporter.connect.model import FAILED, RESTARTING, ConnectorStatus
from vigia.exporter.connect.watcher import ConnectReport
from vigia.exporter.model.pipeline_flow import STALLED, UNKNOWN, Flow

CAUSES: Final = ("failed", "unassigned", "connect_down", "silent")
SOURCE: Final = "source"
_DELIBERATE = frozenset({"PAUSED", "STOPPED"})
_UNASSIGNED = frozenset({"UNASSIGNED", RESTARTING})


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The pipeline's connector and its flow verdict (None before the first look)."""

    connector: str
    flow: Flow | None


def cause(connector: ConnectorStatus, flow: Flow | None) -> str | None:
    """The stall cause of a connector the worker answered for; `flow` only for the pipeline's."""
    if connector.state in _DELIBERATE:
        return None
    states = {connector.state, *(t.state for t in connector.tasks)}
    if FAILED in states:
        return "failed"
    unassigned = bool(states & _UNASSIGNED) or len(connector.tasks) < connector.task_count
    if flow is None:
        return "unassigned" if unassigned else None
    if flow.state != STALLED:
        return None
    return "unassigned" if unassigned else "silent"


def stalls(report: ConnectReport, pipeline: Pipeline | None) -> Mapping[str, str | None]:
    """Connector name → stall cause (None: not stalled), for every source connector whose state
    is known: all of them while the worker answers, else the pipeline's alone (from its last
    answer), which the flow still judges."""
    flow = pipeline.flow if pipeline is not None else None
    if flow is not None and flow.state == UNKNOWN:
        flow = None  # judged on REST alone, like any other source connector
    judged = pipeline.connector if pipeline is not None and flow is not None else None
    if report.view.up:
        return {
            c.name: cause(c, flow if c.name == judged else None)
            for c in report.view.connectors
            if c.type == SOURCE or c.name == judged
        }
    known = report.last_answer.connectors if report.last_answer is not None else ()
    if flow is None or judged not in {c.name for c in known}:
        return {}
    return {judged: "connect_down" if flow.state == STALLED else None}
