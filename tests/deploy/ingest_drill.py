"""The ingest-job drill under vigia-stack, shared by the demo's and the real cluster's test.

The ingest driver (the Python process running the Spark driver, not its restart wrapper) is killed
with SIGKILL, and every run that comes back is killed too until the IngestQueryDown page reaches
the webhook receiver (logs/receiver.log): a job that stays down pages. Then it is left alone: it
runs again, stores new batches, and the page resolves. Throughout, Prometheus, Alertmanager, the
exporter and the Dash app keep running, the same processes, answering their health checks.

Only timings differ from production, in a copy of prometheus/ given as --config-dir: 3 s scrapes
and evaluations, IngestQueryDown's `for:` of 15 s instead of 5 minutes, Alertmanager's group timers
of 1-2 s. The shipped rule files are not changed."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import free_port
from tests.deploy.compose import REPO
from tests.deploy.test_launcher_run import MARKER, marked_processes
from tests.monitoring.servers import fast_alertmanager_config
from tests.scripts import console_script

INTERVAL = "3s"  # scrapes and rule evaluations
ALERT_FOR = "15s"  # IngestQueryDown's `for:` in the drill (5m in production)
# A clean stop waits for the job's running batch: on a loaded machine longer than the 30 s of
# tests/deploy/test_launcher_run.py.
STOP_TIMEOUT = 120.0
# Every component healthy and a first batch stored: about a minute, but on a 2-core machine under
# a load of 25 Spark took 2.5 minutes to start and its first run failed (a Python worker timed out).
START_DEADLINE = 600.0
PAGE_DEADLINE = 120.0  # kill -> page, the job kept down (for: 15 s + scrapes + group_wait)
# page -> the job running and storing again (backoff up to 30 s + Spark's start): 360 s were not
# enough on CI's loaded machine.
BACK_DEADLINE = 600.0
WATCHED = ("prometheus", "alertmanager", "exporter", "dashboard", "receiver")
HEALTH = {
    "exporter": "/healthz",
    "dashboard": "/healthz",
    "prometheus": "/-/ready",
    "alertmanager": "/-/ready",
    "receiver": "/healthz",
}


def fast_config_dir(out: Path) -> Path:
    """prometheus/ with drill timings (module docstring); everything else as shipped."""
    config_dir = out / "prometheus"
    shutil.copytree(REPO / "prometheus", config_dir)
    prometheus = yaml.safe_load((config_dir / "prometheus.yml").read_text())
    prometheus["global"].update(
        {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL, "scrape_timeout": INTERVAL}
    )
    (config_dir / "prometheus.yml").write_text(yaml.safe_dump(prometheus, sort_keys=False))
    alerts_file = config_dir / "rules" / "alerts.yml"
    alerts = yaml.safe_load(alerts_file.read_text())
    rule = next(
        r for g in alerts["groups"] for r in g["rules"] if r.get("alert") == "IngestQueryDown"
    )
    assert rule["for"] == "5m", "the shipped rule this drill shortens"
    rule["for"] = ALERT_FOR
    alerts_file.write_text(yaml.safe_dump(alerts, sort_keys=False))
    fast_alertmanager_config(config_dir / "alertmanager.yml", config_dir / "alertmanager.yml")
    return config_dir


def get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def answers(url: str) -> bool:
    try:
        get(url)
    except OSError:
        return False
    return True


def sample(text: str, name: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                return float(s.value)
    return None


@dataclass
class Stack:
    """A running vigia-stack, its ports and its output."""

    process: subprocess.Popen[bytes]
    ports: dict[str, int]
    run_dir: Path
    output: Path
    marker: str
    wrappers: dict[str, psutil.Process] = field(default_factory=dict)

    def url(self, component: str) -> str:
        return f"http://127.0.0.1:{self.ports[component]}"

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def tail(self, lines: int = 15) -> str:
        """The last `lines` lines of each component, in order: a plain tail can be all one chatty
        component's (Alertmanager retrying a webhook every 10 s), none of the one that failed."""
        kept: dict[str, list[int]] = {}
        every = self.text().splitlines()
        for index, line in enumerate(every):
            component = line.split(" | ", 1)[0].split(" ")[-1] if " | " in line else ""
            kept.setdefault(component, []).append(index)
        shown = sorted(index for indices in kept.values() for index in indices[-lines:])
        return "\n".join(every[index] for index in shown)

    def until(self, check: Callable[[], Any], timeout: float, what: str) -> Any:
        """`check`'s first true result within `timeout` seconds, or a failure with the output."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, f"vigia-stack exited:\n{self.tail()}"
            with contextlib.suppress(OSError, ValueError):
                result = check()
                if result:
                    return result
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout:g} s: {what}\n{self.tail()}")
            time.sleep(0.5)

    def wrapper(self, name: str) -> psutil.Process:
        """The restart wrapper that runs component `name` (it lives as long as the stack)."""
        if name not in self.wrappers:
            for process in marked_processes(self.marker):
                with contextlib.suppress(psutil.Error):
                    cmdline = process.cmdline()
                    if "vigia.launcher.keep_running" in cmdline and "--name" in cmdline:
                        self.wrappers[cmdline[cmdline.index("--name") + 1]] = process
        assert name in self.wrappers, f"no restart wrapper runs {name}"
        return self.wrappers[name]

    def component_pid(self, name: str) -> int | None:
        """The component's own process (the wrapper's child), when one runs."""
        with contextlib.suppress(psutil.Error):
            children = self.wrapper(name).children()
            if children:
                return int(children[0].pid)
        return None

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"{self.url('prometheus')}/api/v1/query?query={urllib.parse.quote(promql)}"
        result: list[dict[str, Any]] = json.loads(get(url))["data"]["result"]
        return result

    def receiver_lines(self, status: str, alertname: str) -> list[str]:
        log = self.run_dir / "logs" / "receiver.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return [line for line in text.splitlines() if f"pager: {status} {alertname} " in line]

    def ingest_metric(self, name: str) -> float | None:
        return sample(get(f"{self.url('ingest-metrics')}/metrics"), name)


@contextlib.contextmanager
def vigia_stack(
    tmp_path: Path,
    marker: str,
    args: list[str],
    env: dict[str, str] | None = None,
    pager_url_file: Path | None = None,
) -> Iterator[Stack]:
    """vigia-stack with its own ports; stopped with SIGINT (Ctrl-C) at the end, which must end it
    cleanly (exit status 0) and leave no process behind. `pager_url_file` gets the URL of the
    stack's own receiver (the demo writes its own)."""
    names = ("exporter", "ingest-metrics", "simulator-metrics", "dashboard", "prometheus")
    ports = {n: free_port() for n in (*names, "alertmanager", "receiver")}
    if pager_url_file is not None:
        pager_url_file.write_text(f"http://127.0.0.1:{ports['receiver']}/pager\n")
    run_dir = tmp_path / "run"
    argv = [console_script("vigia-stack"), *args, "--run-dir", str(run_dir)]
    argv += ["--stop-timeout", str(STOP_TIMEOUT)]
    for name, port in ports.items():
        argv += [f"--{name}-port", str(port)]
    output = tmp_path / "vigia-stack.out"
    with output.open("w") as out:
        process = subprocess.Popen(
            argv,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {}), MARKER: marker},
            start_new_session=True,
        )
    stack = Stack(process, ports, run_dir, output, marker)
    try:
        yield stack
    finally:
        running = marked_processes(marker)
        stopping = len(stack.text())
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=STOP_TIMEOUT + 30)
    stop = stack.text()[stopping:]
    assert code == 0, f"vigia-stack exited {code} after Ctrl-C:\n{stop}"
    _, alive = psutil.wait_procs(list(running), timeout=5)
    leftovers = {(p.pid, running[p]) for p in alive}
    leftovers |= {(p.pid, name) for p, name in marked_processes(marker).items()}
    assert not leftovers, f"still running after Ctrl-C: {leftovers}"


