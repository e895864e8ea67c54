"""docs/configuration.md, generated from the console scripts' own argparse definitions.

    python -m vigia.launcher.config_reference > docs/configuration.md

Each flag's environment variables are the ones its definition reads while the parser is built
(`default=os.environ.get(...)`), plus those its help names (settings read after parsing, such as
the dashboard's); defaults are the parser's with an empty environment. tests/deploy/
test_configuration_reference.py fails when the committed file differs from this output, so a new
flag or variable cannot go without its line.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vigia.common.slo.cli import build_parser as slo_parser
from vigia.dashboard.config import build_parser as dashboard_parser
from vigia.exporter.config import build_parser as exporter_parser
from vigia.ingest.cli import build_parser as ingest_parser
from vigia.ingest.simulator.cli import build_parser as simulator_parser
from vigia.launcher.cli import build_parser as stack_parser

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
_ENV_NAME = re.compile(r"\bVIGIA_[A-Z0-9_]*[A-Z0-9]\b")
# A default the definition leaves to be resolved after parsing, as its help states it.
_HELP_DEFAULT = re.compile(r"\bdefault:? ([^);]+)")


@dataclass(frozen=True)
class Setting:
    flags: tuple[str, ...]
    env: tuple[str, ...]
    default: str
    help: str


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    settings: tuple[Setting, ...]


class _RecordingEnviron(Mapping[str, str]):
    """An empty environment that remembers every name asked of it."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __getitem__(self, key: str) -> str:
        self.asked.append(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        self.asked.append(str(key))
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@contextlib.contextmanager
def _recording(environ: _RecordingEnviron) -> Iterator[dict[argparse.Action, list[str]]]:
    """While parsers are built: os.environ is `environ`, and each action added is given the names
    read since the previous one (its `default=` is evaluated just before add_argument runs)."""
    read: dict[argparse.Action, list[str]] = {}
    original = argparse._ActionsContainer.add_argument

    def add_argument(self: argparse._ActionsContainer, *args: Any, **kwargs: Any) -> Any:
        action = original(self, *args, **kwargs)
        read[action] = list(dict.fromkeys(environ.asked))
        environ.asked.clear()
        return action

    saved = os.environ
    # Replaced, not cleared: the definitions must read nothing of this machine's environment.
    os.environ = environ  # type: ignore[assignment]  # noqa: B003
    argparse._ActionsContainer.add_argument = add_argument  # type: ignore[method-assign]
    try:
        yield read
    finally:
        os.environ = saved  # noqa: B003
        argparse._ActionsContainer.add_argument = original  # type: ignore[method-assign]


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser, dict[argparse.Action, list[str]]]]:
    builders: tuple[tuple[str, Callable[[_RecordingEnviron], argparse.ArgumentParser]], ...] = (
        ("vigia-exporter", exporter_parser),
        ("vigia-ingest", lambda _env: ingest_parser()),
        ("vigia-simulate", lambda _env: simulator_parser()),
        ("vigia-dashboard", lambda _env: dashboard_parser()),
        ("vigia-stack", lambda _env: stack_parser()),
        ("vigia-slo", lambda _env: slo_parser()),
    )
    for name, build in builders:
        environ = _RecordingEnviron()
        with _recording(environ) as read:
            parser = build(environ)
        for command, sub in _with_subcommands(name, parser):
            yield command, sub, read


def _with_subcommands(
    name: str, parser: argparse.ArgumentParser
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield name, parser
        return
    for action in subparsers:
        for sub_name, sub in action.choices.items():
            yield f"{name} {sub_name}", sub


def _default(value: object) -> str:
    if value is None or value == [] or value == "":
        return "–"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value)
    # The simulator's start defaults to the moment it runs; shown as such, not as today's date.
    today = dt.datetime.now(dt.UTC).date()
    if text.startswith((today.isoformat(), (today - dt.timedelta(days=1)).isoformat())):
        return "computed at start"
    for installed in (PACKAGE_ROOT / "vigia", PACKAGE_ROOT):
        text = text.replace(str(installed), "<vigia>")
    return text


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": prog, "default": _default(action.default)}
    return " ".join(text.split())


def _env_names(action: argparse.Action, read: list[str], prog: str) -> tuple[str, ...]:
    # argparse itself reads COLUMNS and LINES: only Vigía's own variables are settings.
    names = [*read, *_ENV_NAME.findall(_help(action, prog))]
    return tuple(dict.fromkeys(n for n in names if _ENV_NAME.fullmatch(n)))


def _shown_default(action: argparse.Action, prog: str) -> str:
    if action.default is None and (stated := _HELP_DEFAULT.search(_help(action, prog))):
        return stated.group(1).strip()
    return _default(action.default)


@functools.cache
def commands() -> tuple[Command, ...]:
    found = []
    for name, parser, read in _parsers():
        settings = tuple(
            Setting(
                flags=tuple(action.option_strings) or (action.dest,),
                env=_env_names(action, read.get(action, []), name),
                default=_shown_default(action, name),
                help=_help(action, name),
            )
            for action in parser._actions
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        )
        about = " ".join(f"{parser.description or ''} {parser.epilog or ''}".split())
        found.append(Command(name, about, settings))
    return tuple(found)


def every_flag() -> frozenset[str]:
    flags = (f for c in commands() for s in c.settings for f in s.flags)
    return frozenset(f for f in flags if f.startswith("--"))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(found: tuple[Command, ...]) -> str:
    lines = [
        "# Configuration reference",
        "",
        "Generated by `python -m vigia.launcher.config_reference > docs/configuration.md` from the",
        "console scripts' own definitions; do not edit by hand. Every setting is a flag and an",
        "environment variable; a flag wins over its variable. `<command> --help` prints the same.",
        "Invalid configuration exits with code 2 and one line saying why. Shared by the Kafka",
        "clients: `VIGIA_KAFKA_OPTIONS` (comma- or newline-separated librdkafka settings, for",
        "passwords: flags are visible in `ps`). The Docker Compose variables are in",
        "`.env.example`.",
    ]
    for command in found:
        lines += ["", f"## `{command.name}`", ""]
        if command.description:
            lines += [command.description, ""]
        lines += ["| flag | environment | default | meaning |", "|---|---|---|---|"]
        for s in command.settings:
            flags = ", ".join(f"`{f}`" for f in s.flags)
            env = ", ".join(f"`{e}`" for e in s.env) or "–"
            lines.append(f"| {flags} | {env} | {_cell(s.default)} | {_cell(s.help)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render(commands()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
