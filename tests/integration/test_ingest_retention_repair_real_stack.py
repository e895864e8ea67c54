"""Kafka retention takes measures the stopped ingest job has not read, and `vigia-ingest repair
--date D` brings the day back from the HES: complete, each measure once in Parquet.

The drill, on the harness's MariaDB HES, Connect worker (connector hes-measure) and Kafka
cluster, with the exporter as a process watching the leg: the first half of a day's rows goes
through the HES, the topic and the job; the job stops; the second half reaches topic `measure`;
`retention.ms` on `measure` is then cut to RETENTION_S, so that Kafka (which checks every 5 s in
the harness) deletes every record older than that, the unread half included (each broker in its own
check: the drill waits for the last). Before the deletion the exporter's loss horizon names Kafka
with a margin counting down, at risk (the condition IngestRetentionAtRisk pages on; the page
itself, after its `for:`, is proven by test_retention_real_cluster.py); after it, the horizon is
`lost`. The job goes on past the gap (--no-fail-on-data-loss), completeness finds the day short,
and the repair, while the job streams, makes it complete. `retention.ms` is restored however the
drill ends. The timeline (seconds since the drill began) is printed (pytest -s).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from pyspark.sql import SparkSession

from tests.exporter.live import Running, exporter_process, wait_for
from tests.integration.hes_leg import (
    KAFKA,
    env,  # noqa: F401
    exporter_args,
    insert,
    stored_keys,
    topic_ends,
)
from tests.integration.repair_drill import (
    DEADLINE,
    TOPIC,
    Day,
    Timeline,
    assert_each_once,
    assert_repaired,
    completeness,
    ingest,
    job_config,
    repair_while_streaming,
)
from tests.realstack.targets import ConnectTarget, HesTarget
from vigia.common import kafka_config
from vigia.ingest.completeness import EXIT_INCOMPLETE
from vigia.ingest.kafka_source.adapter import KafkaAdmin

pytestmark = [pytest.mark.integration, pytest.mark.spark]

METERS = 4  # 384 rows, half of them taken by retention
# Long enough for the exporter to see the margin and the risk (a few 2 s collections), short
# enough to keep the drill's wait small.
RETENTION_S = 40


def _set_retention(admin: AdminClient, value: str | None) -> None:
    """`retention.ms` on topic measure: set, or back to the broker's default (None)."""
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        TOPIC,
        incremental_configs=[ConfigEntry("retention.ms", value or "", incremental_operation=op)],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


