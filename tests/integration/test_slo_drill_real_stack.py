"""The freshness SLO's alerts on the real stack: rows written to the harness's MariaDB HES, carried
by Connect/Debezium to topic ``measure``, stored by the ingest job (streaming, its /metrics
scraped every second by a real Prometheus running the rules `vigia-slo` generates from
tests/integration/slo_drill.yml, a 60-second threshold over a one-day window, every alert window
scaled to 1/28), alerts delivered by a real Alertmanager to a recording webhook receiver.

1. A slow leak: one row in 22 written with a timestamp two minutes old (the live cohort counts it
   late, 4.5 % of the budget's 1 %): DrillFreshnessSlowBurn tickets, DrillFreshnessFastBurn never
   goes pending.
2. A stall: the leak ends, the job's query is stopped for 90 s while rows keep coming, then
   started again; the catch-up stores the rows written meanwhile, the oldest of them late:
   DrillFreshnessFastBurn pages once, and resolves once the late batch leaves the short windows.

`pytest -s` prints both timelines (seconds since the drill began); docs/drills.md keeps them.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from tests.conftest import free_port
from tests.integration.hes_leg import insert, keys_of, stored_keys
from tests.integration.repair_drill import Timeline, job_config
from tests.monitoring.servers import (
    PromAPI,
    Receiver,
    derived_prometheus_config,
    fast_alertmanager_config,
    render_alertmanager_config,
    webhook_receiver,
)
from tests.realstack.targets import HesTarget, KafkaTarget
from tests.servers import MISSING, start_alertmanager, start_prometheus, wait_until
from vigia.common import kafka_config
from vigia.common.slo.cli import generate
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, preflight_kafka, serve_metrics
from vigia.ingest.metrics import IngestMetrics

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SPEC = Path(__file__).with_name("slo_drill.yml")
FAST, SLOW = "DrillFreshnessFastBurn", "DrillFreshnessSlowBurn"
ROWS_PER_SECOND = 21  # on time, in one transaction a second
LEAK_EVERY = 22  # in leak mode, one more row a second, stamped LATE_BY in the past
LATE_BY = 120  # twice the drill SLO's 60-second threshold
STALL = 90  # the job stopped: the rows of its first 30 s are late when the catch-up stores them
LEAK_AFTER_TICKET = 30  # the leak goes on this long after the ticket, and still no page
DEADLINE = 240  # for any one condition, on a machine with a load of 10 and more
RATIO_64S = 'slo:sli_error:ratio_rate64s{slo="drill-freshness"}'  # the 30m window scaled to 1/28
FAST_SEL = f'{{alertname="{FAST}"}}'


class Writer:
    """Rows into the HES with the writer user, every second, on its own thread."""

    def __init__(self, writer_dsn: str, prefix: str) -> None:
        self.dsn, self.prefix = writer_dsn, prefix
        self.written = 0
        self.leaking = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hes-writer", daemon=True)
        self.error: BaseException | None = None

    def _write(self, count: int, stamp: int) -> None:
        insert(self.dsn, keys_of(self.prefix, self.written, count, stamp), stamp)
        self.written += count

    def _run(self) -> None:
        try:
            while not self._stop.wait(1):
                now = int(time.time())
                self._write(ROWS_PER_SECOND, now)
                if self.leaking.is_set():
                    self._write(LEAK_EVERY - ROWS_PER_SECOND, now - LATE_BY)
        except BaseException as error:  # the test asserts it is None
            self.error = error

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)


class RunningJob:
    """The ingest job's streaming query on its own thread; its /metrics served apart, as the
    CLI serves them, so that Prometheus keeps one series across the query's stop and start."""

    def __init__(self, session: SparkSession, config: IngestConfig) -> None:
        self.session, self.config = session, config
        self.job: IngestJob | None = None
        self.thread: threading.Thread | None = None

    def start(self, metrics: IngestMetrics) -> None:
        self.job = IngestJob(self.session, self.config, metrics, preflight_kafka(self.config))
        self.thread = threading.Thread(target=self.job.run, name="ingest", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        assert self.job is not None and self.thread is not None
        self.job.request_stop()
        self.thread.join(120)
        assert not self.thread.is_alive(), "the ingest job did not stop"


def _stored(output: Path, prefix: str) -> int:
    """Rows of the run in Parquet; 0 while a batch's files are being written."""
    try:
        return sum(stored_keys(output, prefix).values())
    except pa.ArrowException:
        return 0


def _firing(prom: PromAPI, alert: str) -> bool:
    return bool(prom.instant(f'ALERTS{{alertname="{alert}", alertstate="firing"}}'))


def _ever(prom: PromAPI, alert: str, since: float) -> list[dict[str, Any]]:
    """ALERTS samples of `alert`, pending or firing, since `since` (epoch seconds)."""
    seconds = max(1, int(time.time() - since) + 1)
    return prom.instant(f'max_over_time(ALERTS{{alertname="{alert}"}}[{seconds}s])')


def _notifications(receiver: Receiver, path: str, alert: str) -> list[str]:
    """The status of each notification about `alert` received on `path`, in order."""
    return [
        payload["status"]
        for payload in receiver.payloads(path)
        if any(a["labels"].get("alertname") == alert for a in payload["alerts"])
    ]


@pytest.fixture
def monitoring(tmp_path: Path) -> Iterator[tuple[PromAPI, Receiver, int]]:
    """Prometheus with the drill's generated rules, scraping the job's port every second, and
    Alertmanager with the repository's routing and second-scale timers: (API, receiver, port)."""
    port = free_port()
    rules = tmp_path / "slo-drill.yml"
    rules.write_text(generate(SPEC), encoding="utf-8")
    with webhook_receiver() as receiver:
        rendered = render_alertmanager_config(
            tmp_path / "alertmanager-rendered.yml", receiver.url("pager"), receiver.url("ticket")
        )
        am = start_alertmanager(
            fast_alertmanager_config(rendered, tmp_path / "alertmanager.yml"),
            tmp_path / "am-data",
            tmp_path / "alertmanager.log",
        )
        try:
            config = derived_prometheus_config(
                tmp_path, {"vigia-ingest": [f"127.0.0.1:{port}"]}, [rules], f"127.0.0.1:{am.port}"
            )
            prom = start_prometheus(config, tmp_path / "prom-data", tmp_path / "prometheus.log")
            try:
                yield PromAPI(prom.url), receiver, port
            finally:
                prom.stop()
        finally:
            am.stop()


@pytest.mark.skipif(bool(MISSING), reason=f"the drill alerts through them; missing: {MISSING}")
@pytest.mark.timeout(900)
def test_a_slow_leak_tickets_and_a_stall_pages_once_then_resolves(
    kafka_target: KafkaTarget,
    hes_target: HesTarget,
    monitoring: tuple[PromAPI, Receiver, int],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    if not hes_target.writer_dsn:
        pytest.skip("VIGIA_TEST_HES_WRITER_DSN is not set: nothing may insert into the HES")
    prom, receiver, port = monitoring
    session: SparkSession = request.getfixturevalue("spark")
    run_id = dt.datetime.now(dt.UTC).strftime("%H%M%S")
    prefix = f"slo{run_id}-"
    base = job_config(
        kafka_target.bootstrap, kafka_config.from_env(), tmp_path, f"vigia-it-slo-{run_id}"
    )
    config = replace(base, available_now=False, metrics_port=port, trigger_interval=2)
    metrics = IngestMetrics(config.query_name)
    server = serve_metrics(config, metrics)
    assert server is not None
    job = RunningJob(session, config)
    timeline = Timeline()
    try:
        job.start(metrics)
        wait_until(lambda: prom.instant('up{job="vigia-ingest"} == 1'), DEADLINE, "a scrape")
        with Writer(hes_target.writer_dsn, prefix) as writer:
            # A fresh query's first batches are slow on a busy machine (late, by the drill's
            # threshold): the drill starts once a minute of rows has been stored on time.
            wait_until(
                lambda: prom.instant(f"{RATIO_64S} == 0") and not prom.instant(f"ALERTS{FAST_SEL}"),
                DEADLINE,
                "a minute of on-time storing",
                1,
            )
            timeline.mark("warm: a minute of rows stored on time, no page pending")

            # 1. The slow leak.
            writer.leaking.set()
            leak_began = time.time()
            timeline.mark(f"leak: 1 row in {LEAK_EVERY} written {LATE_BY} s old")
            wait_until(lambda: _firing(prom, SLOW), DEADLINE, f"{SLOW} firing", 1)
            timeline.mark(f"{SLOW} firing")
            wait_until(lambda: _notifications(receiver, "ticket", SLOW), DEADLINE, "the ticket", 1)
            timeline.mark(f"{SLOW} delivered to the ticket receiver")
            time.sleep(LEAK_AFTER_TICKET)  # the observation window, not a proof
            assert not _ever(prom, FAST, leak_began), f"{FAST} went pending on a slow leak"
            assert not _notifications(receiver, "pager", FAST)
            timeline.mark(f"leak observed {LEAK_AFTER_TICKET} s more: {FAST} never pending")
            writer.leaking.clear()

            # 2. The stall.
            job.stop()
            timeline.mark("job stopped")
            time.sleep(STALL)  # the incident's length, not a proof
            backlog = writer.written
            job.start(metrics)
            timeline.mark(f"job started again ({backlog} rows written so far)")
            output = Path(config.output)
            wait_until(
                lambda: _stored(output, prefix) >= backlog,
                DEADLINE,
                "the catch-up",
                1,
            )
            timeline.mark("caught up: every row written during the stall stored")
            wait_until(lambda: _firing(prom, FAST), DEADLINE, f"{FAST} firing", 0.5)
            timeline.mark(f"{FAST} firing")
            wait_until(lambda: _notifications(receiver, "pager", FAST), DEADLINE, "the page", 0.5)
            timeline.mark(f"{FAST} delivered to the pager")
            wait_until(lambda: not _firing(prom, FAST), DEADLINE, f"{FAST} to resolve", 0.5)
            timeline.mark(f"{FAST} resolved in Prometheus")
            wait_until(
                lambda: "resolved" in _notifications(receiver, "pager", FAST),
                DEADLINE,
                "the page's resolution",
                0.5,
            )
            timeline.mark(f"{FAST} resolution delivered to the pager")
        assert writer.error is None, writer.error
        assert _notifications(receiver, "pager", FAST) == ["firing", "resolved"]
    finally:
        if job.thread is not None and job.thread.is_alive():
            job.stop()
        server.shutdown()
        print(f"\nSLO drill (slow leak, then stall):\n{timeline}")
