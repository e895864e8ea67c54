"""The binlog margin's model (exporter.model.binlog): expiry settings of MySQL and MariaDB, the
margin's lower bound, catch-up, at-risk and losses counted once."""

from __future__ import annotations

import pytest

from vigia.exporter.model.binlog import (
    AT_RISK,
    LOST,
    NONE,
    OFFSET_TS,
    OK,
    OPEN_FILE,
    PURGED,
    RATE,
    SEEN_NEWEST,
    SIZE,
    UNKNOWN,
    BinlogFile,
    BinlogReading,
    BinlogTracker,
    Expiry,
    OffsetFormatError,
    SourceOffset,
    binary_logs,
    bytes_behind,
    offset_owner,
    parse_offset,
    server_expiry,
    written_between,
)

# SHOW GLOBAL VARIABLES WHERE Variable_name IN (...), as each server answers it.
MARIADB_10_11 = {
    "binlog_expire_logs_seconds": "86400",
    "expire_logs_days": "1.000000",
    "log_bin": "ON",
}
MARIADB_11_4 = {
    "binlog_expire_logs_seconds": "0",
    "expire_logs_days": "0.000000",
    "max_binlog_total_size": "1073741824",
    "binlog_space_limit": "1073741824",
    "log_bin": "ON",
}
MYSQL_8_4 = {  # no expire_logs_days since 8.2
    "binlog_expire_logs_auto_purge": "ON",
    "binlog_expire_logs_seconds": "2592000",
    "log_bin": "ON",
}
MYSQL_8_0_DAYS = {
    "binlog_expire_logs_auto_purge": "ON",
    "binlog_expire_logs_seconds": "0",
    "expire_logs_days": "7",
    "log_bin": "ON",
}
# SHOW BINARY LOGS rows: MySQL 8 adds Encrypted.
MYSQL_8_4_LOGS = [("binlog.000041", 1073742022, "No"), ("binlog.000042", 52_613_445, "No")]
MARIADB_LOGS = [("mariadb-bin.000001", 1_051_232), ("mariadb-bin.000002", 365)]


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        (MARIADB_10_11, Expiry(86400.0, None)),
        (MARIADB_11_4, Expiry(None, 1073741824)),
        (MYSQL_8_4, Expiry(2592000.0, None)),
        (MYSQL_8_0_DAYS, Expiry(7 * 86400.0, None)),
        ({**MYSQL_8_4, "binlog_expire_logs_auto_purge": "OFF"}, Expiry(None, None)),
        ({"binlog_expire_logs_seconds": "0", "expire_logs_days": "0"}, Expiry(None, None)),
        ({"expire_logs_days": "0.5"}, Expiry(43200.0, None)),
        ({"binlog_expire_logs_seconds": "600", "expire_logs_days": "10"}, Expiry(600.0, None)),
    ],
)
def test_server_expiry_of_each_server(variables: dict[str, str], expected: Expiry) -> None:
    assert server_expiry(variables) == expected


def test_none_purges_nothing() -> None:
    assert not Expiry(None, None).purges
    assert Expiry(1.0, None).purges and Expiry(None, 1).purges


def test_binary_logs_of_mysql_and_mariadb() -> None:
    assert binary_logs(MYSQL_8_4_LOGS) == (
        BinlogFile("binlog.000041", 1073742022),
        BinlogFile("binlog.000042", 52_613_445),
    )
    assert binary_logs(MARIADB_LOGS)[1] == BinlogFile("mariadb-bin.000002", 365)


def test_offsets_topic_records() -> None:
    assert offset_owner(["hes-measure", {"server": "cdc"}]) == "hes-measure"
    assert offset_owner({"name": "x"}) is None
    value = {"ts_sec": 1795500000, "file": "mariadb-bin.000003", "pos": 4242, "row": 1}
    assert parse_offset(value) == SourceOffset("mariadb-bin.000003", 4242, 1795500000.0)
    snap = parse_offset({"file": "f.1", "pos": 4, "snapshot": "true", "gtids": "0-1-5"})
    assert snap == SourceOffset("f.1", 4, None, True, "0-1-5")
    assert parse_offset(None) is None
    with pytest.raises(OffsetFormatError):
        parse_offset({"lsn": 5})
    with pytest.raises(OffsetFormatError):
        parse_offset({"file": "f.1", "pos": "x"})


FILES = (BinlogFile("b.1", 1000), BinlogFile("b.2", 500), BinlogFile("b.3", 200))


def test_bytes_behind_counts_the_rest_of_the_file_and_the_later_ones() -> None:
    assert bytes_behind(FILES, SourceOffset("b.2", 100)) == 400 + 200
    assert bytes_behind(FILES, SourceOffset("b.3", 200)) == 0
    assert bytes_behind(FILES, SourceOffset("b.0", 4)) is None


