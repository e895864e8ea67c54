"""The committed Grafana boards (grafana/dashboards/*.json), flattened for tests."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DASHBOARDS = REPO / "grafana" / "dashboards"
VARIABLE = re.compile(r"\$\{([a-zA-Z_]\w*)\}|\$([a-zA-Z_]\w*)")
# Grafana's built-ins as Grafana would fill them for a 6-hour view of a 15 s scrape interval.
BUILTINS = {"__rate_interval": "1m", "__interval": "1m", "__range": "6h"}


@dataclass(frozen=True)
class Target:
    board: str
    panel_id: int
    panel: str
    ref: str
    expr: str
    instant: bool

    @property
    def id(self) -> str:
        return f"{self.board}#{self.panel_id}{self.ref} {self.panel}"


@dataclass(frozen=True)
class Variable:
    board: str
    name: str
    query: str


def load() -> dict[str, dict[str, Any]]:
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(DASHBOARDS.glob("*.json"))
    }


def targets() -> list[Target]:
    return [
        Target(uid, p["id"], p["title"], t["refId"], t["expr"], bool(t.get("instant")))
        for uid, board in load().items()
        for p in board["panels"]
        for t in p.get("targets", [])
    ]


def variables() -> list[Variable]:
    return [
        Variable(uid, v["name"], v["query"]["query"])
        for uid, board in load().items()
        for v in board["templating"]["list"]
    ]


def substitute(expr: str, values: dict[str, str]) -> str:
    """`expr` with $var / ${var} replaced: `values` first, then Grafana's built-ins."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in values:
            return values[name]
        if name in BUILTINS:
            return BUILTINS[name]
        raise KeyError(f"undefined variable ${name} in {expr!r}")

    return VARIABLE.sub(one, expr)
