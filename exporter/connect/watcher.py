"""One Connect cluster watched on its own thread and schedule, apart from the Kafka collection.

`poll_once` asks the adapter for a view, adds the restarts it reveals to the counters and
publishes a `ConnectReport` (one reference, swapped atomically), so /metrics and /api/v1/cluster
only read memory. The adapter bounds each call by the timeout; a worker that does not answer is a
view with an error, and the next poll is at the usual interval. A line is logged per change
(worker answering or not, a connector's or task's state), not per poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from vigia.exporter.connect.adapter import ConnectClient
from vigia.exporter.connect.model import ConnectView, TaskKey, restarts_seen

log = logging.getLogger(__name__)


def _no_restarts() -> Mapping[TaskKey, int]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ConnectReport:
    """The last view and the restarts seen since the exporter started, per (connector, task).

    When the worker does not answer, the counters of the last answer are kept (and not served):
    its connectors are not known to be gone."""

    view: ConnectView
    restarts: Mapping[TaskKey, int] = field(default_factory=_no_restarts)
    last_answer: ConnectView | None = None  # the last view with an answer (`view` when it has one)


def next_report(previous: ConnectReport | None, view: ConnectView) -> ConnectReport:
    """Pure: the report after `view`, comparing it with the last view that had an answer."""
    if not view.up:
        if previous is None:
            return ConnectReport(view)
        return ConnectReport(view, previous.restarts, previous.last_answer)
    last_answer = previous.last_answer if previous is not None else None
    restarts = dict(previous.restarts) if previous is not None else {}
    if last_answer is not None:
        for key, count in restarts_seen(last_answer.connectors, view.connectors).items():
            restarts[key] = restarts.get(key, 0) + count
    present = {(c.name, t.id) for c in view.connectors for t in c.tasks}
    kept = {key: n for key, n in restarts.items() if key in present}
    for key in present - kept.keys():
        kept[key] = 0
    return ConnectReport(view, MappingProxyType(dict(sorted(kept.items()))), view)


class ConnectWatcher:
    def __init__(self, client: ConnectClient, interval: float) -> None:
        self.client = client
        self._interval = interval
        self._report: ConnectReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def report(self) -> ConnectReport | None:
        """The last poll, or None before the first one."""
        return self._report

    def poll_once(self) -> ConnectReport:
        previous = self._report
        report = next_report(previous, self.client.observe())
        _log_changes(previous.view if previous else None, report.view)
        self._report = report
        return report

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"vigia-connect-{self.client.connect}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.client.timeout + 1)  # a poll in flight ends by then
        self.client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:  # a bug must not kill the loop: log it and try again next time
                log.exception("Connect poll of %s crashed", self.client.connect)
            self._stop.wait(self._interval)


def _log_changes(previous: ConnectView | None, view: ConnectView) -> None:
    where = f"Kafka Connect {view.connect!r} at {view.url}"
    if not view.up:
        if previous is None or previous.up:
            log.warning("%s does not answer (%s); kafka_connect_worker_up is 0", where, view.error)
        return
    if previous is None or not previous.up:
        log.info("%s answers: %d connector(s)", where, len(view.connectors))
    before = {} if previous is None else {c.name: c for c in previous.connectors}
    for connector in view.connectors:
        old = before.get(connector.name)
        if old is None or old.state != connector.state:
            log.info("%s: connector %s is %s", where, connector.name, connector.state)
        old_tasks = {} if old is None else {t.id: t.state for t in old.tasks}
        for task in connector.tasks:
            if old_tasks.get(task.id) != task.state:
                level = logging.WARNING if task.state == "FAILED" else logging.INFO
                log.log(
                    level,
                    "%s: task %s/%d is %s%s",
                    where,
                    connector.name,
                    task.id,
                    task.state,
                    f" ({task.trace_first_line})" if task.trace_first_line else "",
                )
