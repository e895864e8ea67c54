"""Before any test runs (`make test` runs `python -m tests.preflight` first): is everything the
tests need on this machine? One line per missing piece, saying how to get it.

Outside CI the tests that need a missing piece skip, saying so, and this exits 0. In CI
(`CI=true`) a missing piece would turn those tests into failures after a long run: this exits 1
within seconds instead, naming what is missing.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.realstack.kafka_cluster import find_jmx_agent
from tests.realstack.plugin import (
    BOOTSTRAP_ENV,
    CONNECT_HOME_ENV,
    CONNECT_URL_ENV,
    KAFKA_EXPORTER_ENV,
    KAFKA_HOME_ENV,
)
from tests.requirements import IN_CI
from vigia.common.logs import setup_logging
from vigia.launcher import packages

log = logging.getLogger("vigia-preflight")

# Debian programs only tests use (the product's own are launcher/packages.py's).
TEST_ONLY_PROGRAMS = {"curl": "curl"}
# The extras `make test` installs (pyproject.toml's `all`).
EXTRAS = ("exporter", "ingest", "dashboard", "launcher", "test")


def missing_debian_packages() -> list[str]:
    absent = packages.missing(list(packages.INSTALLED))
    test_only = [pkg for pkg, program in TEST_ONLY_PROGRAMS.items() if not shutil.which(program)]
    return absent + test_only


def missing_python_requirements(distribution: str = "vigia") -> list[str]:
    """Each requirement of `distribution` and its test extras that is not installed as asked."""
    absent = []
    for text in metadata.requires(distribution) or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker and not any(marker.evaluate({"extra": extra}) for extra in EXTRAS):
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            absent.append(f"{requirement.name} (not installed)")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            absent.append(f"{requirement.name} {version} (needs {requirement.specifier})")
    return sorted(set(absent))


def missing_runtimes(env: dict[str, str]) -> Iterator[str]:
    """The real-stack suites' runtimes: a Kafka distribution (with the JMX agent beside it) or the
    user's cluster, a Connect + Debezium runtime or the user's worker, and kafka_exporter."""
    kafka_home = env.get(KAFKA_HOME_ENV, "")
    if not env.get(BOOTSTRAP_ENV):
        if not (Path(kafka_home) / "bin" / "kafka-server-start.sh").is_file():
            yield (
                f"Apache Kafka: {KAFKA_HOME_ENV}={kafka_home!r} is no Kafka distribution "
                f"(or set {BOOTSTRAP_ENV} to your own cluster)"
            )
        elif find_jmx_agent(Path(kafka_home)) is None:
            yield f"the JMX exporter agent: no jmx_prometheus_javaagent-*.jar beside {kafka_home}"
    connect_home = env.get(CONNECT_HOME_ENV, "")
    if not env.get(CONNECT_URL_ENV) and not (Path(connect_home) / "libs").is_dir():
        yield (
            f"Kafka Connect + Debezium: {CONNECT_HOME_ENV}={connect_home!r} has no libs/ "
            f"(or set {CONNECT_URL_ENV} to your own worker)"
        )
    exporter = env.get(KAFKA_EXPORTER_ENV, "")
    if not (exporter and os.access(exporter, os.X_OK)):
        yield f"kafka_exporter: {KAFKA_EXPORTER_ENV}={exporter!r} is no executable"


def main() -> int:
    setup_logging(os.environ.get("VIGIA_LOG_LEVEL", "INFO"))
    problems = []
    if debian := missing_debian_packages():
        problems.append(f"Debian packages {', '.join(debian)}: `{packages.install_line(debian)}`")
    if python := missing_python_requirements():
        problems.append(f"Python packages {', '.join(python)}: `make` reinstalls .venv")
    problems += list(missing_runtimes(dict(os.environ)))
    level = logging.ERROR if IN_CI else logging.WARNING
    for problem in problems:
        log.log(level, "missing: %s", problem)
    if problems and IN_CI:
        log.error("CI runs every test: install what is missing (docs/development.md)")
        return 1
    if problems:
        log.warning("the tests that need what is missing are skipped, saying so")
    return 0


if __name__ == "__main__":
    sys.exit(main())
