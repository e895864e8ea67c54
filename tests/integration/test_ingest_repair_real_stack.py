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

import os
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from tests.exporter.live import wait_for
from tests.integration.hes_leg import insert, stored_keys, topic_ends
from tests.integration.repair_drill import (
    DEADLINE,
    Day,
    Timeline,
    assert_each_once,
    assert_repaired,
    completeness,
    ingest,
    job_config,
    repair_while_streaming,
)
from tests.realstack.targets import ConnectTarget, HesTarget, KafkaTarget
from vigia.common import kafka_config
from vigia.ingest.completeness import EXIT_INCOMPLETE

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# 96 periods each, one magnitude: 768 rows, half of them lost. VIGIA_TEST_REPAIR_METERS=1000 makes
# the drill a measurement of a larger day's repair (96,000 rows).
METERS = int(os.environ.get("VIGIA_TEST_REPAIR_METERS", "8"))


def _delete_up_to(
    bootstrap: str, options: dict[str, str], ends: dict[tuple[str, int], int]
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **options})
    # A minute was not enough on a loaded machine.
    futures = admin.delete_records(
        [TopicPartition(topic, partition, offset) for (topic, partition), offset in ends.items()],
        request_timeout=DEADLINE / 2,
        operation_timeout=DEADLINE / 2,
    )
    for future in futures.values():
        future.result(timeout=DEADLINE)


@pytest.mark.timeout(900)  # the job's start, the repair's 300 s and every wait, on a loaded machine
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
    day = Day.new(METERS, "rp")
    keys, half = day.keys, len(day.keys) // 2
    timeline = Timeline()
    start = topic_ends(bootstrap, options)
    config = job_config(bootstrap, options, tmp_path, f"vigia-it-repair-{day.run_id}")

    def on_topic() -> int:
        return sum(topic_ends(bootstrap, options).values())

    insert(hes_target.writer_dsn, keys[:half], int(time.time()))
    wait_for(lambda: on_topic() >= sum(start.values()) + half, DEADLINE, "the first half")
    ingest(session, config).run()
    assert stored_keys(Path(config.output), day.prefix) == Counter(dict.fromkeys(keys[:half], 1))
    timeline.mark(f"first half ({half} rows) in the HES, the topic and Parquet")

    before_second = on_topic()
    insert(hes_target.writer_dsn, keys[half:], int(time.time()))
    wait_for(lambda: on_topic() >= before_second + half, DEADLINE, "the second half")
    timeline.mark(f"second half ({len(keys) - half} rows) in the HES and the topic")
    _delete_up_to(bootstrap, options, topic_ends(bootstrap, options))
    timeline.mark("the topic's records deleted before the job read them")
    ingest(session, config).run()
    assert set(stored_keys(Path(config.output), day.prefix)) == set(keys[:half])
    timeline.mark("the job went on past the deleted records")

    code, report = completeness(session, day, config, hes_target, capsys)
    assert code == EXIT_INCOMPLETE
    assert (report["expected"], report["missing"]) == (len(keys), len(keys) - half)
    timeline.mark(f"completeness: {report['missing']} missing")

    before_repair = on_topic()
    code, final, took = repair_while_streaming(
        session, day, config, connect_target, hes_target, monkeypatch, capsys, timeline
    )
    assert_repaired(code, final, took, timeline)

    # Every measure once, although the whole day went through the topic again.
    assert_each_once(config, day)
    assert on_topic() - before_repair >= len(keys)
    assert completeness(session, day, config, hes_target, capsys)[0] == 0
    timeline.mark("completeness: the day complete, each measure once")
    print(f"\nrepair drill ({len(keys)} rows, {len(keys) - half} lost):\n{timeline}")
    print(f"repair of {day.day}: {took:.1f} s")
