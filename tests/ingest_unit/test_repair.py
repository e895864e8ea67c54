"""`vigia-ingest repair`'s logic without I/O: the signal, the decision, the wait, the outcome,
and where the signalling user's DSN comes from."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from dataclasses import replace
from pathlib import Path

import pytest

from vigia.ingest.cli import build_parser
from vigia.ingest.completeness import CompletenessReport, InputError
from vigia.ingest.repair import (
    EXIT_REPAIRED,
    EXIT_STILL_SHORT,
    SIGNAL_TYPE,
    Action,
    Waited,
    decide,
    explain,
    outcome,
    snapshot_signal,
    wait_until_repaired,
)
from vigia.ingest.repair_cli import DEFAULT_CONNECT_URL, SIGNAL_DSN_ENV, signal_dsn_text

DAY = dt.date(2026, 11, 20)
COMPLETE = CompletenessReport(
    measure_date=DAY,
    meters=2,
    magnitudes=("AEI",),
    expected=192,
    stored_rows=192,
    distinct_stored=192,
    missing=0,
    duplicates=0,
    unexpected=0,
    expected_from="hes",
)
SHORT = replace(COMPLETE, stored_rows=150, distinct_stored=150, missing=42)


def test_the_signal_is_a_filtered_incremental_snapshot_of_the_day() -> None:
    signal = snapshot_signal(DAY, "vigia-repair-1")
    assert (signal.id, signal.type) == ("vigia-repair-1", SIGNAL_TYPE)
    assert json.loads(signal.data) == {
        "type": "incremental",
        "data-collections": ["hes.measure"],
        "additional-conditions": [
            {"data-collection": "hes.measure", "filter": "measure_date = '2026-11-20'"}
        ],
    }


def test_each_signal_has_an_id_of_its_own_that_fits_the_table() -> None:
    first, second = snapshot_signal(DAY), snapshot_signal(DAY)
    assert first.id != second.id
    assert first.id.startswith("vigia-repair-2026-11-20-") and len(first.id) <= 64


@pytest.mark.parametrize(
    ("report", "force", "action"),
    [
        (COMPLETE, False, Action.NOTHING_TO_DO),
        (COMPLETE, True, Action.REPAIR),
        (SHORT, False, Action.REPAIR),
        (replace(COMPLETE, stored_rows=200, duplicates=8), False, Action.DUPLICATES_ONLY),
        (replace(SHORT, duplicates=8), False, Action.REPAIR),
        (
            replace(COMPLETE, expected=0, stored_rows=0, distinct_stored=0),
            True,
            Action.NOTHING_IN_HES,
        ),
    ],
)
def test_what_to_do_about_a_day(report: CompletenessReport, force: bool, action: Action) -> None:
    assert decide(report, force) is action


def test_a_complete_day_is_said_complete_and_how_to_repair_anyway() -> None:
    sentence = explain(Action.NOTHING_TO_DO, COMPLETE)
    assert "2026-11-20 is complete" in sentence and "--force" in sentence


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_wait_ends_as_soon_as_nothing_is_missing() -> None:
    clock = FakeClock()
    reports = iter([SHORT, replace(SHORT, missing=10), COMPLETE, SHORT])
    seen: list[int] = []
    waited = wait_until_repaired(
        lambda: next(reports), 100, 15, lambda r: seen.append(r.missing), clock, clock.sleep
    )
    assert waited == Waited(COMPLETE, 30.0, timed_out=False)
    assert seen == [42, 10, 0]


def test_the_wait_checks_once_more_at_the_deadline_then_gives_up() -> None:
    clock = FakeClock()
    checks: list[float] = []

    def check() -> CompletenessReport:
        checks.append(clock.now)
        return SHORT

    waited = wait_until_repaired(check, 40, 15, clock=clock, sleep=clock.sleep)
    assert checks == [0, 15, 30, 40]
    assert waited.timed_out and waited.seconds == 40


def test_outcomes() -> None:
    code, sentence = outcome(Waited(COMPLETE, 75.2, False), 3600)
    assert code == EXIT_REPAIRED and sentence.startswith("2026-11-20 repaired in 75 s")
    code, sentence = outcome(Waited(SHORT, 3600, True), 3600)
    assert code == EXIT_STILL_SHORT and "still short after 3600 s" in sentence
    assert "42 missing" in sentence
    doubled = replace(COMPLETE, stored_rows=200, duplicates=8)
    code, sentence = outcome(Waited(doubled, 20, False), 3600)
    assert code == EXIT_STILL_SHORT and "8 measures twice" in sentence


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["repair", "--date", "2026-11-20", *argv])


def test_the_signal_dsn_comes_from_a_file_before_the_environment(tmp_path: Path) -> None:
    dsn_file = tmp_path / "signal.dsn"
    dsn_file.write_text("mysql://hes_signal:s3cret@hes:3306/hes\n")
    env = {SIGNAL_DSN_ENV: "mysql://other@hes/hes"}
    assert signal_dsn_text(_args("--signal-dsn-file", str(dsn_file)), env) == (
        "mysql://hes_signal:s3cret@hes:3306/hes"
    )
    assert signal_dsn_text(_args(), env) == "mysql://other@hes/hes"
    with pytest.raises(InputError, match=SIGNAL_DSN_ENV):
        signal_dsn_text(_args(), {})
    with pytest.raises(InputError, match="cannot read --signal-dsn-file"):
        signal_dsn_text(_args("--signal-dsn-file", str(tmp_path / "absent")), env)


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VIGIA_CONNECT_URL", "VIGIA_CONNECTOR", "VIGIA_REPAIR_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    args = _args()
    assert (args.connect_url, args.connector, args.timeout) == (
        DEFAULT_CONNECT_URL,
        "hes-measure",
        10800.0,
    )
    assert not args.force
    monkeypatch.setenv("VIGIA_REPAIR_TIMEOUT", "120")
    assert _args().timeout == 120.0
