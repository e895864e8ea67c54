"""exporter/'s folders are its architecture (docs/development.md#layout): pyproject.toml's
import-linter contracts hold, and they fail on a copy where a folder imports upward or the model
imports I/O."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.scripts import console_script

ROOT = Path(__file__).resolve().parents[2]


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    # lint-imports analyses the packages found from its working directory first: the copy, if any.
    return subprocess.run(
        [console_script("lint-imports"), "--no-cache"],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},  # its report is wrapped at the terminal's width
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_exporter_keeps_its_layers() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("module", "injected", "broken"),
    [
        (
            "model/filters.py",
            "import socket",
            "vigia.exporter.model is not allowed to import socket",
        ),
        (
            "model/state.py",
            "from vigia.exporter.kafka import adapter",
            "vigia.exporter.model is not allowed to import vigia.exporter.kafka",
        ),
        (
            "kafka/topic_tail.py",
            "from vigia.exporter.web import api",
            "vigia.exporter.kafka is not allowed to import vigia.exporter.web",
        ),
    ],
)
def test_an_impure_model_or_an_upward_import_breaks_a_contract(
    tmp_path: Path, module: str, injected: str, broken: str
) -> None:
    for package in ("exporter", "common"):
        shutil.copytree(
            ROOT / package,
            tmp_path / "vigia" / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    shutil.copy(ROOT / "vigia" / "__init__.py", tmp_path / "vigia")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / "vigia" / "exporter" / module).open("a") as source:
        source.write(f"\n{injected}\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert broken in result.stdout
