"""Progress events → ingest metrics, fed with progress events recorded from a real run."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from vigia.ingest.job import running_since
from vigia.ingest.metrics import (
    BatchWritten,
    IngestListener,
    IngestMetrics,
    expected_measures_per_day,
    sample_from_progress,
)

# Two batches of a 23,272-message backlog read with maxOffsetsPerTrigger 12,000 (1 % malformed).
RECORDED = json.loads((Path(__file__).parent / "fixtures" / "progress-backlog.json").read_text())
NOW = dt.datetime(2026, 11, 21, 22, 34, tzinfo=dt.UTC).timestamp()


def exposed(metrics: IngestMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "query"))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_sample_from_a_recorded_progress_event() -> None:
    sample = sample_from_progress(RECORDED[0])
    assert sample.batch_id == 0
    assert sample.timestamp == dt.datetime(2026, 11, 21, 22, 33, 2, 458000, dt.UTC).timestamp()
    assert sample.input_rows == 12_000
    assert sample.processed_rows_per_second == 251.7
    assert sample.batch_duration_seconds == 47.67
    assert sample.phase_seconds["addBatch"] == 45.47
    assert sample.phase_seconds["walCommit"] == 0.106
    assert sample.invalid_by_reason == {
        "malformed_json": 18,
        "missing_field": 17,
        "period_out_of_range": 17,
        "invalid_value": 17,
        "unknown_magnitude": 17,
        "invalid_date": 17,
        "invalid_ts": 17,
    }
    assert sample.newest_measure_timestamp == 1795177983.0
    # latestOffset − endOffset, worst partition: 6215 − 3205.
    assert sample.offsets_behind == {"measure": 3010}
    assert sample.end_offsets == {
        ("measure", 0): 3205,
        ("measure", 1): 3000,
        ("measure", 2): 2795,
        ("measure", 3): 3000,
    }


def test_offsets_given_as_json_text_and_sources_that_are_not_kafka() -> None:
    event: dict[str, Any] = {
        **RECORDED[1],
        "sources": [
            {
                "endOffset": json.dumps({"measure": {"0": 10}}),
                "latestOffset": json.dumps({"measure": {"0": 25}}),
            },
            {"endOffset": 42, "latestOffset": None},  # e.g. the rate source
        ],
        "observedMetrics": {},
    }
    sample = sample_from_progress(event)
    assert sample.offsets_behind == {"measure": 15}
    assert sample.newest_measure_timestamp is None
    assert set(sample.invalid_by_reason.values()) == {0}


def test_the_run_in_metrics() -> None:
    metrics = IngestMetrics("vigia-ingest", clock=lambda: NOW, trigger_interval=30.0)
    metrics.seed_days({dt.date(2026, 11, 14): 5, dt.date(2026, 11, 15): 7})
    metrics.query_started()
    for event in RECORDED:
        metrics.progress(sample_from_progress(event))
    metrics.progress(sample_from_progress(RECORDED[1]))  # the same batch reported twice
    metrics.batch_written(BatchWritten(0, 11_880, 0, {dt.date(2026, 11, 20): 11_880}))
    metrics.batch_written(BatchWritten(1, 11_150, 10, {dt.date(2026, 11, 20): 11_150}))

    values = exposed(metrics)
    assert values[("vigia_ingest_query_active", ())] == 1
    assert values[("vigia_ingest_trigger_interval_seconds", ())] == 30
    assert values[("vigia_ingest_batches_total", ())] == 2
    assert values[("vigia_ingest_input_rows_total", ())] == 23_272
    assert values[("vigia_ingest_valid_rows_total", ())] == 23_030
    assert values[("vigia_ingest_duplicate_rows_total", ())] == 10
    assert values[("vigia_ingest_invalid_rows_total", (("reason", "malformed_json"),))] == 34
    assert values[("vigia_ingest_invalid_rows_total", (("reason", "invalid_ts"),))] == 33
    assert values[("vigia_ingest_batch_input_rows", ())] == 11_272
    assert values[("vigia_ingest_input_rows_per_second", ())] == 235.7
    assert values[("vigia_ingest_processed_rows_per_second", ())] == 969.6
    assert values[("vigia_ingest_batch_duration_seconds_count", ())] == 2
    assert values[("vigia_ingest_batch_duration_seconds_sum", ())] == pytest.approx(59.295)
    assert values[("vigia_ingest_batch_duration_seconds_bucket", (("le", "10.0"),))] == 0
    assert values[("vigia_ingest_batch_duration_seconds_bucket", (("le", "20.0"),))] == 1
    assert values[("vigia_ingest_batch_duration_seconds_bucket", (("le", "60.0"),))] == 2
    assert values[("vigia_ingest_phase_duration_seconds", (("phase", "addBatch"),))] == 10.801
    assert values[("vigia_ingest_offsets_behind_latest", (("topic", "measure"),))] == 0
    assert values[("vigia_ingest_last_progress_timestamp_seconds", ())] == pytest.approx(
        dt.datetime(2026, 11, 21, 22, 33, 50, 281000, dt.UTC).timestamp()
    )
    assert values[("vigia_ingest_newest_measure_timestamp_seconds", ())] == 1795219496.0
    days = {
        labels[0][1]: value
        for (name, labels), value in values.items()
        if name == "vigia_ingest_day_measures"
    }
    # 2026-11-14 is 7 days before the 21st: outside the window.
    assert days == {"2026-11-15": 7, "2026-11-20": 23_030}

    metrics.query_terminated()
    assert exposed(metrics)[("vigia_ingest_query_active", ())] == 0


def _ratios(metrics: IngestMetrics) -> dict[str, float]:
    return {
        labels[0][1]: value
        for (name, labels), value in exposed(metrics).items()
        if name == "vigia_ingest_day_completeness_ratio"
    }


def test_completeness_ratio_covers_closed_days_the_job_was_running_through() -> None:
    per_day = expected_measures_per_day(2)
    assert per_day == 2 * 96 * 4
    metrics = IngestMetrics("vigia-ingest", clock=lambda: NOW, expected_per_day=per_day)
    # First started on the 16th at 09:00: the 17th is the first day it ran through.
    metrics.running_since(dt.datetime(2026, 11, 16, 9, 0, tzinfo=dt.UTC).timestamp())
    metrics.seed_days({dt.date(2026, 11, 16): 100, dt.date(2026, 11, 17): 192})
    metrics.batch_written(BatchWritten(0, 768, 0, {dt.date(2026, 11, 20): 768}))
    # Today (the 21st) is open; the 16th was joined halfway, whatever it holds.
    assert _ratios(metrics) == {
        "2026-11-17": 0.25,
        "2026-11-18": 0.0,
        "2026-11-19": 0.0,
        "2026-11-20": 1.0,
    }
    metrics.running_since(dt.datetime(2026, 11, 19, 0, 0, tzinfo=dt.UTC).timestamp())
    assert set(_ratios(metrics)) == {"2026-11-19", "2026-11-20"}  # from its first second


def test_a_brand_new_install_judges_no_day_it_never_saw() -> None:
    """Started today: yesterday is not incomplete, it predates the job (no ticket)."""
    fresh = IngestMetrics("q", clock=lambda: NOW, expected_per_day=768)
    fresh.running_since(NOW - 3600)
    fresh.seed_days({dt.date(2026, 11, 20): 5})  # late readings of yesterday, read from Kafka
    assert _ratios(fresh) == {}
    # Two days later, the first day it ran through (the 22nd) is judged, even with nothing stored.
    later = IngestMetrics("q", clock=lambda: NOW + 2 * 86400, expected_per_day=768)
    later.running_since(NOW - 3600)
    assert _ratios(later) == {"2026-11-22": 0.0}
    # Without the meter count or the start, nothing is judged.
    unknown = IngestMetrics("q", clock=lambda: NOW)
    unknown.running_since(NOW - 30 * 86400)
    unknown.seed_days({dt.date(2026, 11, 20): 768})
    assert _ratios(unknown) == {}
    assert _ratios(IngestMetrics("q", clock=lambda: NOW, expected_per_day=768)) == {}


def test_families_exist_before_the_first_batch() -> None:
    names = {name for name, _ in exposed(IngestMetrics("q"))}
    assert "vigia_ingest_batches_total" in names
    assert ("vigia_ingest_invalid_rows_total", (("reason", "malformed_json"),)) in exposed(
        IngestMetrics("q")
    )
    # Nothing to say yet about rates or freshness: no sample rather than a made-up zero.
    assert "vigia_ingest_input_rows_per_second" not in names
    assert "vigia_ingest_newest_measure_timestamp_seconds" not in names
    assert "vigia_ingest_trigger_interval_seconds" not in names  # an available-now run


def test_wait_for_batch() -> None:
    metrics = IngestMetrics("q")
    assert not metrics.wait_for_batch(0, 0.01)
    metrics.progress(sample_from_progress(RECORDED[0]))
    assert metrics.wait_for_batch(0, 0.01)


def test_listener_follows_only_its_query() -> None:
    metrics = IngestMetrics("vigia-ingest", clock=lambda: NOW)
    listener = IngestListener(metrics)
    ours = SimpleNamespace(id="a", name="vigia-ingest")
    listener.onQueryStarted(SimpleNamespace(id="b", name="other"))
    listener.onQueryStarted(ours)
    other_progress = SimpleNamespace(name="other", json=json.dumps(RECORDED[0]))
    listener.onQueryProgress(SimpleNamespace(progress=other_progress))
    our_progress = SimpleNamespace(name="vigia-ingest", json=json.dumps(RECORDED[1]))
    listener.onQueryProgress(SimpleNamespace(progress=our_progress))
    listener.onQueryIdle(SimpleNamespace(id="a", timestamp="2026-11-21T22:40:00.000Z"))
    values = exposed(metrics)
    assert values[("vigia_ingest_batches_total", ())] == 1
    assert values[("vigia_ingest_input_rows_total", ())] == 11_272
    assert values[("vigia_ingest_query_active", ())] == 1
    # Idle events show the query is alive, polling with nothing new.
    assert values[("vigia_ingest_last_progress_timestamp_seconds", ())] == pytest.approx(
        dt.datetime(2026, 11, 21, 22, 40, tzinfo=dt.UTC).timestamp()
    )
    listener.onQueryTerminated(SimpleNamespace(id="b"))
    assert exposed(metrics)[("vigia_ingest_query_active", ())] == 1
    listener.onQueryTerminated(SimpleNamespace(id="a"))
    assert exposed(metrics)[("vigia_ingest_query_active", ())] == 0


class _DictFs:
    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def write_text(self, path: str, text: str) -> None:
        self.files[path] = text


def test_the_first_start_is_kept_in_the_checkpoint_across_restarts() -> None:
    fs = _DictFs()
    first = running_since(fs, "/ckpt/", now=lambda: 1000.5)  # type: ignore[arg-type]
    assert first == 1000.5 and fs.files == {"/ckpt/vigia-running-since": "1000.500\n"}
    assert running_since(fs, "/ckpt", now=lambda: 9999.0) == 1000.5  # type: ignore[arg-type]
    fs.files["/ckpt/vigia-running-since"] = "garbage"
    assert running_since(fs, "/ckpt", now=lambda: 2000.0) == 2000.0  # type: ignore[arg-type]