@dataclass
class Timeline:
    """Seconds from the first kill to each event of the drill."""

    events: dict[str, float] = field(default_factory=dict)

    def mark(self, event: str, at: float) -> None:
        self.events.setdefault(event, at)

    def report(self, title: str) -> str:
        lines = [f"{title}:"]
        by_time = sorted(self.events.items(), key=lambda item: item[1])
        lines += [f"  +{at:6.1f} s  {event}" for event, at in by_time]
        return "\n".join(lines)


def wait_until_healthy(stack: Stack, components: list[str]) -> None:
    waiting = {c: stack.url(c) + HEALTH[c] for c in components if c in HEALTH}
    stack.until(
        lambda: not [c for c, url in waiting.items() if not answers(url)],
        START_DEADLINE,
        f"{sorted(waiting)} healthy",
    )
    stack.until(
        lambda: (stack.ingest_metric("vigia_ingest_batches_total") or 0) >= 1,
        START_DEADLINE,
        "the ingest job's first batch",
    )
    rules = json.loads(get(stack.url("prometheus") + "/api/v1/rules"))["data"]["groups"]
    loaded = {r["name"]: r for g in rules for r in g["rules"]}
    assert loaded["IngestQueryDown"]["duration"] == 15, "the drill's copy of the rule"
    stack.until(
        lambda: stack.query('up{job="vigia-ingest"} == 1'), 60, "Prometheus scraping the job"
    )


