"""tests/strict.py: in CI a skipped test is a failed one, and every run counts its skips."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.deploy.compose import REPO

SKIPPING = """
import pytest

def test_passes():
    assert True is not False

def test_needs_a_program():
    pytest.skip("frobnicate is missing: apt-get install frobnicate")

@pytest.mark.skipif(True, reason="no SIGSTOP here")
def test_marked():
    assert False
"""
MODULE_SKIP = 'import pytest\npytest.importorskip("no_such_module_anywhere")\n'


def _pytest(tmp_path: Path, source: str, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_it.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    options = ["-p", "tests.strict", "-p", "no:cacheprovider", "-q", "-c", os.devnull]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=REPO,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_outside_ci_skips_are_skips_and_the_last_lines_count_them(tmp_path: Path) -> None:
    result = _pytest(tmp_path, SKIPPING, ci=None)
    assert result.returncode == 0, result.stdout
    assert (
        "skipped: 2 — 1 × frobnicate is missing: apt-get install frobnicate; 1 × no SIGSTOP here"
        in result.stdout
    )


def test_in_ci_every_skip_fails_with_its_reason(tmp_path: Path) -> None:
    result = _pytest(tmp_path, SKIPPING, ci="true")
    assert result.returncode == 1
    # The skip in the test's body fails the call, the skipif mark fails the setup: an error.
    assert re.search(r"^1 failed, 1 passed, .*1 error in ", result.stdout, re.M)
    assert "skipped in CI, which must run every test: frobnicate is missing" in result.stdout
    assert "skipped: 0, failed in CI for a skip: 2" in result.stdout


def test_in_ci_a_module_that_skips_at_import_fails(tmp_path: Path) -> None:
    result = _pytest(tmp_path, MODULE_SKIP, ci="true")
    assert result.returncode != 0
    assert "could not import 'no_such_module_anywhere'" in result.stdout
    assert "skipped: 0, failed in CI for a skip: 1" in result.stdout


def test_without_skips_the_count_is_zero(tmp_path: Path) -> None:
    result = _pytest(tmp_path, "def test_one():\n    assert 1 + 1 == 2\n", ci="true")
    assert result.returncode == 0
    assert result.stdout.splitlines()[-2:][0].startswith("skipped: 0")
