"""No test passes CI by not running (a pytest plugin, loaded by tests/conftest.py).

A test skips when something it needs is missing: a Debian program, the real Kafka or Connect
runtime, the JMX agent, a Python package. On a developer's machine that is a skip whose reason says
what to install. In CI (`CI=true`) every skip is turned into a failure with the same reason: a
half-failed `apt-get install` or a missing `../shared` must make CI red, not quietly smaller.
Either way the run ends with one line that counts the skipped tests, and their reasons.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.requirements import IN_CI

SKIPPED_IN_CI = "skipped in CI, which must run every test: "


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # (file, line, "Skipped: reason")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail_if_skipped(report: pytest.TestReport | pytest.CollectReport) -> None:
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = SKIPPED_IN_CI + _reason(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    outcome = yield
    _fail_if_skipped(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[Any]:
    outcome = yield
    _fail_if_skipped(outcome.get_result())


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line, whatever happened: how many skipped, and why."""
    skipped = terminalreporter.stats.get("skipped", [])
    in_ci = [
        r
        for r in terminalreporter.stats.get("failed", []) + terminalreporter.stats.get("error", [])
        if str(r.longrepr).startswith(SKIPPED_IN_CI)
    ]
    reasons = Counter(_reason(r) for r in skipped)
    reasons.update(str(r.longrepr).removeprefix(SKIPPED_IN_CI) for r in in_ci)
    detail = "; ".join(f"{count} × {reason}" for reason, count in reasons.most_common())
    line = f"skipped: {len(skipped)}"
    if in_ci:
        line += f", failed in CI for a skip: {len(in_ci)}"
    terminalreporter.write_line(f"{line}{' — ' + detail if detail else ''}", bold=bool(reasons))
