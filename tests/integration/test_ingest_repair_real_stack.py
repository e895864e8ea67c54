"""`vigia-ingest repair` on the real stack: a day with a real gap comes back whole from the HES.

The drill, on the harness's MariaDB HES, Connect worker (connector hes-measure as registered from
docker/connect/) and Kafka cluster: write the first half of a day's rows into the HES and ingest
them; write the second half, and once the connector has carried it to topic ``measure``, delete
those records from the topic before the job reads them (what Kafka retention or a purge does);
the job, told to go on (--no-fail-on-data-loss), stores the first half only, and the completeness
check against the HES finds the day short. Then, with the job streaming, `vigia-ingest repair
--date D` has Debezium re-read the whole day from the HES: the day is complete, and each measure
is stored exactly once although every measure of the day went through the topic a second time.

The timeline (seconds since the drill began) and the repair's duration are printed (pytest -s).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from tests.exporter.live import wait_for
from tests.integration.hes_leg import Key, insert, stored_keys, topic_ends
from tests.realstack.targets import ConnectTarget, HesTarget, KafkaTarget
from vigia.common import kafka_config
from vigia.ingest.cli import build_parser
from vigia.ingest.completeness import EXIT_INCOMPLETE, main_completeness
from vigia.ingest.config import IngestConfig
from vigia.ingest.job import IngestJob, preflight_kafka
from vigia.ingest.kafka_source.offsets import to_json
from vigia.ingest.metrics import IngestMetrics
from vigia.ingest.repair import EXIT_REPAIRED
from vigia.ingest.repair_cli import SIGNAL_DSN_ENV, main_repair
from vigia.ingest.schema import MAGNITUDES

pytestmark = [pytest.mark.integration, pytest.mark.spark]

log = logging.getLogger(__name__)
TOPIC = "measure"
# 96 periods each, one magnitude: 768 rows, half of them lost. VIGIA_TEST_REPAIR_METERS=1000 makes
# the drill a measurement of a larger day's repair (96,000 rows).
METERS = int(os.environ.get("VIGIA_TEST_REPAIR_METERS", "8"))
DEADLINE = 180


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


def _delete_up_to(
    bootstrap: str, options: dict[str, str], ends: dict[tuple[str, int], int]
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **options})
    futures = admin.delete_records(
        [TopicPartition(topic, partition, offset) for (topic, partition), offset in ends.items()]
    )
    for future in futures.values():
        future.result(timeout=60)


def test_a_day_with_a_real_gap_is_repaired_from_the_hes_and_stored_once(
    kafka_target: KafkaTarget,
    connect_target: ConnectTarget,
    hes_target: HesTarget,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if not (hes_target.writer_dsn and hes_target.signal_dsn):
        pytest.skip("VIGIA_TEST_HES_WRITER_DSN and VIGIA_TEST_HES_SIGNAL_DSN are not both set")
    session: SparkSession = request.getfixturevalue("spark")
    bootstrap, options = kafka_target.bootstrap, kafka_config.from_env()
    run_id = uuid.uuid4().hex[:6]
    prefix = f"rp{run_id}-"
    # A day of its own: no other drill of the session writes it.
    day = dt.date(2001, 1, 1) + dt.timedelta(days=random.randrange(7000))
    keys: list[Key] = [
        (f"{prefix}{m:04d}", day.isoformat(), p, MAGNITUDES[0])
        for m in range(METERS)
        for p in range(1, 97)
    ]
    half = len(keys) // 2
    timeline = Timeline()
    start = topic_ends(bootstrap, options)
    config = IngestConfig(
        bootstrap_servers=bootstrap,
        kafka_options=options,
        topic=TOPIC,
        group_id=f"vigia-it-repair-{run_id}",
        output=str(tmp_path / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        starting_offsets=json.dumps(to_json(start)),
        fail_on_data_loss=False,
        metrics_port=0,
        trigger_interval=2,
    )

    def ingest(config: IngestConfig) -> IngestJob:
        return IngestJob(session, config, IngestMetrics(config.query_name), preflight_kafka(config))

    def on_topic() -> int:
        return sum(topic_ends(bootstrap, options).values())

    insert(hes_target.writer_dsn, keys[:half], int(time.time()))
    wait_for(lambda: on_topic() >= sum(start.values()) + half, DEADLINE, "the first half")
    ingest(config).run()
    assert Counter(stored_keys(Path(config.output), prefix)) == Counter({k: 1 for k in keys[:half]})
    timeline.mark(f"first half ({half} rows) in the HES, the topic and Parquet")

    before_second = on_topic()
    insert(hes_target.writer_dsn, keys[half:], int(time.time()))
    wait_for(lambda: on_topic() >= before_second + half, DEADLINE, "the second half")
    timeline.mark(f"second half ({len(keys) - half} rows) in the HES and the topic")
    _delete_up_to(bootstrap, options, topic_ends(bootstrap, options))
    timeline.mark("the topic's records deleted before the job read them")
    ingest(config).run()
    assert set(stored_keys(Path(config.output), prefix)) == set(keys[:half])
    timeline.mark("the job went on past the deleted records")

    completeness = ["--date", day.isoformat(), "--output", config.output]
    hes = ["--hes-dsn", hes_target.dsn]
    args = build_parser().parse_args(["completeness", *completeness, *hes])
    capsys.readouterr()
    assert main_completeness(args, session) == EXIT_INCOMPLETE
    report = json.loads(capsys.readouterr().out)
    assert (report["expected"], report["missing"]) == (len(keys), len(keys) - half)
    timeline.mark(f"completeness: {report['missing']} missing")

    # The job streams, as in production, while the repair runs.
    streaming = ingest(replace(config, available_now=False))
    thread = threading.Thread(target=streaming.run, name="ingest", daemon=True)
    thread.start()
    try:
        monkeypatch.setenv(SIGNAL_DSN_ENV, hes_target.signal_dsn)
        repair = ["--connect-url", connect_target.url, "--poll-interval", "3", "--timeout", "600"]
        args = build_parser().parse_args(["repair", *completeness, *hes, *repair])
        before_repair = on_topic()
        began = timeline.mark("vigia-ingest repair started")
        code = main_repair(args, session)
        ended = timeline.mark(f"vigia-ingest repair exited with {code}")
    finally:
        streaming.request_stop()
        thread.join(120)
    assert not thread.is_alive()
    assert code == EXIT_REPAIRED
    final = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert final["complete"] and final["missing"] == 0 and final["duplicates"] == 0

    # Every measure once, although the whole day went through the topic again.
    assert Counter(stored_keys(Path(config.output), prefix)) == Counter({k: 1 for k in keys})
    assert on_topic() - before_repair >= len(keys)
    args = build_parser().parse_args(["completeness", *completeness, *hes])
    assert main_completeness(args, session) == 0
    timeline.mark("completeness: the day complete, each measure once")
    print(f"\nrepair drill ({len(keys)} rows, {len(keys) - half} lost):\n{timeline}")
    print(f"repair of {day}: {ended - began:.1f} s")
