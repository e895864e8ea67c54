"""What the runbooks tell on-call to look at and to run exists, and they hold steps, not stories.

- Dash pages (**Ingest** page) and panels (**"Catch-up and retention"**) are titles in the Dash
  app's layout, taken from the page builders themselves (with recorded data and with every backend
  down); Grafana panels ((in Grafana: **"…"**)) are titles in grafana/dashboards/*.json. A plain
  "quoted" panel title, or a Grafana "board", outside that form fails (docs/runbooks/README.md).
- Every `vigia-*` command line names a subcommand and flags its console script defines, and every
  `--flag` quoted alone is a flag of one of them; Kafka tools exist in Kafka's bin/.
- No issue numbers, dates or drill narratives (docs/drills.md keeps those).

Every runbook under docs/runbooks/ is read: one added for a new alert follows the same rules.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from dash import dcc, html

from tests.dashboard.test_dashboard_views import recorded_context
from tests.monitoring.servers import REPO
from vigia.dashboard.data import Fetched, Unreachable, Window
from vigia.dashboard.pages import PAGES
from vigia.dashboard.views.common import PageContext

RUNBOOKS = sorted((REPO / "docs" / "runbooks").glob("*.md"))
GRAFANA_BOARDS = sorted((REPO / "grafana" / "dashboards").glob("*.json"))
IDS = [p.name for p in RUNBOOKS]

PANEL = re.compile(r'\*\*"([^"*]+)"\*\*')
PAGE = re.compile(r"\*\*([^\"*]+)\*\* page\b")
GRAFANA_CLAUSE = re.compile(r"Grafana\b.*$")  # to the end of the paragraph or list item
PLAIN_QUOTE = re.compile(r'(?<![*\w])"([^"\n]{2,80})"(?!\*)')
CODE_BLOCK = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`]+)`")  # may wrap, as prose does
# A count the card adds to its title: "Partitions (68)", "Out-of-sync replicas now: 0".
COUNT_SUFFIX = re.compile(r"(\s*\(\d+\)|:\s*\d+)$")


def _walk_titles(tree: Any) -> Iterator[str]:
    if isinstance(tree, list | tuple):
        for item in tree:
            yield from _walk_titles(item)
        return
    if isinstance(tree, dcc.Graph):
        yield str(tree.figure["layout"]["title"]["text"])
    if isinstance(tree, html.H3) and isinstance(tree.children, str):
        yield tree.children
    # The titled boxes of the Overview's lights and the Pipeline's hops.
    is_label = "light-label" in (getattr(tree, "className", None) or "").split()
    if isinstance(tree, html.Div) and is_label and isinstance(tree.children, str):
        yield tree.children
    children = getattr(tree, "children", None)
    if children is not None and not isinstance(children, str):
        yield from _walk_titles(children)


@cache
def dash_panels() -> frozenset[str]:
    """Card, chart, light and hop titles of every page, built from recorded data and with
    backends down."""
    down = Fetched(
        cluster=Unreachable("exporter", "connection refused"),
        alerts=Unreachable("Alertmanager", "connection refused"),
        instant={},
        ranged={},
    )
    titles: set[str] = set()
    for page in PAGES:
        for ctx in (recorded_context(page.path), PageContext(down, Window(0, 3600, 15), 3600)):
            titles.update(COUNT_SUFFIX.sub("", t) for t in _walk_titles(page.build(ctx)))
    return frozenset(titles)


DASH_PAGES = frozenset(p.title for p in PAGES)


@cache
def grafana_panels() -> frozenset[str]:
    def walk(panels: list[dict[str, Any]]) -> Iterator[str]:
        for panel in panels:
            if panel.get("title"):
                yield panel["title"]
            yield from walk(panel.get("panels") or [])

    return frozenset(
        t for path in GRAFANA_BOARDS for t in walk(json.loads(path.read_text())["panels"])
    )


def prose(path: Path) -> str:
    """The runbook without code blocks and code spans."""
    return CODE_SPAN.sub("", CODE_BLOCK.sub("", path.read_text(encoding="utf-8")))


def test_the_layouts_yield_titles() -> None:
    """The extraction itself can fail: known titles of each surface are found."""
    assert {"Catch-up and retention", "Spark cluster", "Hop lag"} <= dash_panels()
    assert {"Last batch by phase", "Connected to the HES binlog"} <= grafana_panels()
    assert {"Ingest", "Pipeline"} <= DASH_PAGES


def blocks(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text joined into one line) of each paragraph and list item."""
    start, lines = 0, []
    for number, line in enumerate(text.splitlines(), 1):
        new_item = re.match(r"\s*(-|\d+\.|#+)\s", line) is not None
        if (not line.strip() or new_item) and lines:
            yield start, " ".join(lines)
            lines = []
        if line.strip():
            start = number if not lines else start
            lines.append(line.strip())
    if lines:
        yield start, " ".join(lines)


