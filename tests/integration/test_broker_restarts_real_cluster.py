"""Brokers stopped under the exporter and the ingest job on a real cluster (issue 20 §0, §1,
issue 10 §1: the exporter; issue 14: the ingest job).

- Rolling restarts, one for each: every broker stopped in turn, started again once the exporter
  reports it down (then 2 s) or after 5 s, the next one once it is back (in the exporter's view
  with its log dirs; or with every partition of the job's topic in sync). Apart, because on two
  cores the job's Spark and the exporter's collections slow each other's brokers' restarts: under
  one rolling restart together they took longer than the two one after the other.
- The active KRaft controller (combined mode) stopped for 60 s during the job's second batch of an
  available-now run in 30,000-row batches, with the exporter watching: the controller moves, the
  broker is reported down and asked nothing, and it comes back. One stop serves both.

The exporter (tests/integration/exporter_watch.py) says `vigia_exporter_up` 1 in every scrape
throughout; the job (tests/integration/ingest_chaos.py) exits 0 with every produced measure stored
once and its group's committed offsets at the topic's end offsets. Needs `broker_control` (the
harness's cluster, or VIGIA_TEST_KAFKA_BROKER_STOP / _START) and `secured_target`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.exporter.exposition import value
from tests.exporter.live import Running, wait_for
from tests.ingest.conftest import backfill, utc_day
from tests.integration.exporter_watch import (
    COLLECTION_INTERVAL,
    DEADLINE,
    Watch,
    cluster_doc,
    down,
    groups,  # noqa: F401
    probe_ok,
    stop_and_start,
    watched,  # noqa: F401
)
from tests.integration.ingest_chaos import (
    Brokers,
    Chaos,
    brokers,  # noqa: F401
    check_stored_once_and_committed,
    job_config,
    run_through,
)
from tests.integration.test_ingest_real_cluster import topic  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.spark]

METERS = 800  # 307,200 measures: 11 batches of 30,000 rows
# 153,600 measures, 31 batches of 5,000 rows: the job still runs when the rolling restart's last
# broker is stopped (measured 2026-11-27: 3 of 3 stopped while the job ran, 191 s in all; 800
# meters took 382 s).
ROLL_METERS = 400


@pytest.mark.timeout(900)  # three brokers back in turn: on CI's machine up to two minutes each
def test_up_stays_1_through_a_rolling_restart_and_the_probe_covers_every_broker_after(
    watched: tuple[Running, Watch],  # noqa: F811
    brokers: Brokers,  # noqa: F811
) -> None:
    exporter, watch = watched
    for broker in brokers.ids():
        stop_and_start(exporter, brokers, broker, 2)
    # Each restart moved its probe partition's leader away; the probe elects them back.
    wait_for(
        lambda: (
            {c["broker"] for c in cluster_doc(exporter)["probe"]["coverage"] if c["covered"]}
            == {1, 2, 3}
        ),
        DEADLINE,
        "every broker leading a probe partition again",
    )
    ok = {b: probe_ok(exporter, b) for b in (1, 2, 3)}
    wait_for(
        lambda: all(probe_ok(exporter, b) >= ok[b] + 5 for b in ok),
        DEADLINE,
        "probes ok through every broker again",
    )
    log = exporter.log_text()
    assert "handed back to their preferred leaders" in log, log
    watch.assert_up_throughout(exporter)


@pytest.mark.timeout(900)  # three brokers back in turn: on CI's machine up to two minutes each
def test_the_job_rides_through_a_rolling_restart_of_every_broker(
    brokers: Brokers,  # noqa: F811
    topic: str,  # noqa: F811
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    session: SparkSession = request.getfixturevalue("spark")
    manifest = backfill(
        brokers.bootstrap_servers,
        tmp_path / "m.json",
        day=utc_day(1),
        meters=ROLL_METERS,
        topic=topic,
    )
    config = job_config(brokers.bootstrap_servers, topic, tmp_path, batch_rows=5_000)

    def roll() -> None:
        for broker in brokers.ids():
            brokers.stop(broker)
            time.sleep(5)  # a restart, not an outage: the 60 s stop is the other test
            brokers.start(broker)
            brokers.wait_in_sync(topic, broker)

    chaos = Chaos(tmp_path / "checkpoint", 1, roll)
    ended = run_through(session, config, chaos, brokers)
    stops = [at for at, what, _ in brokers.events if what == "stop"]
    print(f"{sum(at < ended for at in stops)} of {len(stops)} brokers stopped while the job ran")
    check_stored_once_and_committed(config, manifest.valid_total)


@pytest.mark.timeout(900)  # a broker's return took two minutes on CI's machine
def test_the_active_controller_stopped_60_s_under_the_exporter_and_the_job(
    watched: tuple[Running, Watch],  # noqa: F811
    brokers: Brokers,  # noqa: F811
    topic: str,  # noqa: F811
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    exporter, watch = watched
    session: SparkSession = request.getfixturevalue("spark")
    manifest = backfill(
        brokers.bootstrap_servers, tmp_path / "m.json", day=utc_day(1), meters=METERS, topic=topic
    )
    config = job_config(brokers.bootstrap_servers, topic, tmp_path, batch_rows=30_000)
    doc = cluster_doc(exporter)
    assert doc["cluster"]["controller_source"] == "quorum"
    controller = doc["cluster"]["controller_id"]
    online = sum(b["online"] for b in doc["brokers"])
    led = brokers.partitions_led(topic, controller)
    assert led > 0, f"the controller, broker {controller}, leads no partition the job reads"

    def stop_for_60_s() -> None:
        brokers.stop(controller)
        try:
            stopped = time.monotonic()
            wait_for(
                lambda: cluster_doc(exporter)["cluster"]["controller_id"] not in (None, controller),
                DEADLINE,
                f"a controller other than {controller}",
            )
            found = wait_for(
                lambda: down(exporter, controller), DEADLINE, f"broker {controller} reported down"
            )
            assert isinstance(found, dict)
            assert value(found, "kafka_brokers") == online - 1
            # While it stays down, collections keep succeeding: it is asked nothing.
            errors = value(found, "vigia_exporter_collection_errors_total", phase="log_dirs")
            time.sleep(max(0.0, 60 - (time.monotonic() - stopped)))
            assert down(exporter, controller) is not None
            still = exporter.metrics()
            assert (
                value(still, "vigia_exporter_collection_errors_total", phase="log_dirs") == errors
            )
            (entry,) = [b for b in cluster_doc(exporter)["brokers"] if b["id"] == controller]
            assert (entry["online"], entry["log_dirs_error"]) == (False, None)
        finally:
            brokers.start(controller)

    chaos = Chaos(tmp_path / "checkpoint", 1, stop_for_60_s)
    run_through(session, config, chaos, brokers)
    check_stored_once_and_committed(config, manifest.valid_total)
    print(f"broker {controller}, the active controller, led {led} of the job's partitions")

    wait_for(
        lambda: value(exporter.metrics(), "kafka_broker_up", broker=str(controller)) == 1,
        DEADLINE,
        f"node {controller} back",
    )
    time.sleep(10 * COLLECTION_INTERVAL)  # "and again for minutes after node 1 returned"
    watch.assert_up_throughout(exporter)
    log = exporter.log_text()
    assert log.count(f"broker {controller} is down") == 1, log
    assert log.count(f"broker {controller} is back in the metadata") == 1, log
    assert " ERROR " not in log, log
    assert "blocking the event loop" not in log
