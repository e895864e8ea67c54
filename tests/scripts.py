"""The console scripts of the installation that runs the tests: `make test` runs .venv's Python
without activating it, so its scripts are not on PATH (a `vigia-stack` found there would be
another installation's)."""

from __future__ import annotations

import sysconfig
from pathlib import Path


def console_script(name: str) -> str:
    path = Path(sysconfig.get_path("scripts")) / name
    assert path.is_file(), f"{path} is not installed (make test installs Vigía into .venv)"
    return str(path)
