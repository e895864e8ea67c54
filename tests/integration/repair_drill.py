"""What the repair drills share (test_ingest_repair_real_stack.py, and the retention drill in
test_ingest_retention_repair_real_stack.py): a day of their own written through the harness's HES,
the ingest job's config on topic `measure` from the drill's start, the completeness check against
the HES, and `vigia-ingest repair --date D` run while the job streams, as in production."""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.integration.hes_leg import Key, stored_keys, topic_ends
from tests.realstack.targets import ConnectTarget, HesTarget
from vigia.ingest.cli import build_parser
from vigia.ingest.completeness import main_completeness
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, JobError, preflight_kafka
from vigia.ingest.kafka_source.offsets import to_json
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.repair import EXIT_REPAIRED
from vigia.ingest.repair_cli import SIGNAL_DSN_ENV, main_repair
from vigia.ingest.schema import MAGNITUDES

log = logging.getLogger(__name__)
TOPIC = "measure"
DEADLINE = 300  # any one condition, on a loaded machine


class Timeline:
    def __init__(self) -> None:
        self.began = time.monotonic()
        self.moments: list[tuple[float, str]] = []

    def mark(self, what: str) -> float:
        at = time.monotonic() - self.began
        self.moments.append((at, what))
        log.info("%6.1f s  %s", at, what)
        return at

    def __str__(self) -> str:
        return "\n".join(f"{at:7.1f} s  {what}" for at, what in self.moments)


@dataclass(frozen=True)
class Day:
    """A day of its own (no other drill of the session writes it), `meters` × 96 periods."""

    prefix: str
    day: dt.date
    keys: list[Key]
    run_id: str

    @classmethod
    def new(cls, meters: int, tag: str) -> Day:
        run_id = uuid.uuid4().hex[:6]
        prefix = f"{tag}{run_id}-"
        day = dt.date(2001, 1, 1) + dt.timedelta(days=random.randrange(7000))
        keys = [
            (f"{prefix}{m:04d}", day.isoformat(), p, MAGNITUDES[0])
            for m in range(meters)
            for p in range(1, 97)
        ]
        return cls(prefix, day, keys, run_id)


def job_config(bootstrap: str, options: dict[str, str], tmp_path: Path, group: str) -> IngestConfig:
    """Available-now runs from the topic's end now, going on past deleted records."""
    return IngestConfig(
        bootstrap_servers=bootstrap,
        kafka_options=options,
        topic=TOPIC,
        group_id=group,
        output=str(tmp_path / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        starting_offsets=json.dumps(to_json(topic_ends(bootstrap, options))),
        fail_on_data_loss=False,
        metrics_port=0,
        trigger_interval=2,
    )


def ingest(session: SparkSession, config: IngestConfig) -> IngestJob:
    return IngestJob(session, config, IngestMetrics(config.query_name), preflight_kafka(config))


def completeness(
    session: SparkSession,
    day: Day,
    config: IngestConfig,
    hes: HesTarget,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, dict[str, Any]]:
    """`vigia-ingest completeness --date D --hes-dsn …`: its exit code and report."""
    args = build_parser().parse_args(
        ["completeness", "--date", day.day.isoformat(), "--output", config.output,
         "--hes-dsn", hes.dsn]
    )  # fmt: skip
    capsys.readouterr()
    code = main_completeness(args, session)
    return code, json.loads(capsys.readouterr().out)


def repair_while_streaming(
    session: SparkSession,
    day: Day,
    config: IngestConfig,
    connect: ConnectTarget,
    hes: HesTarget,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    timeline: Timeline,
) -> tuple[int, dict[str, Any], float]:
    """`vigia-ingest repair --date D` while the job streams: its exit code, its last report,
    and how long it took."""
    streaming = Supervised(lambda: ingest(session, replace(config, available_now=False)))
    thread = threading.Thread(target=streaming.run, name="ingest", daemon=True)
    thread.start()
    try:
        monkeypatch.setenv(SIGNAL_DSN_ENV, hes.signal_dsn)
        args = build_parser().parse_args(
            ["repair", "--date", day.day.isoformat(), "--output", config.output,
             "--hes-dsn", hes.dsn, "--connect-url", connect.url, "--poll-interval", "3",
             "--timeout", "300"]
        )  # fmt: skip
        capsys.readouterr()
        began = timeline.mark("vigia-ingest repair started")
        code = main_repair(args, session)
        ended = timeline.mark(f"vigia-ingest repair exited with {code}")
    finally:
        streaming.request_stop()
        thread.join(120)
    assert not thread.is_alive()
    for failure in streaming.failures:
        timeline.mark(f"the streaming job failed: {failure}")
    final = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return code, final, ended - began


class Supervised:
    """The streaming job as `vigia-stack` runs it: started again when it fails, here at most
    RESTARTS times. On a loaded machine a query can fail at its start because a Python worker
    did not connect back to Spark within Spark's fixed 10 s ("Python worker failed to connect
    back"); the job's checkpoint makes the restart harmless, as in production."""

    RESTARTS = 3

    def __init__(self, make: Callable[[], IngestJob]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._job: IngestJob | None = None
        self.failures: list[JobError] = []

    def run(self) -> None:
        while True:
            with self._lock:
                if self._stopping.is_set():
                    return
                self._job = self._make()
            try:
                self._job.run()
                return
            except JobError as exc:
                self.failures.append(exc)
                if len(self.failures) > self.RESTARTS:
                    raise
                self._stopping.wait(2)

    def request_stop(self) -> None:
        with self._lock:
            self._stopping.set()
            if self._job is not None:
                self._job.request_stop()


def assert_repaired(code: int, final: dict[str, Any], took: float, timeline: Timeline) -> None:
    """The repair's exit code and last report; when they fail, the message's first line (what CI's
    summary keeps) says what the repair saw, and the timeline follows."""
    repaired = final["complete"] and final["missing"] == 0 and final["duplicates"] == 0
    assert code == EXIT_REPAIRED and repaired, (
        f"vigia-ingest repair exited with {code} after {took:.0f} s, its last report {final}"
        f"\n{timeline}"
    )


def assert_each_once(config: IngestConfig, day: Day) -> None:
    """Every measure of the day in Parquet exactly once."""
    assert Counter(stored_keys(Path(config.output), day.prefix)) == Counter(
        dict.fromkeys(day.keys, 1)
    )
