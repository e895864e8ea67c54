"""Drill of the paging path's dead man's switch: a real Prometheus evaluates
prometheus/rules/watchdog.yml, a real Alertmanager with the rendered prometheus/alertmanager.yml
sends the Watchdog to the heartbeat checker (`python -m vigia.launcher.heartbeat`, as vigia-stack
runs it), and the checker logs "heartbeat missed" once Prometheus is stopped (SIGTERM by PID),
"heartbeat back" once it runs again, and "heartbeat missed" again when Alertmanager stops.

Only timings differ from production: 1 s evaluations, Prometheus' resend delay of 1 s (so an alert
it stops sending expires in Alertmanager after 4 s, not 4 minutes), the heartbeat route's
repeat_interval of 2 s with 1 s ticks (1m and 15 s shipped), a gap of 10 s (180 s shipped)."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import free_port
from tests.monitoring.servers import (
    PROMETHEUS_DIR,
    REPO,
    Receiver,
    derived_prometheus_config,
    render_alertmanager_config,
)
from tests.servers import Server, start, start_alertmanager, start_prometheus, wait_until
from vigia.dashboard.sources import ALERT_QUERY

pytestmark = pytest.mark.prometheus

GAP = 10.0
RESEND = 1.0  # Prometheus --rules.alert.resend-delay; alerts it stops sending expire after 4x
BEAT_EVERY = 3.0  # the test route: repeat_interval 2s, checked on 1s group_interval ticks
TICK = 1.0  # the checker looks at the clock every min(1 s, gap / 10)
MARGIN = 15.0  # a busy two-core machine
# From the SIGTERM to "heartbeat missed": the last alert expires, the last beat, the gap, a tick.
MISSED_WITHIN = 4 * RESEND + BEAT_EVERY + GAP + TICK + MARGIN


def _fast_heartbeat_route(rendered: Path, out: Path) -> Path:
    config = yaml.safe_load(rendered.read_text())
    (route,) = [r for r in config["route"]["routes"] if r["receiver"] == "heartbeat"]
    route.update({"group_wait": "0s", "group_interval": "1s", "repeat_interval": "2s"})
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


class Checker:
    """`python -m vigia.launcher.heartbeat` on a port known before it starts (Alertmanager's config
    names it), started once Prometheus and Alertmanager run so that its gap counts from there."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.server: Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [sys.executable, "-m", "vigia.launcher.heartbeat", "--port", str(self.port)]
        self.server = start("heartbeat", cmd, self.port, self.log, "/healthz")

    def lines(self, text: str) -> list[str]:
        return [x for x in self.log.read_text().splitlines() if text in x]

    def logged_at(self, text: str, nth: int = 1) -> float | None:
        """Unix time of the nth log line containing `text` (common/logs.py's asctime)."""
        found = self.lines(text)
        if len(found) < nth:
            return None
        stamp = " ".join(found[nth - 1].split()[:2])
        return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()

    def status(self) -> dict[str, object]:
        return dict(httpx.get(f"{self.url}/status", timeout=5).json())


@pytest.fixture
def checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Checker]:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("VIGIA_HEARTBEAT_GAP_SECONDS", f"{GAP:g}")  # the variable, not the flag
    checker = Checker(free_port(), tmp_path / "heartbeat.log")
    yield checker
    if checker.server:
        checker.server.stop()


