"""The dead man's switch's state machine (launcher/heartbeat_watch.py), without I/O."""

from __future__ import annotations

import pytest

from vigia.launcher.heartbeat_watch import (
    DEFAULT_GAP_SECONDS,
    State,
    Watch,
    beat,
    check,
    is_heartbeat,
    start,
)

GAP = 10.0


def test_one_line_per_state_change_missed_once_and_back_once() -> None:
    watch = start(100.0, GAP)
    lines: list[str] = []

    def step(kind: str, now: float) -> Watch:
        nonlocal watch
        watch, change = (beat if kind == "beat" else check)(watch, now)
        if change:
            lines.append(change.message)
        return watch

    step("check", 105.0)
    step("beat", 106.0)  # first beat
    for now in (107.0, 110.0, 116.0):
        step("check", now)
    step("beat", 115.0)
    step("check", 125.0)  # exactly the gap: not yet
    assert step("check", 125.5).state is State.MISSED
    for now in (130.0, 200.0, 500.0):  # still missing: no more lines
        step("check", now)
    assert step("beat", 501.0).state is State.ALIVE
    step("beat", 502.0)
    assert lines == [
        "heartbeat received: the paging path works (6s after start)",
        "heartbeat missed: no Watchdog notification for 10s since the last one (gap 10s): "
        "Prometheus, its rule evaluation or Alertmanager is down or cannot reach this checker "
        "(runbook Watchdog)",
        "heartbeat back after 386s without one",
    ]


def test_a_checker_that_never_hears_a_beat_says_so_after_the_gap() -> None:
    watch, change = check(start(0.0, GAP), GAP + 1)
    assert watch.state is State.MISSED and change is not None
    assert "11s since the checker started" in change.message
    watch, change = beat(watch, 40.0)
    assert watch.state is State.ALIVE and change and change.message.startswith("heartbeat back")


def test_the_default_gap_survives_one_lost_beat_of_the_shipped_route() -> None:
    # Alertmanager's heartbeat route sends every 60-75 s: one lost beat leaves 150 s of silence.
    assert 2 * 75 < DEFAULT_GAP_SECONDS < 3 * 75
    with pytest.raises(ValueError, match="positive"):
        start(0.0, 0)


def _payload(status: str, name: str = "Watchdog") -> dict[str, object]:
    return {"status": status, "alerts": [{"status": status, "labels": {"alertname": name}}]}


def test_only_a_firing_watchdog_is_a_heartbeat() -> None:
    assert is_heartbeat(_payload("firing"))
    assert not is_heartbeat(_payload("resolved"))  # Prometheus stopped sending it
    assert not is_heartbeat(_payload("firing", "IngestQueryDown"))
    assert not is_heartbeat({"alerts": "nope"})
    assert not is_heartbeat({})


def test_gap_from_flag_or_environment_with_the_documented_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vigia.launcher.heartbeat import parse_args

    monkeypatch.delenv("VIGIA_HEARTBEAT_GAP_SECONDS", raising=False)
    assert parse_args([]).gap == DEFAULT_GAP_SECONDS == 180
    monkeypatch.setenv("VIGIA_HEARTBEAT_GAP_SECONDS", "30")
    assert parse_args([]).gap == 30
    assert parse_args(["--gap", "12.5"]).gap == 12.5  # the flag wins
    monkeypatch.setenv("VIGIA_HEARTBEAT_GAP_SECONDS", "soon")
    with pytest.raises(SystemExit) as exit_:
        parse_args([])
    assert exit_.value.code == 2 and "'soon' is not a number of seconds" in capsys.readouterr().err
