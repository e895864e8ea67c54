"""The exporter's source watch against a real MariaDB and librdkafka's mock cluster: the HES
adapter's answers and query plans, the topic tail, the hops, and /metrics and /api/v1/cluster."""

from __future__ import annotations

import datetime as dt
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families
from pymysql.cursors import DictCursor

from tests.conftest import MockCluster, free_port
from tests.exporter.live import wait_for
from vigia.common.hes import parse_dsn
from vigia.exporter.collectors import render_source
from vigia.exporter.hes.adapter import DAY_ROWS, NEWEST_ROW, HesAdapter, HesError
from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.kafka.topic_tail import TopicTail, TopicTailError
from vigia.exporter.model.pipeline_hops import (
    HesReading,
    SourceLook,
    TopicTailReading,
    hop_lags,
    measure_ts,
    watched_days,
)
from vigia.exporter.web.api import source_json
from vigia.launcher.mariadb import HesDatabase

CLOSED, OPEN = dt.date(2026, 11, 23), dt.date(2026, 11, 24)
NOW = dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.UTC).timestamp()


def _insert(hes: HesDatabase, rows: list[tuple[Any, ...]]) -> None:
    connection = hes.admin()
    try:
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO hes.measure VALUES (%s, %s, %s, %s, %s, %s)",
                rows,
            )
    finally:
        connection.close()


def _rows(day: dt.date, meters: int, newest: str) -> list[tuple[Any, ...]]:
    return [(f"UY{m:06d}", day, p, "AEI", 1.0, newest) for m in range(meters) for p in (1, 2)]


def test_the_adapter_reads_newest_ts_and_rows_per_day(hes: HesDatabase) -> None:
    adapter = HesAdapter(parse_dsn(hes.dsn("reader")), timeout=5)
    try:
        empty = adapter.read((CLOSED, OPEN))
        assert empty.newest_row_timestamp is None
        assert empty.day_rows == {CLOSED: 0, OPEN: 0}
        _insert(hes, _rows(CLOSED, 5, "2026-11-23 23:59:00"))
        _insert(hes, _rows(OPEN, 3, "2026-11-24 09:55:07"))
        _insert(hes, _rows(dt.date(2026, 11, 20), 7, "2026-11-20 12:00:00"))
        reading = adapter.read((CLOSED, OPEN))
    finally:
        adapter.close()
    assert reading.day_rows == {CLOSED: 10, OPEN: 6}
    assert (
        reading.newest_row_timestamp
        == dt.datetime(2026, 11, 24, 9, 55, 7, tzinfo=dt.UTC).timestamp()
    )
    assert 0 < reading.query_seconds < 5


def test_the_queries_read_indexes_only(hes: HesDatabase) -> None:
    """EXPLAIN: MAX(ts) is answered from the ts index alone; the day count is a range over the
    measure_date index that never touches the rows."""
    _insert(hes, _rows(CLOSED, 50, "2026-11-23 23:59:00"))
    connection = hes.admin()
    try:
        with connection.cursor(DictCursor) as cursor:
            cursor.execute("USE hes")
            cursor.execute("EXPLAIN " + NEWEST_ROW)
            (newest,) = cursor.fetchall()
            cursor.execute("EXPLAIN " + DAY_ROWS, ((CLOSED, OPEN),))
            (days,) = cursor.fetchall()
    finally:
        connection.close()
    assert newest["Extra"] == "Select tables optimized away"
    assert days["key"] == "measure_day" and days["type"] == "range"
    assert "Using index" in days["Extra"]


def test_an_hes_that_is_down_is_an_error_without_the_password() -> None:
    dsn = parse_dsn(f"mysql://hes_reader:s3cret@127.0.0.1:{free_port()}/hes")
    adapter = HesAdapter(dsn, timeout=2)
    with pytest.raises(HesError) as caught:
        adapter.read((CLOSED, OPEN))
    assert "hes_reader@127.0.0.1" in str(caught.value) and "s3cret" not in str(caught.value)


