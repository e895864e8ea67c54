"""One line per failure in the run's short summary (a pytest plugin, loaded by tests/conftest.py).

On CI pytest prints each failure's whole message in the summary at the end of the run, and a
drill's message carries every component's last lines: the summary of one failed drill then
fills what CI keeps of its output, and the other failures' lines are lost. The summary keeps the
message's first line, up to 500 characters; the failure's own section still shows all of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

LONGEST = 500


def first_line(message: str) -> str:
    line = message.strip().split("\n", 1)[0]
    return line if len(line) <= LONGEST else line[: LONGEST - 1] + "…"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    outcome = yield
    crash = getattr(outcome.get_result().longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        crash.message = first_line(crash.message)
