"""docker-compose.yml as data: loading, ${VAR} interpolation, what it publishes and mounts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"

# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}; `$$` is a literal dollar.
_VARIABLE = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
)
_ENV_LINE = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$")


class MissingVariable(KeyError):
    """A ${VAR:?message} variable with no value."""


@cache
def raw() -> dict[str, Any]:
    """The file as YAML (anchors and merge keys resolved), before interpolation."""
    return dict(yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8")))


def variables_used(text: str) -> set[str]:
    return {m.group("name") for m in _VARIABLE.finditer(text) if m.group("name")}


def defaults_used(text: str) -> dict[str, set[str]]:
    """variable -> every `${VAR:-default}` default the text gives it."""
    out: dict[str, set[str]] = {}
    for m in _VARIABLE.finditer(text):
        if m.group("op") in (":-", "-"):
            out.setdefault(m.group("name"), set()).add(m.group("arg"))
    return out


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's interpolation applied to every string in `value`."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: _substitute(m, env), value)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def _substitute(match: re.Match[str], env: Mapping[str, str]) -> str:
    name, op, arg = match.group("name"), match.group("op"), match.group("arg")
    if name is None:
        return "$"
    value = env.get(name)
    unset_or_empty = not value
    missing = unset_or_empty if op and op.startswith(":") else value is None
    if op in (":-", "-"):
        return arg if missing else str(value)
    if op in (":?", "?"):
        if missing:
            raise MissingVariable(f"{name}: {arg}")
        return str(value)
    return value or ""


def env_example() -> dict[str, str]:
    """Every variable .env.example names, set or commented out, with the value it shows."""
    out: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        m = _ENV_LINE.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def resolved(env: Mapping[str, str]) -> dict[str, Any]:
    return dict(interpolate(raw(), env))


def published_ports(service: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """(host address, host port, container port) of each short-syntax `ports` entry."""
    out = []
    for entry in service.get("ports", []):
        parts = str(entry).split(":")
        address = parts[0] if len(parts) == 3 else "0.0.0.0"
        out.append((address, int(parts[-2]), int(parts[-1].split("/")[0])))
    return out


def bind_sources(service: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(host path, container path) of every bind mount (short syntax starting with . or /)."""
    out = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                out.append((volume["source"], volume["target"]))
            continue
        source, target = str(volume).split(":")[:2]
        if source.startswith((".", "/")):
            out.append((source, target))
    return out
