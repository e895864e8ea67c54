"""The runbooks (docs/runbooks/<AlertName>.md) as HTML pages at /runbooks/<AlertName>.

Every alert's runbook_url points here (built from Prometheus' `vigia_console_url` external label),
so the link in a page or ticket opens a runbook that exists wherever the Dash app runs. The files
are installed with the package (`dashboard/runbooks` is a link to docs/runbooks that packaging
copies); `--runbooks-dir` serves another directory.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort
from markdown_it import MarkdownIt

PACKAGED = Path(__file__).resolve().parent / "runbooks"
NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
INDEX = "README"

_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} · Vigía runbook</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 860px; margin: 24px auto; padding: 0 16px;
       color: #1f2a36; line-height: 1.5; }}
nav a {{ margin-right: 12px; }}
code {{ background: #eef1f5; padding: 1px 4px; border-radius: 3px; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #c9d3de; padding: 4px 8px; }}
</style></head>
<body><nav><a href="/">Vigía</a><a href="/runbooks/">all runbooks</a></nav>
{body}
</body></html>
"""


def directory(configured: str) -> Path:
    return Path(configured) if configured else PACKAGED


def render(markdown: str, title: str) -> str:
    """A runbook as a standalone HTML page (the Markdown is ours: raw HTML in it is escaped)."""
    return PAGE.format(title=html.escape(title), body=_markdown.render(markdown))


def page(runbooks: Path, name: str) -> str | None:
    """The HTML of runbook `name` (`X` or `X.md`; README is the index), or None."""
    name = name.removesuffix(".md") or INDEX
    if not NAME.fullmatch(name):
        return None
    path = runbooks / f"{name}.md"
    if not path.is_file():
        return None
    return render(path.read_text(encoding="utf-8"), "runbooks" if name == INDEX else name)


def serve(server: Flask, runbooks: Path) -> None:
    def show(name: str = "") -> Any:
        text = page(runbooks, name)
        if text is None:
            abort(404)
        return Response(text, mimetype="text/html")

    server.add_url_rule("/runbooks/", "runbook_index", show)
    server.add_url_rule("/runbooks/<name>", "runbook", show)