@pytest.fixture
def retention_restored(env: dict[str, str]) -> Iterator[AdminClient]:  # noqa: F811
    """The admin client that cuts `retention.ms`, and the topic's own setting put back after."""
    admin = AdminClient({"bootstrap.servers": env[KAFKA], **kafka_config.from_env()})
    resource = ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
    entry = admin.describe_configs([resource])[resource].result(timeout=30)["retention.ms"]
    # The source comes as the enum or its number, by client version.
    own = getattr(entry.source, "value", entry.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    try:
        yield admin
    finally:
        _set_retention(admin, entry.value if own else None)


def _log_start(bootstrap: str, options: dict[str, str]) -> dict[tuple[str, int], int]:
    admin = KafkaAdmin(bootstrap, options, "vigia-it-hes-unused", 30)
    try:
        return admin.topic_watermarks([TOPIC])[0]
    finally:
        admin.close()


def _horizon(exporter: Running) -> dict[str, Any]:
    return dict(exporter.get("/api/v1/cluster").json()["source"]["loss_horizon"])


def _kafka_hop(horizon: dict[str, Any]) -> dict[str, Any]:
    return dict(next(h for h in horizon["hops"] if h["hop"] == "kafka"))


@pytest.mark.timeout(900)  # the job's start, the repair's 300 s and every wait, on a loaded machine
def test_a_day_kafka_retention_took_is_repaired_from_the_hes_and_stored_once(
    env: dict[str, str],  # noqa: F811
    retention_restored: AdminClient,
    connect_target: ConnectTarget,
    hes_target: HesTarget,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if not hes_target.signal_dsn:
        pytest.skip("VIGIA_TEST_HES_SIGNAL_DSN is not set: the repair cannot signal Debezium")
    session: SparkSession = request.getfixturevalue("spark")
    bootstrap, options = env[KAFKA], kafka_config.from_env()
    day = Day.new(METERS, "rr")
    keys, half = day.keys, len(day.keys) // 2
    timeline = Timeline()
    start = topic_ends(bootstrap, options)
    group = f"vigia-it-retention-repair-{day.run_id}"
    config = job_config(bootstrap, options, tmp_path, group)

    def on_topic() -> int:
        return sum(topic_ends(bootstrap, options).values())

    insert(env["writer"], keys[:half], int(time.time()))
    wait_for(lambda: on_topic() >= sum(start.values()) + half, DEADLINE, "the first half")
    ingest(session, config).run()
    assert set(stored_keys(Path(config.output), day.prefix)) == set(keys[:half])
    timeline.mark(f"first half ({half} rows) in the HES, the topic and Parquet; the job stops")

    # Topic configs are a slow phase: read at every collection here, so the cut is seen at once.
    args = (*exporter_args(env, group), "--slow-phase-interval=0")
    with exporter_process(tmp_path / "exporter.log", *args) as exporter:
        committed = topic_ends(bootstrap, options)  # where the job stopped: it read them all
        insert(env["writer"], keys[half:], int(time.time()))
        wait_for(lambda: on_topic() >= sum(committed.values()) + half, DEADLINE, "the second half")
        unread = {
            tp: end for tp, end in topic_ends(bootstrap, options).items() if end > committed[tp]
        }
        timeline.mark(f"second half ({len(keys) - half} rows) in the HES and the topic, unread")
        _set_retention(retention_restored, str(RETENTION_S * 1000))
        cut = timeline.mark(f"retention.ms of {TOPIC} cut to {RETENTION_S} s")

        seen_hops: list[dict[str, Any]] = []

        def at_risk() -> dict[str, Any] | None:
            horizon = _horizon(exporter)
            hop = _kafka_hop(horizon)
            seen_hops[:] = [hop]
            margin = hop["margin"]
            if hop["state"] == "at_risk" and margin and margin["seconds"] < RETENTION_S:
                return horizon
            return None

        try:
            risky: Any = wait_for(at_risk, RETENTION_S, "the horizon at risk on Kafka")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the kafka hop last: {seen_hops}") from None
        seen = timeline.mark(
            f"loss horizon {risky['state']}: {risky['seconds']:.0f} s, first hop {risky['hop']} "
            f"(complete: {risky['complete']})"
        )
        # The margin counts down from the cut (a collection may be a few seconds old).
        assert risky["hop"] == "kafka" and risky["seconds"] <= RETENTION_S - (seen - cut) + 10
        # The risk came first: nothing unread was deleted yet.
        start_then = _log_start(bootstrap, options)
        assert all(start_then[tp] <= committed[tp] for tp in committed), (start_then, committed)

        def lost() -> dict[str, Any] | None:
            horizon = _horizon(exporter)
            return horizon if horizon["state"] == "lost" else None

        gone: Any = wait_for(lost, RETENTION_S + 60, "the loss horizon lost")
        timeline.mark(f"loss horizon lost: {_kafka_hop(gone)['reason']}")
        assert gone["hop"] == "kafka" and gone["seconds"] == 0
        # The horizon is lost at the first broker's deletion; the others' checks come within 5 s.
        wait_for(
            lambda: all(_log_start(bootstrap, options)[tp] >= end for tp, end in unread.items()),
            DEADLINE,
            "retention to delete the whole unread half",
        )
        timeline.mark("the whole unread half deleted")

        _set_retention(retention_restored, str(7 * 86_400_000))
        ingest(session, config).run()
        assert set(stored_keys(Path(config.output), day.prefix)) == set(keys[:half])
        timeline.mark("the job went on past the deleted records")

        code, report = completeness(session, day, config, hes_target, capsys)
        assert code == EXIT_INCOMPLETE
        assert (report["expected"], report["missing"]) == (len(keys), len(keys) - half)
        timeline.mark(f"completeness: {report['missing']} missing")

        code, final, took = repair_while_streaming(
            session, day, config, connect_target, hes_target, monkeypatch, capsys, timeline
        )
        assert_repaired(code, final, took, timeline)
        assert_each_once(config, day)
        assert completeness(session, day, config, hes_target, capsys)[0] == 0
        timeline.mark("completeness: the day complete, each measure once")
        wait_for(
            lambda: _horizon(exporter)["state"] != "lost",
            DEADLINE,
            "the horizon out of lost once the job read past the gap",
        )
        timeline.mark(f"loss horizon {_horizon(exporter)['state']} again")
    print(f"\nretention repair drill ({len(keys)} rows, {len(keys) - half} lost):\n{timeline}")
    print(f"repair of {day.day}: {took:.1f} s")