def _produce(bootstrap: str, topic: str, values: list[tuple[str, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in values:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(10) == 0


def _measure(meter: str, ts: str) -> bytes:
    record = {"meter": meter, "measure_date": ts[:10], "period": 1, "magnitude": "AEI"}
    return json.dumps({**record, "value": 1.0, "ts": ts}).encode()


def test_the_topic_tail_reads_the_newest_measure_of_the_last_records(
    mock_cluster: MockCluster,
) -> None:
    bootstrap = mock_cluster.bootstrap_servers
    tail = TopicTail("measure", {"bootstrap.servers": bootstrap})
    try:
        with pytest.raises(TopicTailError):
            tail.read(timeout=3)  # the topic does not exist yet
        values = [(f"UY{m:06d}", _measure(f"UY{m:06d}", "2026-11-24T09:00:00Z")) for m in range(40)]
        _produce(bootstrap, "measure", values)
        _produce(bootstrap, "measure", [("UY000001", _measure("UY000001", "2026-11-24T09:14:59Z"))])
        _produce(bootstrap, "measure", [("UY000002", b"not json")])
        reading = tail.read(timeout=10)
    finally:
        tail.close()
    assert reading.newest_measure == dt.datetime(2026, 11, 24, 9, 14, 59, tzinfo=dt.UTC).timestamp()
    assert reading.end_offsets == 42  # every record, summed over the partitions


def test_the_newest_row_is_found_behind_older_rows_committed_after_it(
    mock_cluster: MockCluster,
) -> None:
    """Two HES writers commit out of ts order: the newest row is not its partition's last
    record. Read as the last record alone, the HES would look ahead of the topic (a stall)."""
    bootstrap = mock_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("measure", _measure("UY000001", "2026-11-24T09:14:59Z"), partition=0)
    for meter in range(5):
        producer.produce("measure", _measure(f"UY{meter:06d}", "2026-11-24T09:00:00Z"), partition=0)
    assert producer.flush(10) == 0
    tail = TopicTail("measure", {"bootstrap.servers": bootstrap})
    try:
        reading = wait_for(lambda: _read_when_listed(tail), what="the topic's tail")
    finally:
        tail.close()
    assert isinstance(reading, TopicTailReading)
    assert reading.newest_measure == dt.datetime(2026, 11, 24, 9, 14, 59, tzinfo=dt.UTC).timestamp()
    assert reading.end_offsets == 6


def _read_when_listed(tail: TopicTail) -> TopicTailReading | None:
    try:
        return tail.read(timeout=5)
    except TopicTailError:
        return None  # auto-created a moment ago: not in the metadata yet


def test_hops_are_differences_of_the_same_clock() -> None:
    reading = HesReading(NOW - 30, {CLOSED: 1, OPEN: 2}, 0.01)
    look = SourceLook(NOW, reading, None, NOW - 150, None)
    assert hop_lags(look, 12.5) == {"hes_to_kafka": 120.0, "kafka_to_store": 12.5}
    ahead = SourceLook(NOW, reading, None, NOW, None)  # a row reached Kafka after the HES read
    assert hop_lags(ahead, None) == {"hes_to_kafka": 0.0}
    assert hop_lags(SourceLook(NOW, None, "down", NOW, None), None) == {}
    assert watched_days(NOW) == (CLOSED, OPEN)
    assert measure_ts(b'{"ts":"2026-11-24T10:00:00Z"}') == NOW
    assert measure_ts(b"{}") is None and measure_ts(b"[1]") is None and measure_ts(None) is None


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_the_watch_serves_the_contract_families(
    hes: HesDatabase, mock_cluster: MockCluster
) -> None:
    bootstrap = mock_cluster.bootstrap_servers
    _insert(hes, _rows(CLOSED, 4, "2026-11-23 23:50:00"))
    _insert(hes, _rows(OPEN, 2, "2026-11-24 09:59:00"))
    _produce(bootstrap, "measure", [("UY000001", _measure("UY000001", "2026-11-24T09:58:00Z"))])
    watcher = SourceWatcher(
        HesAdapter(parse_dsn(hes.dsn("reader")), 5),
        TopicTail("measure", {"bootstrap.servers": bootstrap}),
        interval=60,
        timeout=5,
        group="vigia-ingest",
        clock=lambda: NOW,
    )
    # No retention view: the collection's Kafka side is not this test's (test_loss_horizon.py).
    state: Any = SimpleNamespace(
        max_lag_seconds={("vigia-ingest", "measure"): 42.0}, retention=None
    )
    try:
        look = watcher.watch_once()
        families = _families(render_source(watcher, state))
        document = source_json(watcher, state)
    finally:
        watcher.stop()
    assert look.hes_up and look.hes_error is None and look.topic_error is None
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    assert samples[("vigia_hes_up", ())] == 1
    assert samples[("vigia_hes_newest_row_timestamp_seconds", ())] == NOW - 60
    assert samples[("vigia_hes_day_rows", (("measure_date", "2026-11-23"),))] == 8
    assert samples[("vigia_hes_day_rows", (("measure_date", "2026-11-24"),))] == 4
    assert samples[("vigia_pipeline_hop_lag_seconds", (("hop", "hes_to_kafka"),))] == 60
    assert samples[("vigia_pipeline_hop_lag_seconds", (("hop", "kafka_to_store"),))] == 42
    assert document is not None and document["hes"]["day_rows"] == {
        "2026-11-23": 8,
        "2026-11-24": 4,
    }
    assert document["hop_lag_seconds"] == {"hes_to_kafka": 60.0, "kafka_to_store": 42.0}
    # One look is no flow yet: moving needs two (exporter.model.pipeline_flow).
    assert document["flow"] == {
        "connector": "hes-measure", "stall_after_seconds": 30.0, "state": "unknown",
        "checked_at": NOW, "topic_end_offsets": 1, "moved_at": None, "pending_since": None,
    }  # fmt: skip
    # Neither the binlog (no offsets topic) nor Kafka's margin known: the horizon says so.
    horizon = document["loss_horizon"]
    assert (horizon["state"], horizon["seconds"], horizon["complete"]) == ("unknown", None, False)
    assert samples[("vigia_leg_hop_state", (("hop", "kafka"), ("state", "unknown")))] == 1


def test_an_hes_that_goes_down_is_vigia_hes_up_0(
    hes_db: HesDatabase, mock_cluster: MockCluster, tmp_path: Any
) -> None:
    """A second MariaDB of its own, stopped mid-test: the next round says so, and no HES series
    but vigia_hes_up is served (no stale numbers)."""
    own = HesDatabase(tmp_path / "own", free_port())
    own.start()
    watcher = SourceWatcher(
        HesAdapter(parse_dsn(own.dsn("reader")), 2),
        TopicTail("measure", {"bootstrap.servers": mock_cluster.bootstrap_servers}),
        interval=60,
        timeout=2,
    )
    try:
        assert watcher.watch_once().hes_up
        own.stop()
        began = time.monotonic()
        look = watcher.watch_once()
        assert time.monotonic() - began < 10
        families = _families(render_source(watcher, None))
    finally:
        watcher.stop()
        own.close()
    assert not look.hes_up and look.hes_error is not None
    assert [s.value for s in families["vigia_hes_up"].samples] == [0]
    assert families["vigia_hes_day_rows"].samples == []
    assert families["vigia_hes_newest_row_timestamp_seconds"].samples == []


def test_days_are_counted_less_often_than_the_newest_ts_is_read(
    hes: HesDatabase, mock_cluster: MockCluster
) -> None:
    now = [NOW]
    watcher = SourceWatcher(
        HesAdapter(parse_dsn(hes.dsn("reader")), 5),
        TopicTail("measure", {"bootstrap.servers": mock_cluster.bootstrap_servers}),
        interval=60,
        timeout=5,
        count_interval=300,
        clock=lambda: now[0],
    )
    try:
        _insert(hes, _rows(OPEN, 1, "2026-11-24 09:00:00"))
        first = watcher.watch_once().hes
        _insert(hes, _rows(OPEN, 2, "2026-11-24 09:30:00")[2:])  # one more meter
        now[0] += 60
        second = watcher.watch_once().hes
        now[0] += 240
        third = watcher.watch_once().hes
        now[0] += 15 * 3600  # past midnight: new days, counted at once
        fourth = watcher.watch_once().hes
    finally:
        watcher.stop()
    assert first is not None and second is not None and third is not None and fourth is not None
    assert first.day_rows[OPEN] == second.day_rows[OPEN] == 2
    assert second.counted_at == first.counted_at == NOW
    assert (
        second.newest_row_timestamp == dt.datetime(2026, 11, 24, 9, 30, tzinfo=dt.UTC).timestamp()
    )
    assert third.day_rows[OPEN] == 4 and third.counted_at == NOW + 300
    assert list(fourth.day_rows) == [OPEN, OPEN + dt.timedelta(days=1)]
