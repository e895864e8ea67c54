"""The Debian packages `make test` and `make demo` name when missing, and `.ci/run` installs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from launcher import packages
from tests.deploy.compose import REPO


def test_ci_installs_every_package_the_code_looks_for() -> None:
    script = (REPO / ".ci" / "run").read_text()
    listed = re.search(r"apt_packages=\((.*?)\n\)", script, re.S)
    assert listed is not None
    installed = {n for line in listed.group(1).splitlines() for n in line.split("#")[0].split()}
    assert set(packages.INSTALLED) <= installed


def test_one_apt_get_line_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    result = subprocess.run(
        [sys.executable, "-m", "launcher.packages"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0  # the tests run anyway, skipping what needs a missing program
    line = f"`sudo apt-get install -y {' '.join(packages.INSTALLED)}`"
    assert line in result.stderr
    assert "Traceback" not in result.stderr
