"""`vigia-ingest repair`: bring a day the completeness check found short back from the HES.

The HES still holds every row of the day. The repair asks Debezium's connector to read the day's
rows again (an incremental snapshot of ``hes.measure`` filtered on ``measure_date``), so they
travel the normal leg: Kafka topic ``measure``, the running ingest job, Parquet. The job stores
a re-read row only when its measure key is not stored yet (`ingest.redelivery`): the rows the
day lacked are added, the others are not stored twice.

How the signal reaches the connector: a row in the HES's signalling table ``hes.debezium_signal``
(Debezium's ``source`` channel). That table is needed whatever the channel: Debezium's MySQL
connector orders each snapshot chunk against the binlog by writing open / close watermarks into
it, and its read-only alternative (``read.only=true``) works from MySQL GTID sets, which MariaDB
does not have. So the signal goes the same way, with a user allowed that INSERT alone.

When is the day repaired? When the completeness check against the HES finds nothing missing: the
data in Parquet is what matters, whatever the connector's snapshot state says. The check runs
every poll interval until then or until the timeout.

Cost on the HES: Debezium reads the day in chunks of ``incremental.snapshot.chunk.size`` rows
(32,768 in docker/connect/) in primary-key order, (meter, measure_date, …), with the date as a
filter: each chunk walks the key range of its meters across every day the table holds, so a
repair reads about as many index entries as the table has rows between its first and last meter,
in short transactions, and writes two watermark rows per chunk into the signalling table.

How long: the connector's speed decides it, ≈8,400 rows/s into Kafka for a day of 10,000 meters
on two shared cores (docs/performance.md, "Repairing a day"), with the chunk, queue and batch
sizes and the producer's batching and compression that docker/connect/ sets for it.

This module is the logic, without I/O: the signal, the decision, the wait. `ingest.repair_cli`
wires it to the HES, Kafka Connect and Spark.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final

from vigia.ingest.completeness import CompletenessReport

EXIT_REPAIRED: Final = 0
EXIT_STILL_SHORT: Final = 1
EXIT_INVALID: Final = 2

SIGNAL_TYPE: Final = "execute-snapshot"
DATA_COLLECTION: Final = "hes.measure"


@dataclass(frozen=True)
class Signal:
    """One row of the signalling table: (id, type, data)."""

    id: str
    type: str
    data: str


def snapshot_signal(measure_date: dt.date, signal_id: str | None = None) -> Signal:
    """An incremental snapshot of ``hes.measure`` restricted to one measure date. The date is a
    `datetime.date`, so the filter's text can hold nothing but ``YYYY-MM-DD``."""
    data = {
        "type": "incremental",
        "data-collections": [DATA_COLLECTION],
        "additional-conditions": [
            {
                "data-collection": DATA_COLLECTION,
                "filter": f"measure_date = '{measure_date.isoformat()}'",
            }
        ],
    }
    return Signal(
        id=signal_id or f"vigia-repair-{measure_date.isoformat()}-{uuid.uuid4().hex[:16]}",
        type=SIGNAL_TYPE,
        data=json.dumps(data, separators=(",", ":")),
    )


class Action(Enum):
    NOTHING_TO_DO = "nothing to do"
    NOTHING_IN_HES = "nothing in the HES"
    DUPLICATES_ONLY = "duplicates only"
    REPAIR = "repair"


def decide(report: CompletenessReport, force: bool = False) -> Action:
    """What to do about a day, from its completeness against the HES."""
    if report.expected == 0:
        return Action.NOTHING_IN_HES
    if force or report.missing:
        return Action.REPAIR
    if report.duplicates:
        return Action.DUPLICATES_ONLY
    return Action.NOTHING_TO_DO


def explain(action: Action, report: CompletenessReport) -> str:
    """The sentence for an action that sends nothing."""
    day = report.measure_date.isoformat()
    if action is Action.NOTHING_IN_HES:
        return f"the HES holds no measure for {day}: there is nothing to bring back"
    if action is Action.DUPLICATES_ONLY:
        return (
            f"{day} misses nothing but stores {report.duplicates:,} measures twice: a repair "
            "brings back missing measures only, it does not remove stored ones"
        )
    return f"{day} is complete ({report.summary()}): nothing sent (--force to repair anyway)"


@dataclass(frozen=True)
class Waited:
    report: CompletenessReport
    seconds: float
    timed_out: bool


def wait_until_repaired(
    check: Callable[[], CompletenessReport],
    timeout: float,
    poll_interval: float,
    on_report: Callable[[CompletenessReport], None] = lambda _: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Waited:
    """Check until nothing is missing or ``timeout`` seconds have passed (one last check at the
    deadline); ``on_report`` sees every report (the progress bar)."""
    began = clock()
    deadline = began + timeout
    while True:
        report = check()
        on_report(report)
        now = clock()
        if report.missing == 0:
            return Waited(report, now - began, timed_out=False)
        if now >= deadline:
            return Waited(report, now - began, timed_out=True)
        sleep(min(poll_interval, deadline - now))


def outcome(waited: Waited, timeout: float) -> tuple[int, str]:
    """Exit code and closing sentence of a repair."""
    report = waited.report
    day = report.measure_date.isoformat()
    if report.complete:
        return EXIT_REPAIRED, f"{day} repaired in {waited.seconds:.0f} s: {report.summary()}"
    if report.missing == 0:
        return EXIT_STILL_SHORT, (
            f"{day} misses nothing after {waited.seconds:.0f} s but stores "
            f"{report.duplicates:,} measures twice: {report.summary()}"
        )
    return EXIT_STILL_SHORT, (
        f"{day} still short after {timeout:g} s: {report.summary()}. The connector may still be "
        "reading the day (a large day takes minutes), or the ingest job is not running: check "
        "both, then run the repair again"
    )
