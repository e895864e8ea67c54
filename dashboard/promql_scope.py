"""Scope a PromQL expression to one cluster: every vector selector gets a `cluster="NAME"` matcher.

The pages write their queries once, for any cluster; the app sends them for the chosen one. A
small tokenizer rather than a full parser: selectors are the only place a matcher goes, and what
is not a selector (function names, keywords, label lists after by/on/…, strings, durations) is
copied as it is. Pure.
"""

from __future__ import annotations

import re

CLUSTER_LABEL = "cluster"

_TOKEN = re.compile(
    r"""
      (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
    | (?P<comment>\#[^\n]*)
    | (?P<number>[0-9.][0-9a-zA-Z_.]*)
    | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
    | (?P<space>\s+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
# Followed by a parenthesised list of label names, not of expressions.
_LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
# Words that are never metric names where they stand.
_KEYWORDS = _LABEL_LISTS | {"bool", "offset", "and", "or", "unless", "atan2", "inf", "nan"}
# Aggregations may put `by (…)` or `without (…)` between their name and their parenthesis.
_AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}  # fmt: skip


def _tokens(promql: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(promql)]


def _next_code(tokens: list[tuple[str, str]], i: int) -> int:
    """Index of the first token at or after i that is neither space nor comment."""
    while i < len(tokens) and tokens[i][0] in ("space", "comment"):
        i += 1
    return i


def _closing(tokens: list[tuple[str, str]], i: int, opening: str, closing: str) -> int:
    """Index just past the bracket that closes the one at i (strings skipped by the tokenizer)."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j] == ("other", opening):
            depth += 1
        elif tokens[j] == ("other", closing):
            depth -= 1
            if depth == 0:
                return j + 1
    return len(tokens)


def _matcher(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'{CLUSTER_LABEL}="{escaped}"'


def _braces(tokens: list[tuple[str, str]], i: int, name: str) -> tuple[str, int]:
    """The selector's braces starting at i with the matcher added, and the index past them."""
    end = _closing(tokens, i, "{", "}")
    inner = "".join(text for _, text in tokens[i + 1 : end - 1])
    joined = _matcher(name) + ("," + inner if inner.strip() else "")
    return "{" + joined + "}", end


def with_cluster(promql: str, name: str) -> str:
    """`promql` with `cluster="name"` on every vector selector."""
    tokens = _tokens(promql)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == "ident" and text.lower() in _KEYWORDS:
            out.append(text)
            i += 1
            nxt = _next_code(tokens, i)
            if text.lower() in _LABEL_LISTS and nxt < len(tokens) and tokens[nxt][1] == "(":
                end = _closing(tokens, nxt, "(", ")")
                out.extend(t for _, t in tokens[i:end])
                i = end
            continue
        if kind == "ident":
            nxt = _next_code(tokens, i + 1)
            following = tokens[nxt][1] if nxt < len(tokens) else ""
            out.append(text)
            if following == "(" or (
                text in _AGGREGATIONS and following.lower() in ("by", "without")
            ):  # a function or an aggregation
                i += 1
            elif following == "{":
                out.extend(t for _, t in tokens[i + 1 : nxt])
                braces, i = _braces(tokens, nxt, name)
                out.append(braces)
            else:
                out.append("{" + _matcher(name) + "}")
                i += 1
            continue
        if (kind, text) == ("other", "{"):  # a selector without a metric name
            braces, i = _braces(tokens, i, name)
            out.append(braces)
            continue
        if (kind, text) == ("other", "["):  # a range or subquery: durations only
            end = _closing(tokens, i, "[", "]")
            out.extend(t for _, t in tokens[i:end])
            i = end
            continue
        out.append(text)
        i += 1
    return "".join(out)