def run_drill(stack: Stack, produce: Callable[[], int], title: str) -> Timeline:
    """The drill (module docstring). `produce` writes new measures to the job's topic and returns
    how many are valid. Returns the timeline, also printed."""
    watched = {name: stack.component_pid(name) for name in WATCHED}
    assert all(watched.values()), watched
    unhealthy: list[str] = []

    def check_watched() -> None:
        for name in WATCHED:
            if stack.component_pid(name) != watched[name]:
                unhealthy.append(f"{name} is not the process it was")
            if not answers(stack.url(name) + HEALTH[name]):
                unhealthy.append(f"{name} did not answer {HEALTH[name]}")

    # With the drill's short `for:`, the job's own start (Spark: tens of seconds) may have paged:
    # the drill starts once that page, if any, is resolved, and counts only what comes after.
    stack.until(
        lambda: (
            not stack.query('ALERTS{alertname="IngestQueryDown"}')
            and len(stack.receiver_lines("firing", "IngestQueryDown"))
            == len(stack.receiver_lines("resolved", "IngestQueryDown"))
        ),
        BACK_DEADLINE,
        "no IngestQueryDown pending, firing or unresolved before the kill",
    )
    pages = len(stack.receiver_lines("firing", "IngestQueryDown"))
    timeline = Timeline()
    driver = stack.component_pid("ingest")
    assert driver is not None and "vigia.ingest.cli" in psutil.Process(driver).cmdline()
    killed = {driver}
    os.kill(driver, signal.SIGKILL)
    start = time.monotonic()
    timeline.mark(f"kill -9 of the ingest driver (pid {driver})", 0.0)

    def since_kill() -> float:
        return time.monotonic() - start

    def keep_down_until_paged() -> bool:
        """Kills every run that comes back until the page is at the receiver."""
        now = time.monotonic() - start
        if stack.query('up{job="vigia-ingest"} == 0'):
            timeline.mark('Prometheus: up{job="vigia-ingest"} == 0', now)
        if stack.query('ALERTS{alertname="IngestQueryDown", alertstate="pending"}'):
            timeline.mark("IngestQueryDown pending in Prometheus", now)
        if stack.query('ALERTS{alertname="IngestQueryDown", alertstate="firing"}'):
            timeline.mark("IngestQueryDown firing in Prometheus", now)
        if len(stack.receiver_lines("firing", "IngestQueryDown")) > pages:
            timeline.mark("IngestQueryDown page at the receiver (receiver.log)", now)
            return True
        pid = stack.component_pid("ingest")
        if pid is not None and pid not in killed:
            killed.add(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            timeline.mark(f"run {len(killed)} of the job killed too (pid {pid})", now)
        check_watched()
        return False

    stack.until(keep_down_until_paged, PAGE_DEADLINE, "the IngestQueryDown page")
    assert len(killed) >= 2, "the job came back at least once and was killed again"

    # Valid measures the job had stored, and how many more were written, once it ran again.
    produced: list[tuple[float, int]] = []

    steps = [
        "'ingest running again' logged (its /metrics answers)",
        "the job back: vigia_ingest_query_active 1",
        "new measures stored by the job",
        "IngestQueryDown resolved at the receiver",
    ]

    def recovered() -> bool:
        """Marks each step of the recovery as it happens; true once all have."""
        if re.search(r"ingest running again \(http://\S+ answers\)", stack.text()):
            timeline.mark(steps[0], since_kill())
        if not produced and stack.ingest_metric("vigia_ingest_query_active") == 1:
            timeline.mark(steps[1], since_kill())
            produced.append((stack.ingest_metric("vigia_ingest_valid_rows_total") or 0, produce()))
        stored = stack.ingest_metric("vigia_ingest_valid_rows_total") or 0
        if produced and stored >= sum(produced[0]):
            timeline.mark(steps[2], since_kill())
        if len(stack.receiver_lines("resolved", "IngestQueryDown")) > pages:
            timeline.mark(steps[3], since_kill())
        check_watched()
        return all(step in timeline.events for step in steps)

    try:
        stack.until(recovered, BACK_DEADLINE, "the job running, storing again, the page resolved")
    except AssertionError as failure:
        first, _, tails = str(failure).partition("\n")
        missing = "; ".join(step for step in steps if step not in timeline.events)
        raise AssertionError(
            f"{first}; missing: {missing}\n{timeline.report(title)}\n{tails}"
        ) from None
    text = stack.text()
    restarts = re.findall(r"ingest exited with signal SIGKILL; starting again in (\S+) s", text)
    print(f"\n{timeline.report(title)}\n  backoff delays: {', '.join(restarts)} s")
    assert not unhealthy, unhealthy
    ran = time.monotonic() - start
    # Prometheus saw the job down, and the watchers up, throughout the drill.
    window = f"{int(ran) + 1}s"
    assert stack.query(f'min_over_time(up{{job="vigia-ingest"}}[{window}]) == 0')
    for job in ("prometheus", "alertmanager"):
        assert stack.query(f'min_over_time(up{{job="{job}"}}[{window}]) == 1'), job
    assert "stopped (rc=" not in text, "no component ended before the stop"
    assert len(restarts) == len(killed), (restarts, killed)
    return timeline
