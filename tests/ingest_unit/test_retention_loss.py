"""Ranges Kafka deleted before the job read them: which days they may hold, how many of a day's
missing measures they account for, and their record on disk."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest

from vigia.ingest.completeness import CompletenessReport, with_retention_losses
from vigia.ingest.loss_log import LOSS_DIR, loss_dir, pyarrow_uri, read_losses, record_loss
from vigia.ingest.retention_loss import RetentionLoss, day_loss, merged

DAY = dt.date(2026, 11, 20)
NOON = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)


def loss(
    partition: int = 0,
    lost_from: int = 100,
    lost_to: int = 148,
    appended: dt.datetime | None = NOON,
) -> RetentionLoss:
    return RetentionLoss(
        "measure",
        partition,
        lost_from,
        lost_to,
        "the earliest available offset is 148: retention deleted them",
        detected_at=NOON + dt.timedelta(days=3),
        appended_before=appended,
    )


def test_a_loss_appended_before_a_day_began_holds_none_of_its_measures() -> None:
    on_the_day = loss()
    assert on_the_day.may_hold(DAY)
    assert on_the_day.may_hold(DAY - dt.timedelta(days=30))  # a late day's measures, sent now
    # In UTC+14 the next local day began at 10:00 UTC, before the first message kept...
    assert on_the_day.may_hold(DAY + dt.timedelta(days=1))
    assert loss(appended=NOON - dt.timedelta(hours=1, minutes=59)).may_hold(DAY + dt.timedelta(1))
    assert not loss(appended=NOON - dt.timedelta(hours=2)).may_hold(DAY + dt.timedelta(1))
    # ...and the day after began after it everywhere.
    assert not on_the_day.may_hold(DAY + dt.timedelta(days=2))


def test_without_a_message_after_the_gap_the_detection_bounds_it() -> None:
    gone = loss(appended=None)  # detected three days after NOON
    assert gone.may_hold(DAY + dt.timedelta(days=4))
    assert not gone.may_hold(DAY + dt.timedelta(days=5))


def test_a_day_is_told_at_most_its_missing_and_at_most_the_offsets_deleted() -> None:
    losses = [loss(0, 100, 148), loss(1, 0, 20), loss(2, 0, 500, appended=NOON - dt.timedelta(2))]
    found = day_loss(DAY, 30, losses)
    assert [held.partition for held in found.losses] == [0, 1]  # partition 2's was before the day
    assert found.at_most == 30
    assert day_loss(DAY, 1_000, losses).at_most == 68
    assert day_loss(DAY + dt.timedelta(days=2), 10, losses) == day_loss(DAY, 0, [])


def test_overlapping_records_of_a_partition_count_once() -> None:
    first = loss(0, 100, 148)
    # The task ran again after retention deleted more: the same gap, further.
    again = replace(loss(0, 100, 190), appended_before=NOON + dt.timedelta(minutes=5))
    other = loss(1, 100, 148)
    assert merged([again, other, first]) == [again, other]
    later_gap = loss(0, 300, 310)
    assert merged([first, later_gap]) == [first, later_gap]


def test_records_are_written_once_per_range_and_read_back(tmp_path: Path) -> None:
    directory = loss_dir(str(tmp_path / "measure"))
    assert directory.endswith(f"/measure/{LOSS_DIR}")
    assert read_losses(directory) == []  # a job that never skipped anything
    record_loss(directory, loss(0))
    record_loss(directory, loss(0))  # a task run again over the same gap
    record_loss(directory, loss(1, appended=None))
    assert read_losses(directory) == [loss(0), loss(1, appended=None)]
    assert sorted(p.name for p in Path(directory).iterdir()) == [
        "measure-0-100-148.json",
        "measure-1-100-148.json",
    ]


def test_an_unwritable_record_is_logged_and_the_read_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    record_loss(str(blocked / LOSS_DIR), loss())  # no exception
    assert "cannot record the loss of measure-0 offsets [100, 148)" in caplog.text


def report(missing: int) -> CompletenessReport:
    return CompletenessReport(
        measure_date=DAY,
        meters=3,
        magnitudes=("AEI",),
        expected=288,
        stored_rows=288 - missing,
        distinct_stored=288 - missing,
        missing=missing,
        duplicates=0,
        unexpected=0,
    )


def test_the_report_names_the_losses_that_may_hold_the_missing_measures() -> None:
    told = with_retention_losses(report(48), [loss(0, 100, 148), loss(1, 0, 10)])
    assert told.lost_to_retention == 48
    assert told.summary().endswith("; up to 48 of the missing deleted unread by Kafka retention")
    data = told.to_json()
    named = [(held["partition"], held["offsets"]) for held in data["retention_losses"]]
    assert named == [(0, 48), (1, 10)]
    assert data["retention_losses"][0]["appended_before"] == NOON.isoformat()
    # A complete day is not told of losses, whatever they may hold.
    assert with_retention_losses(report(0), [loss()]) == report(0)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("s3a://bucket/vigia/measure/_vigia_losses", "s3://bucket/vigia/measure/_vigia_losses"),
        ("s3://bucket/measure/_vigia_losses", "s3://bucket/measure/_vigia_losses"),
        ("hdfs://nn:8020/measure/_vigia_losses", "hdfs://nn:8020/measure/_vigia_losses"),
    ],
)
def test_an_s3a_output_is_the_same_bucket_for_pyarrow(output: str, expected: str) -> None:
    """--output s3a://… is what Spark's Hadoop connector takes; the loss records beside it are
    written through pyarrow, which rejects the scheme."""
    assert pyarrow_uri(output) == expected
