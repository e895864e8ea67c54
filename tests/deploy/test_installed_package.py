"""The installed package is the product. A wheel built from what the image copies (the COPY lines
of docker/vigia/Dockerfile) and installed into a fresh virtualenv, used from a directory outside
the checkout: it adds no generic top-level module, and its vigia-stack plans Prometheus and
Alertmanager with the rules, routes and renderer installed with it, which promtool and amtool
accept."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.servers import AMTOOL, MISSING, PROMTOOL, run

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"),
]

ROOT = Path(__file__).resolve().parents[2]
GENERIC = ("common", "exporter", "ingest", "dashboard", "launcher")


@dataclass(frozen=True)
class Installed:
    venv: Path
    site_packages: Path
    outside: Path  # a working directory outside the checkout

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        # Nothing of the caller's: no VIGIA_* setting, no PYTHONPATH into the checkout.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIGIA_", "PYTHON"))}
        return subprocess.run(
            argv, cwd=self.outside, env=env, capture_output=True, text=True, timeout=120
        )


def _image_sources(dest: Path) -> None:
    """The files the image's `pip install .` sees, links kept as links (vigia/ is links)."""
    dockerfile = (ROOT / "docker" / "vigia" / "Dockerfile").read_text()
    for line in re.findall(r"^COPY (?!--)(.+)$", dockerfile, re.M):
        *sources, target = line.split()
        for source in sources:
            path = ROOT / source
            if path.is_dir():  # `COPY common ./common`
                ignore = shutil.ignore_patterns("__pycache__")
                shutil.copytree(path, dest / target, symlinks=True, ignore=ignore)
            else:  # `COPY pyproject.toml README.md ./`
                (dest / target).mkdir(parents=True, exist_ok=True)
                shutil.copy(path, dest / target)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    source, wheels, venv = base / "source", base / "wheels", base / "venv"
    _image_sources(source)
    # Offline and without build isolation: the test venv's setuptools builds it.
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    built = run([*build, "--quiet", "--wheel-dir", str(wheels), str(source)], timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = wheels.glob("vigia-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    done = run([*install, "--no-index", "--quiet", str(wheel)], timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # Its dependencies: the test venv's site-packages, appended to sys.path. Only a .pth file
    # in site-packages itself is run, so the test venv's editable install (a .pth import hook
    # mapping `vigia` to the checkout) does not come along.
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    outside = base / "elsewhere"
    outside.mkdir()
    return Installed(venv=venv, site_packages=site, outside=outside)


def test_the_package_adds_one_top_level_name_vigia(installed: Installed) -> None:
    names = {p.name.split(".")[0].split("-")[0] for p in installed.site_packages.iterdir()}
    assert "vigia" in names
    assert not names & set(GENERIC), sorted(names)
    found = installed.run(
        str(installed.venv / "bin" / "python"),
        "-c",
        "import importlib.util as u, sys, vigia\n"
        f"print(vigia.__file__); print([n for n in {GENERIC!r} if u.find_spec(n)])",
    )
    assert found.returncode == 0, found.stderr
    location, importable = found.stdout.splitlines()
    assert location == str(installed.site_packages / "vigia" / "__init__.py")
    assert importable == "[]"


def test_the_runbooks_and_the_boards_are_installed(installed: Installed) -> None:
    package = installed.site_packages / "vigia"
    runbooks = sorted(p.name for p in (package / "dashboard" / "runbooks").glob("*.md"))
    assert runbooks == sorted(p.name for p in (ROOT / "docs" / "runbooks").glob("*.md"))
    boards = sorted(p.name for p in (package / "grafana-dashboards").glob("*.json"))
    assert boards == sorted(p.name for p in (ROOT / "grafana" / "dashboards").glob("*.json"))
    jmx = sorted(p.name for p in (package / "prometheus").glob("jmx-*.yml"))
    assert jmx == sorted(p.name for p in (ROOT / "prometheus").glob("jmx-*.yml"))


def test_vigia_stack_plans_alerting_with_the_installed_config(installed: Installed) -> None:
    run_dir = installed.outside / "run"
    planned = installed.run(
        str(installed.venv / "bin" / "vigia-stack"),
        *("--bootstrap-servers", "127.0.0.1:9", "--dry-run", "--run-dir", str(run_dir)),
    )
    assert planned.returncode == 0, planned.stderr
    procfile = (run_dir / "Procfile").read_text()
    names = [line.split(":")[0] for line in procfile.splitlines()]
    planned_names = ["exporter", "ingest", "dashboard", "prometheus", "alertmanager", "heartbeat"]
    assert names == planned_names, procfile

    # Every module the Procfile runs is the installed one.
    modules = sorted(set(re.findall(r" -m (\S+)", procfile)))
    assert modules and all(m.startswith("vigia.") for m in modules), modules
    where = installed.run(
        str(installed.venv / "bin" / "python"),
        "-c",
        f"import importlib.util as u\nfor m in {modules!r}: print(u.find_spec(m).origin)",
    )
    assert where.returncode == 0, where.stderr
    assert all(
        Path(origin).is_relative_to(installed.site_packages) for origin in where.stdout.split()
    )

    packaged = installed.site_packages / "vigia" / "prometheus"
    config = run_dir / "prometheus" / "prometheus.yml"
    patterns = yaml.safe_load(config.read_text())["rule_files"]
    assert patterns == [str(packaged / "rules" / "*.yml")]
    rules = sorted(str(p) for p in packaged.glob("rules/*.yml"))
    assert len(rules) >= 3, rules
    checked = run([str(PROMTOOL), "check", "rules", *rules])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    checked = run([str(PROMTOOL), "check", "config", "--syntax-only", str(config)])
    assert checked.returncode == 0, checked.stdout + checked.stderr

    alertmanager = run_dir / "alertmanager" / "alertmanager.yml"
    checked = run([str(AMTOOL), "check-config", str(alertmanager)])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "receivers" in yaml.safe_load(alertmanager.read_text())


def test_the_drop_in_comes_from_the_installed_config(installed: Installed) -> None:
    out = installed.outside / "drop-in"
    written = installed.run(
        str(installed.venv / "bin" / "vigia-stack"),
        *("--drop-in", str(out), "--console-url", "https://vigia.example.org"),
    )
    assert written.returncode == 0, written.stderr
    packaged = installed.site_packages / "vigia" / "prometheus"
    assert sorted(p.name for p in (out / "rules").glob("*.yml")) == sorted(
        p.name for p in packaged.glob("rules/*.yml")
    )
    checked = run([str(PROMTOOL), "check", "rules", *map(str, (out / "rules").glob("*.yml"))])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    jobs = yaml.safe_load((out / "scrape-configs.yml").read_text())["scrape_configs"]
    assert {"vigia-exporter", "vigia-ingest"} <= {job["job_name"] for job in jobs}
