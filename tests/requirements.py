"""What a test needs from this machine. Outside CI a missing piece is a skip that says how to get
it; in CI (`CI=true`) tests/strict.py turns that skip into a failure."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require(condition: bool, what: str, how: str) -> None:
    """Skip, naming `what` is missing and `how` to provide it, unless `condition` holds."""
    if not condition:
        pytest.skip(f"{what} is missing: {how}")
