"""Counts each day once its deadline passes (`ingest.deadline`), on its own thread: the I/O.

Every `interval` seconds, and at start (days that fell due while the job was down), the watch
takes the days due, oldest first; for each it reads the expected measures (the HES's rows for the
day with --hes-dsn, else meters × 96 × magnitudes) and the distinct measures stored by the
deadline (Parquet rows whose ``ingested_at`` is at most the deadline: right whether the job was
running at the deadline or not), writes the new totals to the checkpoint, then hands them to the
metrics. A read that fails leaves the day, and the ones after it, for the next round (logged once
per change of outcome, and counted in vigia_ingest_deadline_days_overdue); the ingest itself never
waits for it.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from typing import Final, Protocol

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from vigia.ingest.deadline import DeadlineRule, DeadlineState, due_days
from vigia.ingest.schema import MEASURE_KEY_COLUMNS, VALID_SCHEMA

log = logging.getLogger(__name__)

STATE_FILE: Final = "vigia-deadline.json"
DEFAULT_INTERVAL: Final = 60.0


class TextStore(Protocol):
    """`ingest.sinks.HadoopFs`'s two calls the state needs."""

    def read_text(self, path: str) -> str | None: ...

    def write_text(self, path: str, text: str) -> None: ...


def load_state(store: TextStore, checkpoint: str) -> DeadlineState:
    path = checkpoint.rstrip("/") + "/" + STATE_FILE
    text = store.read_text(path)
    if text is None:
        return DeadlineState()
    try:
        return DeadlineState.from_json(text)
    except ValueError as exc:
        log.warning("%s: %s; the deadline counters start over", path, exc)
        return DeadlineState()


def stored_by_deadline(spark: SparkSession, output: str, day: dt.date, by: dt.datetime) -> int:
    """Distinct measures of ``day`` under ``output`` (which holds files) stored
    (``ingested_at``) at ``by`` at the latest."""
    micros = round(by.timestamp() * 1_000_000)
    return (
        spark.read.schema(VALID_SCHEMA)
        .parquet(output)
        .where(F.col("measure_date") == F.lit(day))
        .where(F.unix_micros("ingested_at") <= F.lit(micros))
        .select(*MEASURE_KEY_COLUMNS)
        .distinct()
        .count()
    )


class DeadlineWatch:
    """See the module docstring. ``expected(day)``: None while it cannot be known (the HES not
    answering); ``stored(day, deadline)``: raises when storage cannot be read."""

    def __init__(
        self,
        rule: DeadlineRule,
        first_day: dt.date,
        state: DeadlineState,
        expected: Callable[[dt.date], int | None],
        stored: Callable[[dt.date, dt.datetime], int],
        save: Callable[[DeadlineState], None],
        publish: Callable[[DeadlineState, int], None],
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._rule = rule
        self._first = first_day
        self._state = state
        self._expected = expected
        self._stored = stored
        self._save = save
        self._publish = publish
        self._interval = interval
        self._clock = clock
        self._failing: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vigia-deadline", daemon=True)

    @property
    def state(self) -> DeadlineState:
        return self._state

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def tick(self) -> None:
        """Count the days due now (one round)."""
        now = dt.datetime.fromtimestamp(self._clock(), self._rule.zone)
        due = due_days(self._rule, now, self._state, self._first)
        problem: str | None = None
        for day in due:
            deadline = self._rule.deadline(day)
            try:
                expected = self._expected(day)
                if expected is None:
                    problem = f"the expected measures of {day} are not known yet"
                    break
                stored = self._stored(day, deadline)
                state = self._state.counted(day, expected, stored)
                self._save(state)
            except Exception as exc:  # the next round tries again; the ingest goes on
                problem = f"{day} could not be counted ({type(exc).__name__}: {exc})"[:300]
                break
            self._state = state
            log.info(
                "%s is due (deadline %s): %d of %d expected measures stored by then",
                day,
                deadline.isoformat(),
                min(stored, expected),
                expected,
            )
        overdue = len(due_days(self._rule, now, self._state, self._first))
        self._publish(self._state, overdue)
        if problem != self._failing:
            if problem is not None:
                log.warning("deadline counters: %s; trying again in %g s", problem, self._interval)
            else:
                log.info("deadline counters: every due day counted")
        self._failing = problem

    def _run(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self._interval)
