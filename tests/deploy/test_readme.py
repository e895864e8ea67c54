"""The README is the newcomer's first contact: short, its two commands first, its links true."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
RUNBOOKS_INDEX = (REPO / "docs" / "runbooks" / "README.md").read_text(encoding="utf-8")
MAX_LINES = 160
MAX_LINE_LENGTH = 200


def test_first_screen_gives_the_two_commands_and_ci_runs_the_test_one() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    assert blocks[:2] == ["make demo\n", "make test\n"]
    assert "make up\n" in blocks, "the Docker stack's command"
    first_screen = README.splitlines()[:40]
    assert "make demo" in first_screen and "make test" in first_screen
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.rstrip().endswith("make test"), "CI must run the README's test command"
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^up: .env\n\tdocker compose up -d --build$", makefile, re.M)
    assert re.search(
        r"^demo: \$\(VENV\)/\.installed\n\t\$\(VENV\)/bin/vigia-stack --demo$", makefile, re.M
    )


def test_readme_is_short_and_its_lines_readable() -> None:
    lines = README.splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines"
    long = [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > MAX_LINE_LENGTH]
    assert not long, f"lines over {MAX_LINE_LENGTH} characters: {long}"


def test_readme_carries_no_issue_numbers_or_dates() -> None:
    assert not re.findall(r"\bissue \d+|#\d+\b|\b20\d\d-\d\d-\d\d\b", README)


def test_every_alert_is_in_the_runbooks_index_with_its_severity() -> None:
    alerts = {
        r["alert"]: r["labels"]["severity"]
        for path in sorted((REPO / "prometheus" / "rules").glob("*.yml"))
        for g in yaml.safe_load(path.read_text())["groups"]
        for r in g["rules"]
        if "alert" in r
    }
    rows = dict(
        re.findall(r"^\| \[(\w+)\]\(\1\.md\) \| (critical|warning|none) \|", RUNBOOKS_INDEX, re.M)
    )
    assert rows == alerts


def test_relative_links_exist() -> None:
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        links = re.findall(r"\]\(([^)#]+)\)", path.read_text(encoding="utf-8"))
        missing = [
            link for link in links if "://" not in link and not (path.parent / link).exists()
        ]
        assert not missing, f"{path.name}: {missing}"
