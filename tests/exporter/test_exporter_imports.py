"""Regression: `_DeadlockError: deadlock detected by _ModuleLock('kafka.admin')` in a partial
collection against the mock cluster. kafka-python was imported lazily inside functions that run
concurrently on the collection pool; concurrent first imports of one package can deadlock on
Python's per-module import locks. Everything the exporter needs is now imported at module import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

EXPORTER = Path(__file__).parents[2] / "exporter"


def test_the_exporter_imports_nothing_inside_functions() -> None:
    """Its functions run on collection, probe and HTTP worker threads."""
    lazy = []
    for path in sorted(EXPORTER.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    lazy.append(f"{path.relative_to(EXPORTER.parent)}:{node.lineno}")
    assert lazy == []


def test_importing_the_adapter_loads_kafka_python_on_the_importing_thread() -> None:
    check = (
        "import sys, threading, vigia.exporter.kafka.adapter\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "missing = {'kafka.admin', 'kafka.errors'} - set(sys.modules)\n"
        "assert not missing, missing\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