@pytest.mark.parametrize("path", RUNBOOKS, ids=IDS)
def test_named_panels_and_pages_exist_on_their_surface(path: Path) -> None:
    problems = []
    for number, block in blocks(prose(path)):
        grafana = GRAFANA_CLAUSE.search(block)
        dash_part = block[: grafana.start()] if grafana else block
        for title in PANEL.findall(dash_part):
            if title not in dash_panels():
                problems.append(f'{number}: **"{title}"** is not a Dash panel title')
        for title in PANEL.findall(grafana.group(0) if grafana else ""):
            if title not in grafana_panels():
                problems.append(f'{number}: **"{title}"** is not a Grafana panel title')
        for title in PAGE.findall(block):
            if title not in DASH_PAGES:
                problems.append(f"{number}: **{title}** page is not a Dash page")
        for quoted in PLAIN_QUOTE.findall(block):
            if quoted in dash_panels() | grafana_panels():
                problems.append(f'{number}: "{quoted}": cite panels as **"{quoted}"**')
        if re.search(r"\bboards?\b", block) and not grafana:
            problems.append(f"{number}: a board is Grafana's: say so, and cite the Dash app first")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "path", [p for p in RUNBOOKS if p.name != "README.md"], ids=[i for i in IDS if i != "README.md"]
)
def test_every_runbook_points_at_the_dash_app(path: Path) -> None:
    text = prose(path)
    dash_cited = [t for t in PANEL.findall(text) if t in dash_panels()] + PAGE.findall(text)
    assert dash_cited, f"{path.name} names no Dash page or panel (docs/runbooks/README.md)"


