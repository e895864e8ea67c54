"""The rule file's text: a header naming its source, then the groups as YAML, byte-stable."""

from __future__ import annotations

from typing import Any

import yaml

from vigia.common.slo.rules import RuleGroup

HEADER = """\
# GENERATED from {source} by `vigia-slo` (docs/slo.md): do not edit by hand,
# tests/monitoring fails on a file that is not the generator's output. Error ratios per SLO over
# the burn-rate windows and the SLO's window, the budget left, and multi-window multi-burn-rate
# alerts (severity=critical pages, severity=warning opens a ticket).
"""


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no types
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def render(groups: list[RuleGroup], source: str) -> str:
    """The rule file for ``groups``, its header naming ``source``, the SLO file they came from."""
    body: Any = {"groups": groups}
    text: str = yaml.dump(
        body, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000, indent=2
    )
    return HEADER.format(source=source) + text
