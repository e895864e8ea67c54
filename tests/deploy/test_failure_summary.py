"""tests/summary.py: on CI the run's last lines name every failure in a line each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.deploy.compose import REPO

FAILING = """
def test_a_drill():
    tails = "\\n".join(f"component {n} | its last line" for n in range(200))
    raise AssertionError(f"not within 600 s: the job storing again\\n{tails}")

def test_another():
    assert 1 + 1 == 3
"""


def _pytest_ci(tmp_path: Path, *plugins: str) -> str:
    (tmp_path / "test_it.py").write_text(FAILING)
    options = [arg for plugin in plugins for arg in ("-p", plugin)]
    quick = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # dash's and xdist's plugins are not needed
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", "-q", "-rf",
         "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "CI": "true", "PYTHONPATH": str(REPO), **quick},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout
    return result.stdout


def _summary(stdout: str) -> list[str]:
    """The summary's lines from each test's name on."""
    lines = stdout.split("short test summary info", 1)[1].splitlines()[1:-1]
    return [line.split("test_it.py::", 1)[-1] for line in lines]


def test_each_failure_is_one_line_of_the_summary_and_its_section_keeps_the_whole_message(
    tmp_path: Path,
) -> None:
    stdout = _pytest_ci(tmp_path, "tests.summary")
    assert _summary(stdout) == [
        "test_a_drill - AssertionError: not within 600 s: the job storing again",
        "test_another - assert (1 + 1) == 3",
    ]
    assert "component 199 | its last line" in stdout


def test_without_it_pytest_on_ci_prints_the_whole_message_in_the_summary(tmp_path: Path) -> None:
    assert len(_summary(_pytest_ci(tmp_path))) > 200
