"""The systemd units of packaging/systemd: valid for systemd-analyze, hardened, run as the vigia
user with their settings from /etc/default, and those files naming every variable the component
reads."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.requirements import require
from tests.scripts import console_script
from vigia.dashboard.config import build_parser as dashboard_parser
from vigia.exporter.config import build_parser as exporter_parser
from vigia.ingest.config import build_parser as ingest_parser

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "packaging" / "systemd"
DEFAULTS = ROOT / "packaging" / "default"
INSTALLED_BIN = "/opt/vigia/bin/"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
COMPONENTS = {
    "vigia-exporter": exporter_parser(os.environ),
    "vigia-ingest": ingest_parser(),
    "vigia-dashboard": dashboard_parser(),
}
HARDENING = {
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "RestrictSUIDSGID": "yes",
}
# systemd-analyze security's scale: 0 (locked down) to 10; "OK" is under 2.
MOST_EXPOSURE = 2.0
_ASSIGNMENT = re.compile(r"#?([A-Z][A-Z0-9_]*)=\S*.*")


def service(name: str) -> dict[str, list[str]]:
    """The [Service] section's keys, each with every value it is given."""
    keys: dict[str, list[str]] = {}
    section = ""
    for line in (UNITS / f"{name}.service").read_text().splitlines():
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            keys.setdefault(key, []).append(value)
    return keys


def test_every_unit_runs_as_vigia_from_its_etc_default_file() -> None:
    assert sorted(p.stem for p in UNITS.glob("*.service")) == sorted(COMPONENTS)
    for name in COMPONENTS:
        keys = service(name)
        assert keys["User"] == ["vigia"], name
        assert keys["EnvironmentFile"] == [f"-/etc/default/{name}"], name
        assert keys["Restart"] == ["on-failure"], name
        assert keys["RestartPreventExitStatus"] == ["2"], name  # a configuration error
        assert keys["ExecStart"][0].startswith(INSTALLED_BIN + name), name
        for key, value in HARDENING.items():
            assert keys.get(key) == [value], f"{name}: {key}"
        assert (DEFAULTS / name).is_file(), name


def test_the_ingest_job_writes_only_in_its_state_directory() -> None:
    keys = service("vigia-ingest")
    assert keys["StateDirectory"] == ["vigia/ingest"]
    assert keys["ReadWritePaths"] == ["/var/lib/vigia/ingest"]
    settings = dict(
        line.split("=", 1)
        for line in (DEFAULTS / "vigia-ingest").read_text().splitlines()
        if line and not line.startswith("#")
    )
    for variable in ("VIGIA_INGEST_OUTPUT", "VIGIA_INGEST_QUARANTINE", "VIGIA_INGEST_CHECKPOINT"):
        assert settings[variable].startswith("/var/lib/vigia/ingest/"), variable


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_etc_default_file_names_every_variable_the_component_reads(name: str) -> None:
    text = (DEFAULTS / name).read_text()
    named = set()
    for line in text.splitlines():
        if line.startswith("# ") or not line:
            continue
        match = _ASSIGNMENT.fullmatch(line)
        assert match, f"{name}: {line!r} is neither a comment nor VARIABLE=value"
        named.add(match.group(1))
    read = set(re.findall(r"VIGIA_[A-Z0-9_]+", COMPONENTS[name].format_help()))
    assert read - named == set(), f"{name}: variables missing from packaging/default/{name}"
    assert {v for v in named if v.startswith("VIGIA_")} - read == set(), "unknown variables"


def verifiable_copies(directory: Path) -> list[Path]:
    """The units with ExecStart pointing at this installation's console scripts:
    systemd-analyze verify checks that the command exists and is executable."""
    copies = []
    for name in COMPONENTS:
        text = (UNITS / f"{name}.service").read_text()
        script = console_script(name)
        copy = directory / f"{name}.service"
        copy.write_text(text.replace(INSTALLED_BIN + name, script))
        copies.append(copy)
    return copies


def test_systemd_analyze_verify_finds_nothing_to_say(tmp_path: Path) -> None:
    require(SYSTEMD_ANALYZE is not None, "systemd-analyze", "apt-get install systemd")
    assert SYSTEMD_ANALYZE is not None
    copies = verifiable_copies(tmp_path)
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", *map(str, copies)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Unknown keys and bad values are warnings with exit code 0: any output is a finding.
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_systemd_analyze_verify_would_see_a_mistake(tmp_path: Path) -> None:
    require(SYSTEMD_ANALYZE is not None, "systemd-analyze", "apt-get install systemd")
    assert SYSTEMD_ANALYZE is not None
    unit = verifiable_copies(tmp_path)[0]
    unit.write_text(unit.read_text().replace("ProtectHome=yes", "ProtectHom=yes"))
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", str(unit)], capture_output=True, text=True, timeout=120
    )
    assert "Unknown key 'ProtectHom'" in done.stdout + done.stderr


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_exposure_is_low(name: str, tmp_path: Path) -> None:
    require(SYSTEMD_ANALYZE is not None, "systemd-analyze", "apt-get install systemd")
    assert SYSTEMD_ANALYZE is not None
    unit = next(u for u in verifiable_copies(tmp_path) if u.stem == name)
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    level = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert level, done.stdout + done.stderr
    assert float(level.group(1)) < MOST_EXPOSURE, done.stdout


def test_sysusers_creates_the_vigia_user() -> None:
    lines = [
        line.split()
        for line in (ROOT / "packaging" / "sysusers.d" / "vigia.conf").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines[0][:2] == ["u", "vigia"]