# ------------------------------------------------------------------ commands


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from vigia.dashboard.config import build_parser as dashboard_parser
    from vigia.exporter.config import build_parser as exporter_parser
    from vigia.ingest.cli import build_parser as ingest_parser
    from vigia.ingest.simulator.cli import build_parser as simulate_parser
    from vigia.launcher.cli import build_parser as stack_parser

    return {
        "vigia-exporter": exporter_parser({}),
        "vigia-ingest": ingest_parser(),
        "vigia-simulate": simulate_parser(),
        "vigia-dashboard": dashboard_parser(),
        "vigia-stack": stack_parser(),
    }


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for action in parser._actions for o in action.option_strings}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def check_command(words: list[str], parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """What is wrong with one `vigia-*` command line (words after the script name included)."""
    script, *rest = words
    parser = parsers.get(script)
    if parser is None:
        return [f"{script} is not a console script of the project"]
    subcommands = _subcommands(parser)
    if subcommands:
        if not rest or rest[0] not in subcommands:
            return [f"{' '.join(words)}: {script} needs one of {sorted(subcommands)}"]
        parser, rest = subcommands[rest[0]], rest[1:]
    options = _options(parser)
    return [
        f"{' '.join(words)}: {script} has no {flag}"
        for word in rest
        if word.startswith("--")
        for flag in [word.split("=", 1)[0]]
        if flag not in options
    ]


def command_lines(text: str) -> Iterator[list[str]]:
    """`vigia-*` command lines: code spans, and code block lines, that start with a script name
    followed by arguments (a name alone, e.g. the group `vigia-ingest`, is no command)."""
    code = [m.group(0).strip(" \t`") for m in CODE_BLOCK.finditer(text)]
    code += [" ".join(span.split()) for span in CODE_SPAN.findall(CODE_BLOCK.sub("", text))]
    for chunk in code:
        for line in chunk.replace("\\\n", " ").splitlines():
            if re.match(r"\s*vigia-[a-z]+\s+\S", line):
                yield shlex.split(line.replace("<", "").replace(">", ""), posix=False)


def test_command_check_can_fail() -> None:
    parsers = _parsers()
    assert check_command(["vigia-ingest", "completeness", "--date", "D"], parsers) == []
    assert check_command(["vigia-ingest", "replay", "--date", "D"], parsers)
    assert check_command(["vigia-stack", "--no-such-flag"], parsers)
    assert list(command_lines("run `vigia-ingest completeness --date D --hes-dsn ...`")) == [
        ["vigia-ingest", "completeness", "--date", "D", "--hes-dsn", "..."]
    ]


@pytest.mark.parametrize("path", RUNBOOKS, ids=IDS)
def test_vigia_commands_and_flags_exist(path: Path) -> None:
    parsers = _parsers()
    text = path.read_text(encoding="utf-8")
    problems = [p for words in command_lines(text) for p in check_command(words, parsers)]
    every_flag = set().union(*(_options(p) for p in parsers.values()))
    for parser in parsers.values():
        for sub in _subcommands(parser).values():
            every_flag |= _options(sub)
    for span in CODE_SPAN.findall(CODE_BLOCK.sub("", text)):
        span = " ".join(span.split())
        if re.fullmatch(r"--[a-z][a-z0-9-]*", span):
            flag = span
            if flag not in every_flag:
                problems.append(f"`{span}` is no flag of a vigia-* command")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_kafka_tools_exist() -> None:
    home = os.environ.get("VIGIA_TEST_KAFKA_HOME")
    if not home:
        pytest.skip(
            "VIGIA_TEST_KAFKA_HOME is not set: no Kafka distribution to check tools against"
        )
    tools = {m for path in RUNBOOKS for m in re.findall(r"kafka-[a-z-]+\.sh", path.read_text())}
    assert tools, "the runbooks name no Kafka tool: the pattern is wrong"
    missing = sorted(t for t in tools if not (Path(home) / "bin" / t).is_file())
    assert not missing, missing


# ------------------------------------------------------------------ steps, not stories

NARRATIVE = [
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
    (re.compile(r"(?<![\w&])#\d+\b"), "an issue number"),
    (re.compile(r"\b(19|20)\d\d-\d\d(-\d\d)?\b"), "a date"),
    (re.compile(r"(?<!docs/)\bdrills?\b", re.I), "a drill narrative (docs/drills.md)"),
]


@pytest.mark.parametrize("path", RUNBOOKS, ids=IDS)
def test_runbooks_hold_no_issue_numbers_dates_or_drills(path: Path) -> None:
    text = path.read_text(encoding="utf-8").replace("YYYY-MM-DD", "")
    found = [
        f"{text.count(chr(10), 0, m.start()) + 1}: {what}: {m.group(0)!r}"
        for pattern, what in NARRATIVE
        for m in pattern.finditer(text)
    ]
    assert not found, f"{path.name}:\n" + "\n".join(found)


def test_the_narrative_check_can_fail() -> None:
    for sample in ("as in issue 23", "see #12", "on 2026-11-26", "the real-stack drill"):
        assert any(p.search(sample) for p, _ in NARRATIVE), sample
