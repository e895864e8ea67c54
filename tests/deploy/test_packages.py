"""What the tests need from the machine: `.ci/run` installs it and finds the real systems, `make
test` checks it first (tests/preflight.py), and CI fails, naming it, when something is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import preflight
from tests.deploy.compose import REPO
from vigia.launcher import packages

CI_RUN = REPO / ".ci" / "run"


def _preflight(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.preflight"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _bare_env(**extra: str) -> dict[str, str]:
    """This environment without the real-stack variables, CI or Java, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("VIGIA_TEST_") and k not in {"CI", "JAVA_HOME"}
    }
    return {**env, **extra}


def test_ci_installs_every_package_the_code_and_tests_look_for() -> None:
    listed = re.search(r"apt_packages=\((.*?)\n\)", CI_RUN.read_text(), re.S)
    assert listed is not None
    installed = {n for line in listed.group(1).splitlines() for n in line.split("#")[0].split()}
    assert set(packages.INSTALLED) | set(preflight.TEST_ONLY_PROGRAMS) <= installed


def test_outside_ci_a_missing_piece_is_named_with_its_fix_and_the_tests_run() -> None:
    result = _preflight(_bare_env(PATH=str(Path(sys.executable).parent)))
    assert result.returncode == 0, result.stderr
    wanted = [*packages.INSTALLED, *preflight.TEST_ONLY_PROGRAMS]
    assert f"`sudo apt-get install -y {' '.join(wanted)}`" in result.stderr
    assert "Apache Kafka: VIGIA_TEST_KAFKA_HOME=''" in result.stderr
    assert "are skipped, saying so" in result.stderr
    assert "Traceback" not in result.stderr


def test_in_ci_a_missing_runtime_stops_the_run(tmp_path: Path) -> None:
    env = _bare_env(CI="true", VIGIA_TEST_KAFKA_HOME=str(tmp_path))
    result = _preflight(env)
    assert result.returncode == 1
    assert f"missing: Apache Kafka: VIGIA_TEST_KAFKA_HOME='{tmp_path}'" in result.stderr
    assert "missing: kafka_exporter" in result.stderr


def test_an_uninstalled_or_too_old_python_requirement_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requires = [
        "pyspark>=4.2,<5; extra == 'ingest'",
        "nonexistent-dist>=1; extra == 'test'",
        "pytest>=999; extra == 'test'",
        "only-for-docs>=1; extra == 'docs'",
    ]
    monkeypatch.setattr(preflight.metadata, "requires", lambda _name: requires)
    assert preflight.missing_python_requirements() == [
        "nonexistent-dist (not installed)",
        f"pytest {pytest.__version__} (needs >=999)",
    ]


def test_ci_without_shared_fails_in_seconds_naming_each_runtime(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(CI_RUN, checkout / ".ci" / "run")
    began = time.monotonic()
    result = subprocess.run(
        ["bash", str(checkout / ".ci" / "run")],
        env=_bare_env(CI="true"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert time.monotonic() - began < 30
    named = [line for line in result.stderr.splitlines() if "the real-stack suites need" in line]
    assert [line.split(" need ")[1].split(" (")[0] for line in named] == [
        "Apache Kafka",
        "Kafka Connect + Debezium",
        "kafka_exporter",
    ]
