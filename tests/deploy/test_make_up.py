"""`make up` is the README's start command: it must turn a fresh clone into a startable stack."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from compose import ENV_EXAMPLE, REPO, resolved

ENV_LINE_PREFIX = "GRAFANA_ADMIN_PASSWORD="


def _make_env(workdir: Path) -> str:
    shutil.copy(REPO / "Makefile", workdir / "Makefile")
    shutil.copy(ENV_EXAMPLE, workdir / ".env.example")
    subprocess.run(["make", "-s", ".env"], cwd=workdir, check=True, capture_output=True)
    return (workdir / ".env").read_text()


def test_make_up_writes_env_with_a_random_grafana_password(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = _make_env(tmp_path / "a"), _make_env(tmp_path / "b")
    passwords = [
        line.removeprefix(ENV_LINE_PREFIX)
        for text in (first, second)
        for line in text.splitlines()
        if line.startswith(ENV_LINE_PREFIX)
    ]
    assert len(passwords) == 2
    assert all(len(p) >= 20 for p in passwords), passwords
    assert passwords[0] != passwords[1]
    assert "admin" not in passwords


def test_compose_resolves_with_the_generated_env(tmp_path: Path) -> None:
    text = _make_env(tmp_path)
    env = dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )
    services = resolved(env)["services"]
    grafana_env = services["grafana"]["environment"]
    assert grafana_env["GF_SECURITY_ADMIN_PASSWORD"] == env["GRAFANA_ADMIN_PASSWORD"] != ""


def test_make_up_keeps_an_existing_env(tmp_path: Path) -> None:
    first = _make_env(tmp_path)
    subprocess.run(["make", "-s", ".env"], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / ".env").read_text() == first
