"""The Debian packages Vigía needs outside Docker, whether each is installed, and the one
`apt-get install` line that adds the missing ones.

`vigia-stack --demo` checks the demo's three and runs without what is missing; `make test` checks
them all first (tests/preflight.py). `.ci/run` installs the same list.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

JAVA_MAJOR = 17


def java_major(version_output: str) -> int | None:
    """The major version in `java -version` output (`openjdk version "17.0.2"`, `"1.8.0_392"`)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def java_ok() -> bool:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        return False
    try:
        result = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return False
    major = java_major(result.stderr + result.stdout)
    return major is not None and major >= JAVA_MAJOR


def _on_path(*alternatives: str, path: str | None = None) -> Callable[[], bool]:
    """Installed when each name (`a|b`: either) is a program on PATH (or `path`)."""
    return lambda: all(
        any(shutil.which(name, path=path) for name in group.split("|")) for group in alternatives
    )


# Debian package -> whether it is installed, told by the programs the code looks for.
INSTALLED: dict[str, Callable[[], bool]] = {
    "openjdk-17-jre-headless": java_ok,
    "prometheus": _on_path("prometheus", "promtool"),
    "prometheus-alertmanager": _on_path("alertmanager|prometheus-alertmanager", "amtool"),
    "chromium": _on_path("chromium|chromium-browser"),
    "chromium-driver": _on_path("chromedriver"),
    # Debian puts the server in /usr/sbin, off a user's PATH (launcher/mariadb.py looks there).
    "mariadb-server": _on_path(
        "mariadb-install-db", "mariadbd", path=f"{os.environ.get('PATH', '')}:/usr/sbin"
    ),
    "prometheus-mysqld-exporter": _on_path("prometheus-mysqld-exporter|mysqld_exporter"),
    "openssl": _on_path("openssl"),
}


def missing(packages: Sequence[str]) -> list[str]:
    return [package for package in packages if not INSTALLED[package]()]


def install_line(packages: Sequence[str]) -> str:
    return f"sudo apt-get install -y {' '.join(packages)}"
