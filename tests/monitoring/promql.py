"""The vector selectors of a PromQL expression (enough of PromQL for our rules and boards).

Prometheus 2.42 has no parse API, so selectors are found lexically: identifiers that are not
functions, keywords, label names in grouping clauses or inside matchers / strings / durations.
"""

from __future__ import annotations

import re

KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool"}
    | {"offset", "inf", "nan", "atan2"}
)
IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(")


def _blank(expr: str, start: int, end: int) -> str:
    return expr[:start] + " " * (end - start) + expr[end:]


def _closing(expr: str, start: int, opening: str, closing: str) -> int:
    """Index just past the bracket matching expr[start], skipping strings."""
    depth, i, quote = 0, start, ""
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {opening!r} in {expr!r}")


def selectors(expr: str) -> list[str]:
    """Every `metric{matchers}` (or bare `{matchers}`) in `expr`, in order, without duplicates."""
    masked = expr
    # Strings outside matchers (label_replace arguments, ...) and durations go first.
    for match in re.finditer(r"\[[^\]]*\]", masked):
        masked = _blank(masked, match.start(), match.end())
    for match in GROUPING.finditer(masked):
        open_at = match.end() - 1
        masked = _blank(masked, match.start(), _closing(masked, open_at, "(", ")"))
    found: list[str] = []
    i = 0
    while i < len(masked):
        c = masked[i]
        if c in "\"'`":
            end = i + 1
            while masked[end] != c:
                end += 2 if masked[end] == "\\" else 1
            i = end + 1
            continue
        if c == "{":
            end = _closing(masked, i, "{", "}")
            found.append(expr[i:end])
            i = end
            continue
        match = IDENT.match(masked, i)
        if match is None or (i > 0 and (masked[i - 1].isalnum() or masked[i - 1] in "_.")):
            i += 1
            continue
        name, end = match.group(), match.end()
        rest = masked[end:].lstrip()
        if name in KEYWORDS or rest.startswith("("):
            i = end
            continue
        if rest.startswith("{"):
            brace = masked.index("{", end)
            close = _closing(masked, brace, "{", "}")
            found.append(name + expr[brace:close])
            i = close
        else:
            found.append(name)
            i = end
    return list(dict.fromkeys(found))


def metric_name(selector: str) -> str | None:
    match = IDENT.match(selector)
    if match:
        return match.group()
    named = re.search(r'__name__\s*=\s*"([^"]+)"', selector)
    return named.group(1) if named else None
