"""docs/configuration.md is the CLIs' own definitions, and every flag the docs name exists.

The reference is generated (vigia.launcher.config_reference); a flag or variable added to a
parser without regenerating it fails here. The docs' flags are checked against the console
scripts, the `python -m` helpers and benchmarks that define them, and the named outside tools.
"""

from __future__ import annotations

import re
from pathlib import Path

from vigia.launcher.config_reference import commands, every_flag, render

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*[a-z0-9])(?![\w.-])")
# Flags of the other programs the docs give commands for, by program.
OUTSIDE_TOOLS = {
    "kafka-*.sh": {
        "--add", "--add-config", "--all-topic-partitions", "--allow-principal", "--alter",
        "--bootstrap-server", "--cluster", "--command-config", "--delete", "--delete-config",
        "--describe", "--election-type", "--entity-name", "--entity-type", "--execute",
        "--from-beginning", "--group", "--id", "--operation", "--partition", "--property",
        "--resource-pattern-type", "--status", "--time", "--timeout-ms",
        "--unavailable-partitions", "--under-min-isr-partitions", "--under-replicated-partitions",
    },
    "docker compose": {"--build", "--tail"},
    "pip": {"--upgrade", "--no-deps"},
    "systemctl": {"--now"},
    "adduser": {"--system", "--group", "--home", "--no-create-home"},
    "spark-submit": {"--packages", "--driver-java-options"},
    "hadoop classpath": {"--glob"},
    "pytest": {"--dist"},
}  # fmt: skip
# Metric rows of docs/metrics.md name the flags of the program that serves the metric.
METRIC_ROW = re.compile(r"^\| `((?:vigia|kafka)_[a-z_]+)`", re.M)
SERVED_BY = {"vigia_ingest_": "vigia-ingest", "vigia_simulator_": "vigia-simulate"}


def _defined_in_sources() -> set[str]:
    """Flags the helpers (`python -m vigia.launcher.…`) and benchmarks define as string literals,
    and the `--no-` forms of those that are `BooleanOptionalAction`s."""
    sources = [*(REPO / "launcher").glob("*.py"), *(REPO / "benchmarks").glob("*.py")]
    texts = [p.read_text() for p in sources]
    flags = {f for t in texts for f in re.findall(r"\"(--[a-z][a-z0-9-]*)\"", t)}
    negated = {
        f"--no-{f[2:]}"
        for t in texts
        for f in re.findall(r"\"(--[a-z][a-z0-9-]*)\",[^)]*?BooleanOptionalAction", t)
    }
    return flags | negated


def test_the_committed_reference_is_the_generated_one() -> None:
    committed = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == render(commands()), (
        "docs/configuration.md is stale: python -m vigia.launcher.config_reference "
        "> docs/configuration.md"
    )


def test_every_setting_has_its_environment_variable_except_per_run_inputs() -> None:
    per_run = {"--date", "--force", "--sample-size", "--dry-run", "--drop-in", "--check", "--help"}
    lacking = [
        (c.name, s.flags[0])
        for c in commands()
        for s in c.settings
        if not s.env and s.flags[0] not in per_run
    ]
    assert not lacking, f"settings without an environment variable: {lacking}"


def test_every_flag_the_docs_name_exists() -> None:
    known = every_flag() | _defined_in_sources() | set().union(*OUTSIDE_TOOLS.values())
    unknown = sorted(
        (str(path.relative_to(REPO)), flag)
        for path in DOCS
        for flag in FLAG.findall(path.read_text(encoding="utf-8"))
        if flag not in known | {"--help"}
    )
    assert not unknown, f"flags no CLI, helper, benchmark or named tool has: {unknown}"


def test_a_metric_row_names_the_flags_of_the_program_serving_it() -> None:
    """docs/metrics.md gave the ingest job's completeness the exporter's --hes-count-interval."""
    flags: dict[str, set[str]] = {}
    for command in commands():
        program = command.name.split()[0]
        flags.setdefault(program, set()).update(f for s in command.settings for f in s.flags)
    wrong = []
    for line in (REPO / "docs" / "metrics.md").read_text(encoding="utf-8").splitlines():
        if not (row := METRIC_ROW.match(line)):
            continue
        metric = row.group(1)
        program = next((p for k, p in SERVED_BY.items() if metric.startswith(k)), "vigia-exporter")
        others = every_flag() - flags[program]
        wrong += [(metric, f) for f in FLAG.findall(line) if f in others]
    assert not wrong, f"flags of another program in metric rows: {wrong}"