def test_written_between_listings() -> None:
    later = (BinlogFile("b.2", 500), BinlogFile("b.3", 300), BinlogFile("b.4", 50))
    assert written_between(FILES, later) == 100 + 50
    assert written_between(FILES, (BinlogFile("b.9", 5),)) is None
    assert written_between((), FILES) is None


def _read(
    at: float, files: tuple[BinlogFile, ...], offset: SourceOffset | None, expiry: float = 600
):
    return BinlogReading(at, Expiry(expiry, None), files, offset)


def test_the_open_file_has_the_whole_expiry_ahead() -> None:
    verdict = BinlogTracker(floor_seconds=60).judge(_read(0, FILES, SourceOffset("b.3", 100, 0)))
    assert verdict.state == OK
    assert verdict.margin is not None
    assert (verdict.margin.seconds, verdict.margin.method) == (600, OPEN_FILE)
    assert verdict.bytes_behind == 100


def test_a_closed_file_counts_down_from_the_offset_ts() -> None:
    tracker = BinlogTracker(floor_seconds=60)
    verdict = tracker.judge(_read(1000, FILES, SourceOffset("b.2", 100, ts_sec=900)))
    assert verdict.margin is not None
    assert (verdict.margin.seconds, verdict.margin.method) == (500, OFFSET_TS)
    later = tracker.judge(_read(1300, FILES, SourceOffset("b.2", 100, ts_sec=900)))
    assert later.margin is not None and later.margin.seconds == 200
    gone = tracker.judge(_read(1600, FILES, SourceOffset("b.2", 100, ts_sec=900)))
    assert gone.margin is not None and gone.margin.seconds == 0
    assert gone.state == AT_RISK  # not purged yet: that waits for the next rotation


def test_the_last_round_that_saw_the_file_open_is_a_later_bound() -> None:
    tracker = BinlogTracker(floor_seconds=60)
    offset = SourceOffset("b.2", 100, ts_sec=900)
    tracker.judge(_read(950, FILES[:2], offset))  # b.2 the newest: still open at 950
    verdict = tracker.judge(_read(1000, FILES, offset))
    assert verdict.margin is not None
    assert (verdict.margin.seconds, verdict.margin.method) == (550, SEEN_NEWEST)


def test_a_margin_needs_a_bound_of_the_rotation() -> None:
    verdict = BinlogTracker().judge(_read(0, FILES, SourceOffset("b.1", 100)))
    assert verdict.state == UNKNOWN and verdict.margin is None
    assert verdict.reason and "rotation" in verdict.reason


def test_no_offset_is_unknown_and_no_expiry_is_none() -> None:
    assert BinlogTracker().judge(_read(0, FILES, None)).state == UNKNOWN
    verdict = BinlogTracker().judge(
        BinlogReading(0, Expiry(None, None), FILES, SourceOffset("b.1", 0, 0))
    )
    assert verdict.state == NONE and verdict.margin is None and verdict.bytes_behind == 1700


def test_a_stopped_connector_under_the_floor_is_at_risk() -> None:
    tracker = BinlogTracker(floor_seconds=300)
    offset = SourceOffset("b.2", 100, ts_sec=0)
    assert tracker.judge(_read(100, FILES, offset)).state == OK  # margin 500 ≥ 300
    grown = (*FILES[:2], BinlogFile("b.3", 900))
    verdict = tracker.judge(_read(400, grown, offset))  # margin 200, backlog grows
    assert verdict.state == AT_RISK
    assert verdict.catch_up_seconds is None and verdict.drain_bytes_per_second is not None
    assert verdict.drain_bytes_per_second < 0


def test_a_draining_connector_is_at_risk_only_when_it_catches_up_too_late() -> None:
    tracker = BinlogTracker(floor_seconds=10_000)
    tracker.judge(_read(0, FILES, SourceOffset("b.1", 0, ts_sec=0), expiry=3600))  # behind 1700
    fast = tracker.judge(_read(100, FILES, SourceOffset("b.2", 0, ts_sec=50), expiry=3600))
    # 700 behind, drained 1000 in 100 s: 70 s to go, margin 3550 s.
    assert fast.catch_up_seconds == pytest.approx(70)
    assert fast.state == OK
    slow = BinlogTracker(floor_seconds=0)
    slow.judge(_read(0, FILES, SourceOffset("b.1", 0, ts_sec=0), expiry=600))
    verdict = slow.judge(_read(500, FILES, SourceOffset("b.1", 100, ts_sec=10), expiry=600))
    # 1600 behind at 0.2 B/s: 8000 s to catch up, 110 s of margin.
    assert verdict.catch_up_seconds == pytest.approx(8000)
    assert verdict.state == AT_RISK


