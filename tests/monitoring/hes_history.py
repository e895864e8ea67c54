"""The HES leg's part of the backfilled history (tests/monitoring/history.py): the recorded Kafka
Connect + Debezium states in a loop, through the same parts production uses.

- kafka-connect: the worker's recorded JMX scrapes (`worker-metrics.prom`) of the state the
  timeline is in; the rows-moved counters advance at `ROWS_PER_SECOND` while connected.
- mysqld: the recorded mysqld_exporter scrapes of the HES database (`mysql_up 0` while it is down).
- vigia-exporter: the exporter's real Connect collector fed the recorded REST answers in timeline
  order (restarts are counted as the exporter would) beside the flow verdict the source watch
  reaches (moving while the connector moves rows, stalled while the HES writes and it does not,
  unknown while the database is down), plus the HES families (`vigia_hes_*`,
  `vigia_pipeline_hop_lag_seconds`): the HES writes while its database is up, Kafka follows while
  the connector moves rows, and yesterday's HES count is the stored count ÷ 0.962 (the ingest
  feed's completeness), so HesDayIncomplete fires like IngestDayCompletenessLow.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from tests.connect.recorded import FIXTURES, answer
from tests.monitoring.history import EXPORTER, Sample, Target, parse_exposition
from vigia.exporter.collectors.loss_horizon import LossHorizonCollector
from vigia.exporter.collectors.text_format import text
from vigia.exporter.connect.collector import render_connect
from vigia.exporter.connect.model import ConnectView, parse_expanded, parse_root
from vigia.exporter.connect.stall import Pipeline
from vigia.exporter.connect.watcher import ConnectReport, next_report
from vigia.exporter.model import binlog, retention
from vigia.exporter.model.binlog import STATES
from vigia.exporter.model.loss_horizon import binlog_hop, checkpoint_hop, horizon, kafka_hop
from vigia.exporter.model.pipeline_flow import MOVING, STALLED, UNKNOWN, Flow
from vigia.exporter.model.schema_history import REASONS

CONNECT = Target("kafka-connect", "connect:9404")
MYSQLD = Target("mysqld", "hes:9104")
# Seconds each recorded state lasts in one cycle. The database is down for 12 minutes, long enough
# for the 5-minute lookback to let the failed task's Debezium series go (a backfill has no
# staleness markers).
TIMELINE = (
    ("healthy", 600.0),
    ("db-down-20s", 120.0),
    ("db-down-70s", 300.0),
    ("task-failed", 300.0),
    ("task-failed-db-back", 300.0),
    ("recovered", 480.0),
)
PERIOD = sum(hold for _, hold in TIMELINE)
BINLOG_EXPIRE_SECONDS = 604_800.0
BINLOG_BYTES_PER_SECOND = 20_000.0
DB_UP = {"healthy", "task-failed-db-back", "recovered"}
MOVING_ROWS = {"healthy", "recovered"}  # the connector moves rows to Kafka
ROWS_PER_SECOND = 2000.0
ADVANCING = {
    ("debezium_mysql_total_number_of_create_events_seen", 'context="streaming",server="cdc"'),
    ("kafka_connect_source_task_source_record_poll_total", 'connector="hes-measure",task="0"'),
    ("kafka_connect_source_task_source_record_write_total", 'connector="hes-measure",task="0"'),
}
YESTERDAY_COMPLETENESS = 0.962  # as IngestFeed reports it


def at(elapsed: float) -> tuple[str, float]:
    """The state the timeline is in and the seconds since that state began."""
    position = elapsed % PERIOD
    for state, hold in TIMELINE:
        if position < hold:
            return state, position
        position -= hold
    raise AssertionError("unreachable")


class HesFeed:
    def __init__(self, start: float, keep: Callable[[str], bool]) -> None:
        self._start = start
        states = [s for s, _ in TIMELINE]
        self._jmx = {s: self._scrape(s, "worker-metrics.prom", keep) for s in states}
        self._mysqld = {s: self._scrape(s, "mysqld-exporter.prom", keep) for s in states}
        self._report: ConnectReport | None = None
        self._hes_newest = start
        self._kafka_newest = start
        self._today = dt.datetime.fromtimestamp(start, dt.UTC).date()
        daily = ROWS_PER_SECOND * 86400
        self._yesterday_rows = round(daily / YESTERDAY_COMPLETENESS)

    @staticmethod
    def _scrape(state: str, name: str, keep: Callable[[str], bool]) -> list[Sample]:
        text = (FIXTURES / state / name).read_text(encoding="utf-8")
        return [s for s in parse_exposition(text) if keep(s.name)]

    def step(self, t: float) -> dict[Target, list[Sample]]:
        """Samples per target at `t` (the exporter's are to be added to its own)."""
        state, since = at(t - self._start)
        if state in DB_UP:
            self._hes_newest = t - 20.0
        if state in MOVING_ROWS:
            self._kafka_newest = self._hes_newest
        view = ConnectView(
            "connect",
            "http://connect:8083",
            t,
            worker=parse_root(answer(state, "rest-root.json")),
            connectors=parse_expanded(answer(state, "connectors-expand.json")),  # type: ignore[arg-type]
        )
        self._report = next_report(self._report, view)
        jmx = [
            Sample(s.name, s.labels, s.value + ROWS_PER_SECOND * since)
            if state in MOVING_ROWS and (s.name, s.labels) in ADVANCING
            else s
            for s in self._jmx[state]
        ]
        return {
            CONNECT: jmx,
            MYSQLD: self._mysqld[state],
            EXPORTER: self._exporter(t, state),
        }

    def _exporter(self, t: float, state: str) -> list[Sample]:
        day = self._today
        midnight = dt.datetime.combine(day, dt.time(), dt.UTC).timestamp()
        today_rows = ROWS_PER_SECOND * max(0.0, self._hes_newest - midnight)
        hes = [
            Sample("vigia_hes_up", "", 1.0 if state in DB_UP else 0.0),
            Sample("vigia_hes_newest_row_timestamp_seconds", "", self._hes_newest),
            Sample("vigia_hes_day_rows", f'measure_date="{day}"', today_rows),
            Sample(
                "vigia_hes_day_rows",
                f'measure_date="{day - dt.timedelta(days=1)}"',
                float(self._yesterday_rows),
            ),
            Sample(
                "vigia_pipeline_hop_lag_seconds",
                'hop="hes_to_kafka"',
                self._hes_newest - self._kafka_newest,
            ),
            Sample("vigia_pipeline_hop_lag_seconds", 'hop="kafka_to_store"', 45.0),
            *self._binlog(state, t - self._start),
            *self._horizon(state),
        ]
        assert self._report is not None
        verdict = UNKNOWN if state not in DB_UP else MOVING if state in MOVING_ROWS else STALLED
        pipeline = Pipeline("hes-measure", Flow(verdict, t))
        return hes + parse_exposition(render_connect([self._report], pipeline))

    @staticmethod
    def _binlog(state: str, elapsed: float) -> list[Sample]:
        """The binlog margin as the exporter serves it with a 7-day expiry: the whole expiry
        ahead while the connector reads the open file, unknown while the database is down; the
        schema history topic keeps everything. Never at risk, never lost. The HES writes
        BINLOG_BYTES_PER_SECOND."""
        c = 'connector="hes-measure"'
        current = "ok" if state in DB_UP else "unknown"
        written = Sample(
            "vigia_hes_binlog_written_bytes_total", "", BINLOG_BYTES_PER_SECOND * elapsed
        )
        expiry = Sample("vigia_hes_binlog_expire_seconds", "", BINLOG_EXPIRE_SECONDS)
        samples = [
            Sample("vigia_hes_binlog_retention_state", f'{c},state="{s}"', float(s == current))
            for s in STATES
        ]
        samples += [Sample("vigia_hes_binlog_losses_total", c, 0.0), written, expiry]
        if current == "ok":
            samples += [
                Sample(
                    "vigia_hes_binlog_retention_margin_seconds",
                    f'{c},limit="time",method="open_file"',
                    BINLOG_EXPIRE_SECONDS,
                ),
                Sample("vigia_hes_binlog_catchup_seconds", c, 0.0),
            ]
        history = 'connect="connect",connector="hes-measure",topic="cdc-schemahistory-hes"'
        samples += [
            Sample("vigia_hes_schema_history_unsafe", f'{history},reason="{r}"', 0.0)
            for r in REASONS
        ]
        return samples

    @staticmethod
    def _horizon(state: str) -> list[Sample]:
        """The leg's loss horizon through the exporter's model and collector: the binlog hop as
        above, the kafka hop a group a little behind on a week's retention, draining."""
        if state in DB_UP:
            margin = binlog.Margin(BINLOG_EXPIRE_SECONDS, binlog.TIME, binlog.OPEN_FILE)
            verdict = binlog.BinlogVerdict(
                0.0, binlog.OK, margin, 0, None, 0.0, 0, 0, 0, "mariadb-bin.000001"
            )
            source = binlog_hop(verdict, "")
        else:
            source = binlog_hop(None, "cannot list the HES's binlog")
        week = retention.Retention(604_800_000, None)
        estimate = retention.CatchUpEstimate(retention.CatchUp.DRAINING, 900, 20.0, True, 45.0)
        kafka = kafka_hop(
            week, retention.Margin(604_755.0, "time", "interpolated"), estimate, False, 0
        )
        leg = horizon([source, kafka, checkpoint_hop()])
        return parse_exposition(text(LossHorizonCollector(leg).collect()))
