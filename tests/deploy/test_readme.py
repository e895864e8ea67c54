"""The README is the newcomer's entry point: its commands, flags, alerts and links must be true."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.scripts import console_script

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
COMMANDS = [
    ["vigia-exporter"],
    ["vigia-ingest", "run"],
    ["vigia-ingest", "completeness"],
    ["vigia-ingest", "repair"],
    ["vigia-simulate", "live"],
    ["vigia-simulate", "backfill"],
    ["vigia-simulate", "outage"],
    ["vigia-dashboard"],
    ["vigia-stack"],
]
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")


def _flags(command: list[str]) -> set[str]:
    script, *subcommand = command
    result = subprocess.run(
        [console_script(script), *subcommand, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(FLAG.findall(result.stdout)) - {"--help"}


def test_first_screen_gives_the_three_commands() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    assert blocks[:3] == ["make demo\n", "make test\n", "make up\n"]
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.rstrip().endswith("make test"), "CI must run the README's test command"
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^up: .env\n\tdocker compose up -d --build$", makefile, re.M)
    assert re.search(
        r"^demo: \$\(VENV\)/\.installed\n\t\$\(VENV\)/bin/vigia-stack --demo$", makefile, re.M
    )


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_flag_is_documented(command: list[str]) -> None:
    documented = set(FLAG.findall(README))
    missing = sorted(_flags(command) - documented)
    assert not missing, f"{' '.join(command)} flags missing from README.md: {missing}"


def test_every_alert_is_listed_with_its_runbook() -> None:
    alerts = {
        r["alert"]: r["labels"]["severity"]
        for path in sorted((REPO / "prometheus" / "rules").glob("*.yml"))
        for g in yaml.safe_load(path.read_text())["groups"]
        for r in g["rules"]
        if "alert" in r
    }
    rows = dict(
        re.findall(
            r"^\| (\w+) \| (critical|warning|none) \| \[docs/runbooks/\1\.md\]", README, re.M
        )
    )
    assert rows == alerts


def test_relative_links_exist() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert not missing