def test_a_purged_file_is_one_loss_counted_once() -> None:
    tracker = BinlogTracker()
    offset = SourceOffset("b.1", 100, ts_sec=0)
    assert tracker.judge(_read(0, FILES, offset)).losses == 0
    lost = tracker.judge(_read(60, FILES[1:], offset))
    assert lost.state == LOST and lost.losses == 1
    assert lost.margin is not None and (lost.margin.seconds, lost.margin.method) == (0, PURGED)
    assert lost.reason and "b.1" in lost.reason and "b.2" in lost.reason
    again = tracker.judge(_read(120, FILES[2:], offset))
    assert again.state == LOST and again.losses == 1
    healed = tracker.judge(_read(180, FILES[2:], SourceOffset("b.3", 4, ts_sec=170)))
    assert healed.state == OK and healed.losses == 1


def test_a_loss_already_there_at_the_first_sight_is_not_counted() -> None:
    verdict = BinlogTracker().judge(_read(0, FILES[1:], SourceOffset("b.1", 100, ts_sec=0)))
    assert verdict.state == LOST and verdict.losses == 0


def test_size_limit_margin_at_the_current_growth() -> None:
    tracker = BinlogTracker(floor_seconds=0)
    offset = SourceOffset("b.2", 0, ts_sec=0)
    reading = BinlogReading(0, Expiry(None, 2000), FILES, offset)
    first = tracker.judge(reading)
    assert first.state == OK and first.margin is None  # growth unknown yet
    grown = (*FILES[:2], BinlogFile("b.3", 300))  # 100 B in 10 s: 10 B/s
    verdict = tracker.judge(BinlogReading(10, Expiry(None, 2000), grown, offset))
    # kept from b.2 on: 800 B, 1200 B of room at 10 B/s.
    assert verdict.margin is not None
    assert (verdict.margin.seconds, verdict.margin.limit, verdict.margin.method) == (
        120,
        SIZE,
        RATE,
    )
    assert verdict.written_bytes == 100 and verdict.size_bytes == 1800


def test_the_first_limit_to_purge_wins() -> None:
    tracker = BinlogTracker(floor_seconds=0)
    offset = SourceOffset("b.2", 0, ts_sec=0)
    tracker.judge(BinlogReading(0, Expiry(10_000, 2000), FILES, offset))
    grown = (*FILES[:2], BinlogFile("b.3", 300))
    verdict = tracker.judge(BinlogReading(10, Expiry(10_000, 2000), grown, offset))
    assert verdict.margin is not None and verdict.margin.limit == SIZE


def test_files_no_longer_listed_are_forgotten() -> None:
    tracker = BinlogTracker()
    for at in range(5):
        tracker.judge(_read(at, (BinlogFile(f"b.{at}", 10),), None))
    assert list(tracker._seen_newest) == ["b.4"]


def test_a_connector_keeping_up_in_the_open_file_is_not_at_risk_under_a_long_floor() -> None:
    tracker = BinlogTracker(floor_seconds=86400)  # longer than the 600 s expiry
    tracker.judge(_read(0, FILES, SourceOffset("b.3", 150, ts_sec=0)))
    grown = (*FILES[:2], BinlogFile("b.3", 400))
    verdict = tracker.judge(_read(60, grown, SourceOffset("b.3", 390, ts_sec=59)))
    assert verdict.state == OK


def test_an_idle_hes_in_the_open_file_is_not_at_risk() -> None:
    tracker = BinlogTracker(floor_seconds=86400)
    offset = SourceOffset("b.3", 150, ts_sec=0)
    tracker.judge(_read(0, FILES, offset))
    assert tracker.judge(_read(60, FILES, offset)).state == OK


def test_a_stopped_connector_in_the_open_file_of_a_writing_hes_is_at_risk_under_the_floor() -> None:
    tracker = BinlogTracker(floor_seconds=86400)
    offset = SourceOffset("b.3", 150, ts_sec=0)
    tracker.judge(_read(0, FILES, offset))
    grown = (*FILES[:2], BinlogFile("b.3", 400))
    verdict = tracker.judge(_read(60, grown, offset))
    assert verdict.state == AT_RISK
    assert verdict.margin is not None and verdict.margin.method == OPEN_FILE


def test_a_first_round_judges_only_a_margin_at_zero() -> None:
    offset = SourceOffset("b.1", 100, ts_sec=0)
    assert BinlogTracker(floor_seconds=1e9).judge(_read(10, FILES, offset)).state == OK
    assert BinlogTracker().judge(_read(1000, FILES, offset)).state == AT_RISK


def test_a_round_that_could_not_read_keeps_the_count_and_forgets_the_server() -> None:
    tracker = BinlogTracker()
    offset = SourceOffset("b.1", 100, ts_sec=0)
    tracker.judge(_read(0, FILES, offset))
    tracker.judge(_read(60, FILES[1:], offset))
    verdict = tracker.unknown(120, "cannot list the HES's binlog: Access denied")
    assert (verdict.state, verdict.losses, verdict.size_bytes, verdict.expiry) == (
        UNKNOWN,
        1,
        None,
        None,
    )
