"""The background collection loop: collect on its own schedule, derive, publish the latest state.

HTTP handlers only read `CollectionService.state` (one reference, swapped atomically), so a slow
or unreachable cluster never makes /metrics slow. A collection runs in a worker thread and is
abandoned when it exceeds its timeout (plus a short grace for the adapter to report its own
errors); while the cluster is unreachable the loop retries with exponential backoff.

The service owns the exporter's `History` (lag and ISR trackers, handed to every `derive`) and
starts and stops the end-to-end probe, which runs on its own threads and schedule.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping

from vigia.exporter.model.lag_status import DEFAULT_WINDOW_SIZE
from vigia.exporter.model.snapshot import (
    COLLECTION_PHASE,
    ClusterSnapshot,
    PhaseError,
    empty_snapshot,
)
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.probe.runner import ProbeRunner

log = logging.getLogger(__name__)

Collect = Callable[[float], ClusterSnapshot]
# A step run after the collection in the same worker and timeout, e.g. reading record timestamps
# (exporter/kafka/record_times.py): (snapshot, previous state, seconds left) -> snapshot.
Enrich = Callable[[ClusterSnapshot, ExporterState | None, float], ClusterSnapshot]
# The adapter bounds its own calls by the timeout; this grace lets it return its per-phase errors.
GRACE_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 120.0
# How long collections must fit in the interval, in a row, before the log says so (and at least
# three of them): on a loaded host a collection close to the interval would otherwise log a pair
# of lines every few collections.
FIT_AGAIN_SECONDS = 60.0


class CollectionService:
    def __init__(
        self,
        collect: Collect,
        interval: float,
        timeout: float,
        *,
        bootstrap_servers: str = "",
        clock: Callable[[], float] = time.time,
        lag_status_window: int = DEFAULT_WINDOW_SIZE,
        history: History | None = None,
        probe: ProbeRunner | None = None,
        enrich: Enrich | None = None,
    ) -> None:
        """`history`: the trackers with the exporter's settings (else defaults but for
        `lag_status_window`)."""
        self._collect = collect
        self._enrich = enrich
        self._history = history or History.create(lag_status_window)
        self.probe = probe
        self._interval = interval
        self._timeout = timeout
        self._bootstrap = bootstrap_servers
        self._clock = clock
        self._state: ExporterState | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._worker: threading.Thread | None = None
        self._failures = 0  # consecutive collections that could not reach the cluster
        self._last_failed: frozenset[str] = frozenset()
        self._broker_up: Mapping[int, bool] = {}  # as last seen in metadata
        self._broker_failures: Mapping[tuple[int, str], str] = {}  # (broker, phase) -> error
        self._overrunning = False
        self._slow = False  # said to overrun, not yet said to fit again
        self._fitted = 0  # collections in a row that fit since then
        self._fit_again_after = max(3, math.ceil(FIT_AGAIN_SECONDS / interval))

    @property
    def interval(self) -> float:
        return self._interval

    @property
    def overrunning(self) -> bool:
        """Whether the last collection took longer than the interval: the next one starts at once,
        so values are as old as a collection takes, not the interval."""
        return self._overrunning

    @property
    def state(self) -> ExporterState | None:
        """The last completed collection, or None before the first one."""
        return self._state

    def start(self) -> None:
        if self.probe is not None:
            self.probe.start()  # never blocks: its Kafka work runs on its own threads
        self._thread = threading.Thread(target=self._run, name="vigia-collector", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        # The probe stops (and joins its threads) while the collection loop winds down.
        if self.probe is not None:
            self.probe.stop()
        if self._thread is not None:
            self._thread.join(timeout=self._timeout + GRACE_SECONDS + 1)

    def collect_once(self) -> ExporterState:
        started = time.monotonic()
        snapshot = self._bounded_collect()
        state = derive(self._state, snapshot, self._history)
        self._state = state
        self._report(snapshot)
        if state.broker_up:  # without metadata nothing is known about the brokers
            _report_brokers(self._broker_up, state.broker_up)
            self._broker_up = state.broker_up
            failures = snapshot.broker_failures
            _report_broker_failures(self._broker_failures, failures)
            self._broker_failures = failures
        self._note_pace(time.monotonic() - started)
        return state

    def _note_pace(self, took: float) -> None:
        self._overrunning = took > self._interval
        if self._overrunning:
            if not self._slow:
                log.warning(
                    "a collection took %.1f s, longer than the %g s interval: collecting back to "
                    "back (vigia_exporter_collection_overrunning 1); raise --collection-interval "
                    "or collect less (docs/metrics.md#series-budget)",
                    took,
                    self._interval,
                )
            self._slow, self._fitted = True, 0
        elif self._slow:
            self._fitted += 1
            if self._fitted == self._fit_again_after:
                log.info(
                    "collections fit in the %g s interval again (the last %d; %.1f s)",
                    self._interval,
                    self._fitted,
                    took,
                )
                self._slow = False

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.collect_once()
            except Exception:  # a bug must not kill the loop: log it and try again next time
                log.exception("collection crashed")
            delay = self._next_delay() - (time.monotonic() - started)
            self._stop.wait(max(0.0, delay))

    def _bounded_collect(self) -> ClusterSnapshot:
        collected_at = self._clock()
        if self._worker is not None and self._worker.is_alive():
            return empty_snapshot(
                collected_at,
                (PhaseError(COLLECTION_PHASE, "the previous collection is still running"),),
            )
        result: list[ClusterSnapshot] = []
        failure: list[BaseException] = []
        previous = self._state
        started = time.monotonic()

        def work() -> None:
            try:
                snapshot = self._collect(self._timeout)
                if self._enrich is not None:
                    left = self._timeout - (time.monotonic() - started)
                    try:
                        snapshot = self._enrich(snapshot, previous, left)
                    except Exception:  # a bug there must not lose the collection
                        log.exception("enriching the collection failed")
                result.append(snapshot)
            except BaseException as exc:
                failure.append(exc)

        self._worker = threading.Thread(target=work, name="vigia-collection", daemon=True)
        self._worker.start()
        self._worker.join(self._timeout + GRACE_SECONDS)
        if result:
            return result[0]
        if failure:
            message = f"collection failed: {type(failure[0]).__name__}: {failure[0]}"
        else:
            message = f"collection timed out after {self._timeout:g} s"
        return empty_snapshot(collected_at, (PhaseError(COLLECTION_PHASE, message),))

    def _unreachable(self, snapshot: ClusterSnapshot) -> bool:
        return not snapshot.has_metadata

    def _next_delay(self) -> float:
        if self._failures == 0:
            return self._interval
        backoff: float = self._interval * 2.0 ** (self._failures - 1)
        return min(backoff, max(self._interval, MAX_BACKOFF_SECONDS))

    def _report(self, snapshot: ClusterSnapshot) -> None:
        if self._unreachable(snapshot):
            self._failures += 1
            reason = "; ".join(f"{e.phase}: {e.message}" for e in snapshot.errors)
            log.warning(
                "cannot collect from Kafka at %s (%s); vigia_exporter_up is 0, retrying in %.3g s "
                "(backoff doubles up to %.3g s)",
                self._bootstrap or "the bootstrap servers",
                reason,
                self._next_delay(),
                max(self._interval, MAX_BACKOFF_SECONDS),
            )
            self._last_failed = snapshot.failed_phases
            return
        if self._failures:
            log.info("Kafka reachable again after %d failed collection(s)", self._failures)
            self._failures = 0
            self._last_failed -= {"metadata", COLLECTION_PHASE}  # said by the line above
        # One line when a phase starts failing and one when it recovers, not per collection, and
        # one per phase, not per group or partition the phase failed for.
        starting: dict[str, list[str]] = {}
        for error in snapshot.errors:
            if error.phase not in self._last_failed:
                starting.setdefault(error.phase, []).append(error.message)
        for phase, messages in starting.items():
            more = f" (and {len(messages) - 1} more)" if len(messages) > 1 else ""
            log.warning("phase %s failing: %s%s", phase, messages[0], more)
        for phase in sorted(self._last_failed - snapshot.failed_phases):
            log.info("phase %s recovered", phase)
        self._last_failed = snapshot.failed_phases


def _report_brokers(before: Mapping[int, bool], now: Mapping[int, bool]) -> None:
    """One line when an expected broker leaves the metadata and one when it is back."""
    for broker, up in now.items():
        if not up and before.get(broker, True):
            log.warning(
                "broker %d is down: the cluster expects it (replicas, KRaft voters) but it is "
                "not in the metadata; it is not asked for anything until it is back",
                broker,
            )
        elif up and before.get(broker) is False:
            log.info("broker %d is back in the metadata", broker)


def _report_broker_failures(
    before: Mapping[tuple[int, str], str], now: Mapping[tuple[int, str], str]
) -> None:
    """One line when a broker's own answer starts failing and one when it is back."""
    for (broker, phase), error in sorted(now.items()):
        if (broker, phase) not in before:
            log.warning(
                "broker %d: no %s answer (%s); its series of that phase are missing until it "
                "answers, vigia_exporter_up stays 1",
                broker,
                phase,
                error,
            )
    for broker, phase in sorted(before.keys() - now.keys()):
        log.info("broker %d answers %s again", broker, phase)