def test_stopping_prometheus_or_alertmanager_stops_the_heartbeat_and_the_checker_says_so(
    binaries: None, receiver: Receiver, checker: Checker, tmp_path: Path
) -> None:
    rendered = render_alertmanager_config(
        tmp_path / "rendered.yml",
        receiver.url("pager"),
        receiver.url("ticket"),
        f"{checker.url}/heartbeat",
    )
    am_config = _fast_heartbeat_route(rendered, tmp_path / "alertmanager.yml")
    am_port = free_port()
    alertmanager = start_alertmanager(am_config, tmp_path / "am", tmp_path / "am.log", am_port)
    prom_port = free_port()
    config = derived_prometheus_config(
        tmp_path,
        {"prometheus": [f"127.0.0.1:{prom_port}"]},
        [PROMETHEUS_DIR / "rules" / "watchdog.yml"],
        alertmanager=f"127.0.0.1:{am_port}",
    )

    def prometheus() -> Server:
        return start_prometheus(
            config, tmp_path / "data", tmp_path / "prometheus.log", prom_port,
            extra=[f"--rules.alert.resend-delay={RESEND:g}s"],
        )  # fmt: skip

    prom = prometheus()
    try:
        checker.start()
        assert checker.status()["gap_seconds"] == GAP
        # Heartbeats arrive, again and again: the time since the last one keeps going back to 0.
        wait_until(lambda: checker.lines("heartbeat received"), 60, "the first heartbeat")
        resets, last = 0, 0.0

        def beats() -> bool:
            nonlocal resets, last
            since = float(checker.status()["seconds_since_beat"])  # type: ignore[arg-type]
            resets += since < last
            last = since
            return resets >= 4

        wait_until(beats, 4 * BEAT_EVERY + 2 * MARGIN, "four more heartbeats", interval=0.1)
        assert not checker.lines("heartbeat missed")
        # Active in Alertmanager, left out of the Dash app's alert lists (the query it sends).
        listed = httpx.get(f"{alertmanager.url}/api/v2/alerts", timeout=5).json()
        assert [a["labels"]["alertname"] for a in listed] == ["Watchdog"]
        shown = httpx.get(f"{alertmanager.url}/api/v2/alerts", params=ALERT_QUERY, timeout=5)
        assert shown.json() == []
        assert not [
            a for p in ("pager", "ticket") for n in receiver.payloads(p) for a in n["alerts"]
            if a["labels"]["alertname"] == "Watchdog"
        ], "the heartbeat must reach neither the pager nor the ticket receiver"  # fmt: skip

        # Prometheus stops: the heartbeat stops, the checker says so within the bound.
        stopped, pid = time.time(), prom.process.pid
        prom.process.send_signal(signal.SIGTERM)
        prom.process.wait(timeout=30)
        exited = time.time()
        wait_until(
            lambda: checker.logged_at("heartbeat missed"), MISSED_WITHIN + 5, "heartbeat missed"
        )
        missed = checker.logged_at("heartbeat missed")
        assert missed is not None
        (line,) = checker.lines("heartbeat missed")
        silent = float(line.split(" notification for ")[1].split("s ")[0])
        last_beat = missed - silent

        prom = prometheus()
        restarted = time.time()
        wait_until(lambda: checker.logged_at("heartbeat back"), 30, "heartbeat back")
        back = checker.logged_at("heartbeat back")
        assert back is not None

        # Alertmanager stops: nothing sends the heartbeat either.
        am_stopped = time.time()
        alertmanager.process.send_signal(signal.SIGTERM)
        alertmanager.process.wait(timeout=30)
        wait_until(
            lambda: checker.logged_at("heartbeat missed", 2), MISSED_WITHIN + 5, "missed again"
        )
        am_missed = checker.logged_at("heartbeat missed", 2)
        assert am_missed is not None
    finally:
        prom.stop()
        alertmanager.stop()

    timeline = "\n".join(
        f"  {t - stopped:+7.1f}s  {what}"
        for t, what in [
            (stopped, f"Prometheus sent SIGTERM (pid {pid})"),
            (exited, "Prometheus exited"),
            (last_beat, "last heartbeat received by the checker"),
            (missed, f'checker logs "heartbeat missed" (gap {GAP:g}s)'),
            (restarted, "Prometheus started again"),
            (back, 'checker logs "heartbeat back"'),
            (am_stopped, "Alertmanager sent SIGTERM"),
            (am_missed, 'checker logs "heartbeat missed"'),
        ]
    )
    print(f"\nheartbeat drill timeline (bound {MISSED_WITHIN:g}s):\n{timeline}")
    assert missed - stopped < MISSED_WITHIN, timeline
    assert missed - last_beat >= GAP, timeline  # never before the gap
    assert am_missed - am_stopped < BEAT_EVERY + GAP + TICK + MARGIN, timeline
    assert len(checker.lines("heartbeat missed")) == 2  # one line per state change
    assert len(checker.lines("heartbeat back")) == 1
