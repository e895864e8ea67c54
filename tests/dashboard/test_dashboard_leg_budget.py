"""Each hop's outage budget and the settings a target budget needs (dashboard.leg_budget), and
the Capacity page's rows built from the exporter's JSON."""

from __future__ import annotations

from tests.dashboard.recorded import cluster_json
from vigia.dashboard.cluster import parse_cluster
from vigia.dashboard.data import Sample
from vigia.dashboard.leg_budget import (
    NONE,
    UNKNOWN,
    Budget,
    binlog_budget,
    binlog_settings,
    kafka_budget,
    kafka_settings,
)
from vigia.dashboard.views import outage

DAY = 86_400.0
MB = 1_000_000


def test_connect_may_stay_down_the_expiry_or_until_the_size_limit_fills() -> None:
    assert binlog_budget(DAY, None, 2 * MB) == Budget(DAY, "time")
    # 10 GB at 1 MB/s: 10,000 s, before the day's expiry.
    assert binlog_budget(DAY, 10_000 * MB, MB) == Budget(10_000.0, "size")
    assert binlog_budget(None, None, MB) == NONE
    assert binlog_budget(DAY, 10_000 * MB, None) == UNKNOWN  # the size limit may come first
    assert binlog_budget(None, 10_000 * MB, 0.0) == NONE  # nothing written, nothing purged


def test_the_ingest_job_may_stay_down_the_topics_outage_budget() -> None:
    assert kafka_budget(7 * DAY, "time", True) == Budget(7 * DAY, "time")
    assert kafka_budget(None, None, True) == NONE
    assert kafka_budget(None, None, False) == UNKNOWN


def test_settings_for_a_target_and_the_disk_they_cost() -> None:
    binlog = binlog_settings(2 * DAY, None, MB)
    assert (binlog.expire_seconds, binlog.size_limit_bytes, binlog.disk_bytes) == (
        172_800, None, 172_800 * MB
    )  # fmt: skip
    assert binlog_settings(DAY, MB, MB).size_limit_bytes == 86_400 * MB  # raised to the target
    assert binlog_settings(DAY, 10**15, MB).size_limit_bytes == 10**15  # never lowered
    kafka = kafka_settings(DAY, None, 6 * MB, partitions=6, replication_factor=3)
    assert (kafka.retention_ms, kafka.retention_bytes, kafka.disk_bytes) == (
        86_400_000, None, 6 * MB * DAY * 3
    )  # fmt: skip
    # retention.bytes is per partition: a sixth of the day's bytes each.
    assert kafka_settings(DAY, 1, 6 * MB, 6, 3).retention_bytes == 86_400 * MB
    assert kafka_settings(DAY, None, None, 6, 3).disk_bytes is None


def test_the_capacity_rows_name_each_hop_its_budget_and_what_the_target_needs() -> None:
    raw = cluster_json("healthy")
    raw["source"] = {"binlog": {"expire_seconds": 3600.0, "size_limit_bytes": None}}
    cluster = parse_cluster(raw)
    written = [Sample({}, 1000.0)]
    rows = outage.rows(raw, cluster, written, DAY)
    assert rows[0] == [
        "HES binlog → Connect",
        "Kafka Connect (Debezium)",
        "1 h (time)",
        "24 h",
        "raise to at least: binlog_expire_logs_seconds=86400",
        "86.4 MB of binlog on the HES",
    ]
    # A week's retention already covers the day: kept as it is.
    assert rows[1][:5] == [
        "Kafka measure → ingest job",
        "the ingest job (vigia-ingest)",
        "7 d (time)",
        "24 h",
        "kept: retention.ms=86400000",
    ]
    # Without the binlog watch, the Kafka row alone.
    alone = outage.rows({**raw, "source": None}, cluster, [], DAY)
    assert [row[0] for row in alone] == ["Kafka measure → ingest job"]
