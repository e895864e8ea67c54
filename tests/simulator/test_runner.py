"""Modes, delivery accounting, manifest and metrics, over an in-memory sink."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from vigia.ingest.schema import MAGNITUDES, REASONS, Reason
from vigia.ingest.simulator.delivery import DeliveryCallback, DeliveryTally
from vigia.ingest.simulator.generator import DUPLICATE_TAG, malformed_tag, valid_tag
from vigia.ingest.simulator.malformed import FaultInjector
from vigia.ingest.simulator.manifest import (
    Manifest,
    MeterRange,
    load_manifest,
    meter_range,
    write_manifest,
)
from vigia.ingest.simulator.metrics import RunState, SimulatorCollector
from vigia.ingest.simulator.runner import Outage, RateLimiter, Runner

DAY = dt.date(2026, 11, 20)


class ListSink:
    """Acknowledges every message at once, except those whose value contains `fail_marker`."""

    def __init__(self, fail_marker: bytes | None = None) -> None:
        self.sent: list[tuple[bytes, bytes, float]] = []
        self._fail_marker = fail_marker

    def send(self, key: bytes, value: bytes, on_delivery: DeliveryCallback) -> None:
        self.sent.append((key, value, time.monotonic()))
        failed = self._fail_marker is not None and self._fail_marker in value
        on_delivery("broker said no" if failed else None, None)

    def poll(self, timeout: float = 0.0) -> None:
        time.sleep(timeout)

    def pending(self) -> int:
        return 0


def make_runner(
    sink: ListSink, meters: int = 5, malformed: float = 0.0, duplicates: float = 0.0
) -> tuple[Runner, DeliveryTally, RunState]:
    tally, state = DeliveryTally(), RunState()
    runner = Runner(
        sink, meter_range(meters), 11, tally, state, FaultInjector(malformed, duplicates)
    )
    return runner, tally, state


def records(sink: ListSink) -> list[dict[str, Any]]:
    out = []
    for _key, value, _at in sink.sent:
        try:
            out.append(json.loads(value))
        except json.JSONDecodeError:
            continue
    return out


def test_backfill_sends_whole_days_once_and_counts_deliveries() -> None:
    sink = ListSink()
    runner, tally, state = make_runner(sink, meters=5, malformed=0.02, duplicates=0.01)
    runner.backfill(DAY, days=2)
    manifest = tally.manifest(
        mode="backfill", topic="measure", seed=11, meters=meter_range(5), magnitudes=MAGNITUDES
    )
    per_day = 5 * 96
    assert manifest.valid == {
        "2026-11-20": dict.fromkeys(MAGNITUDES, per_day),
        "2026-11-21": dict.fromkeys(MAGNITUDES, per_day),
    }
    assert manifest.duplicates == 2 * per_day * 4 // 100
    assert manifest.malformed_total == 2 * per_day * 4 * 2 // 98
    assert set(manifest.malformed) == {r.value for r in REASONS}
    expected_total = FaultInjector(0.02, 0.01).total_for(2 * per_day * 4)
    assert manifest.produced == len(sink.sent) == expected_total
    assert manifest.failed == 0
    assert state.last_sent_ts == runner.last_ts
    assert runner.first_ts is not None and runner.last_ts is not None
    assert dt.datetime.fromtimestamp(runner.first_ts, dt.UTC).date() == DAY


def test_failed_deliveries_are_counted_not_produced() -> None:
    sink = ListSink(fail_marker=b'"magnitude":"REE"')
    runner, tally, _ = make_runner(sink, meters=2)
    runner.backfill(DAY, days=1)
    snap = tally.snapshot()
    assert snap.failed == 2 * 96
    assert snap.valid["2026-11-20"] == {"AEI": 192, "AEE": 192, "REI": 192}
    assert tally.first_error == "broker said no"
    assert snap.produced == 3 * 192


def test_stop_ends_a_run_between_chunks() -> None:
    sink = ListSink()
    runner, _, _ = make_runner(sink, meters=300)
    runner.stop.set()
    runner.backfill(DAY, days=1)
    assert sink.sent == []


def test_live_releases_readings_when_the_clock_passes_their_ts() -> None:
    sink = ListSink()
    runner, _, _ = make_runner(sink, meters=4)
    start = dt.datetime(2026, 11, 20, 10, 7, tzinfo=dt.UTC)
    wall_start = time.monotonic()
    runner.live(start, speed=7200.0, duration=1.0)
    sent = records(sink)
    assert sent, "nothing sent in a simulated 2 hours"
    first = sent[0]
    assert (first["measure_date"], first["period"]) == ("2026-11-20", 40)  # ends at 10:00
    stamps = [dt.datetime.fromisoformat(r["ts"]).timestamp() for r in sent]
    assert stamps == sorted(stamps)
    for (_k, _v, at), ts in zip(sink.sent, stamps, strict=True):
        clock = start.timestamp() + (at - wall_start) * 7200.0
        assert ts <= clock + 1.0  # never sent before its time (1 s of timing slack)
    keys = Counter((r["meter"], r["period"], r["magnitude"]) for r in sent)
    assert set(keys.values()) == {1}
    assert 8 <= len({r["period"] for r in sent}) <= 9  # 2 simulated hours of periods


def test_outage_holds_back_then_releases_the_backlog() -> None:
    sink = ListSink()
    runner, _, state = make_runner(sink, meters=4)
    start = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
    outage = Outage(after=0.3, duration=0.6, stop_after_release=True)
    wall_start = time.monotonic()
    runner.live(start, speed=3600.0, duration=10.0, outage=outage)
    elapsed = time.monotonic() - wall_start
    assert elapsed < 5.0, "did not stop after the release"
    times = [at - wall_start for _k, _v, at in sink.sent]
    during = [t for t in times if 0.35 < t < 0.85]
    assert during == []
    after = [t for t in times if t >= 0.85]
    assert len(after) >= 4 * 4 * 2  # at least two periods of backlog (4 meters × 4 magnitudes)
    stamps = [dt.datetime.fromisoformat(r["ts"]).timestamp() for r in records(sink)]
    # Caught up with the clock (10:54 at the release): the period ending at 10:45 went out.
    assert max(stamps) >= start.timestamp() + 45 * 60
    assert state.backlog_seconds < 900


def test_rate_limit_is_an_upper_bound() -> None:
    limiter = RateLimiter(2000.0)
    began = time.monotonic()
    for _ in range(30):
        limiter.acquire(100)
    assert time.monotonic() - began >= 0.45  # 3000 messages, a 2000-message burst allowed


def test_manifest_round_trip(tmp_path: Path) -> None:
    manifest = Manifest(
        mode="backfill",
        topic="measure",
        seed=42,
        meters=MeterRange(count=10000),
        magnitudes=MAGNITUDES,
        valid={"2026-11-20": dict.fromkeys(MAGNITUDES, 960000)},
        duplicates=3,
        malformed={r.value: 5 for r in REASONS},
        failed=1,
        first_ts="2026-11-20T00:15:00Z",
        last_ts="2026-11-21T00:19:59Z",
    )
    write_manifest(manifest, tmp_path / "m.json")
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["valid_total"] == 3_840_000
    assert data["malformed_total"] == 35
    assert data["produced"] == 3_840_000 + 3 + 35
    assert data["meters"] == {"prefix": "UY", "first": 1, "count": 10000, "width": 6}
    assert load_manifest(tmp_path / "m.json") == manifest
    assert not (tmp_path / "m.json.partial").exists()


def test_meter_ids() -> None:
    assert meter_range(3).ids() == ["UY000001", "UY000002", "UY000003"]
    assert meter_range(1_200_000).width == 7
    assert meter_range(1_200_000).ids()[-1] == "UY1200000"
    with pytest.raises(ValueError, match="at least 1"):
        MeterRange(count=0)
    with pytest.raises(ValueError, match="do not fit"):
        MeterRange(count=10, first=999_995, width=6)


def test_metrics_expose_the_tally() -> None:
    tally, state = DeliveryTally(), RunState(backlog_seconds=120.0, last_sent_ts=1.7e9)
    for _ in range(3):
        tally.callback(valid_tag("2026-11-20", "AEI"))(None, None)
    tally.callback(valid_tag("2026-11-20", "AEI"))("timeout", None)
    tally.callback(malformed_tag(Reason.INVALID_TS))(None, None)
    tally.callback(DUPLICATE_TAG)(None, None)
    registry = CollectorRegistry()
    registry.register(SimulatorCollector(tally, state, pending=lambda: 7))
    text = generate_latest(registry).decode()
    expected = [
        'vigia_simulator_messages_total{outcome="produced"} 5.0',
        'vigia_simulator_messages_total{outcome="failed"} 1.0',
        'vigia_simulator_malformed_messages_total{reason="invalid_ts"} 1.0',
        'vigia_simulator_malformed_messages_total{reason="malformed_json"} 0.0',
        "vigia_simulator_duplicate_messages_total 1.0",
        "vigia_simulator_pending_messages 7.0",
        "vigia_simulator_backlog_seconds 120.0",
        "vigia_simulator_last_sent_timestamp_seconds 1.7e+09",
    ]
    for line in expected:
        assert line in text.splitlines(), line


def test_a_periodic_outage_repeats_after_each_period() -> None:
    outage = Outage(after=60.0, duration=150.0, every=900.0)
    held = [t for t in range(0, 2000, 10) if outage.holding(float(t))]
    assert held[0] == 60 and 200 in held and 210 not in held
    assert 960 in held and 1100 in held and 1110 not in held and 1860 in held
    assert not Outage(after=60.0, duration=150.0).holding(960.0)  # once, without `every`
