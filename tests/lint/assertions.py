"""`make lint`'s check that every test can fail: a test function (`test_*` in tests/**/test_*.py,
module-level or a method of a `Test*` class) must assert something itself: an `assert`, a
`raise AssertionError`, `pytest.raises`/`pytest.warns`/`pytest.fail`, or a call to one of the
helpers in `ASSERTING_HELPERS`.

The helpers are an explicit list, not every function in tests/ that happens to hold an assert: a
fixture or a wait with a sanity check would otherwise pass for a test's proof. The list is checked
too: every name on it must be defined in tests/, and every definition of it must assert.

    python -m tests.lint.assertions [ROOT]   # ROOT: the tests/ folder (default: this one's parent)
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Helpers whose own body asserts what the tests calling them claim (called by name or as a method).
ASSERTING_HELPERS = frozenset(
    {
        # exporter/test_exporter_state.py: byte-identical to prometheus_client's rendering
        "_assert_same_as_generate_latest",
        # integration/ingest_chaos.py and ingest/test_kill_cluster.py: stored once, committed
        "check_stored_once_and_committed",
        # integration/test_retention_real_cluster.py: the two halves of one drill
        "_margins_count_down_and_the_group_is_at_risk_before_a_deletion",
        "_the_loss_counted_is_what_was_deleted",
        # integration/test_connect_real_worker.py: what the exporter serves for one Connect state
        "_assert_served",
        # deploy/ingest_drill.py: the page at the receiver, the watchers untouched, the job back
        "run_drill",
    }
)
PYTEST_ASSERTIONS = frozenset({"raises", "warns", "fail"})
TESTS = Path(__file__).resolve().parents[1]

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _from_pytest(tree: ast.Module) -> set[str]:
    """Local names bound by `from pytest import raises, fail as f…`."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "pytest"
        for alias in node.names
        if alias.name in PYTEST_ASSERTIONS
    }


def asserts(function: Function, helpers: Iterable[str], pytest_names: Iterable[str] = ()) -> bool:
    """Whether the function's body (nested functions included) asserts by itself or calls a
    helper known to assert."""
    helpers, bare = frozenset(helpers), frozenset(pytest_names)
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id == "AssertionError":
                return True
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in PYTEST_ASSERTIONS
                and isinstance(func.value, ast.Name)
                and func.value.id == "pytest"
            ):
                return True
            if isinstance(func, ast.Name) and func.id in bare:
                return True
            if _called_name(node) in helpers:
                return True
    return False


def test_functions(tree: ast.Module) -> Iterator[Function]:
    """Module-level `test*` functions and `test*` methods of `Test*` classes (nested too)."""

    def walk(body: list[ast.stmt]) -> Iterator[Function]:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("test"):
                    yield node
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                yield from walk(node.body)

    yield from walk(tree.body)


def unasserted(source: str, path: str, helpers: Iterable[str] = ASSERTING_HELPERS) -> list[Finding]:
    """The test functions in this source that assert nothing."""
    tree = ast.parse(source, path)
    bare = _from_pytest(tree)
    return [
        Finding(path, f.lineno, f"{f.name} has no assertion")
        for f in test_functions(tree)
        if not asserts(f, helpers, bare)
    ]


def helper_findings(sources: dict[str, str], helpers: Iterable[str]) -> list[Finding]:
    """Helpers on the list that are defined nowhere, or have a definition that asserts nothing."""
    found: list[Finding] = []
    defined: set[str] = set()
    wanted = frozenset(helpers)
    for path, source in sources.items():
        for node in ast.walk(ast.parse(source, path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in wanted:
                defined.add(node.name)
                if not asserts(node, ()):
                    found.append(Finding(path, node.lineno, f"helper {node.name} asserts nothing"))
    for name in sorted(wanted - defined):
        found.append(Finding(__name__, 0, f"helper {name} is listed but defined nowhere"))
    return found


def check(root: Path) -> list[Finding]:
    sources = {
        str(p.relative_to(root.parent)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.py"))
    }
    findings = helper_findings(sources, ASSERTING_HELPERS)
    for path, source in sources.items():
        if Path(path).name.startswith("test_"):
            findings.extend(unasserted(source, path))
    return findings


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    findings = check(Path(args[0]) if args else TESTS)
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
