"""`vigia-spark-python`: the interpreter the ingest job's Spark starts its Python workers with.

Spark puts its own copy of PySpark, `python/lib/pyspark.zip` under SPARK_HOME, first on every
Python worker's path. Python compiles a module imported from a zip at every import and never
caches it: a worker importing PySpark from there spends ≈1.9 s of CPU, against ≈0.5 s from the
installed package's compiled files. Spark gives the worker of a Python data source (the job's
Kafka source) a fixed 10 s to start and connect back, and on a loaded host every start of the
job's query failed that way ("Python worker failed to connect back").

This runs the same interpreter with the same arguments, the zip of the PySpark installed beside
it left off PYTHONPATH: the same version, imported from its compiled files. A zip from another
Spark installation (a SPARK_HOME of its own) stays where Spark put it.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path
from typing import NoReturn

SCRIPT = "vigia-spark-python"


def installed_zip(purelib: str) -> str:
    """Where Spark's copy of the PySpark installed in `purelib` is (pip's SPARK_HOME)."""
    return os.path.realpath(Path(purelib) / "pyspark" / "python" / "lib" / "pyspark.zip")


def without(pythonpath: str, zip_path: str) -> str:
    """PYTHONPATH without `zip_path` (compared resolved), every other entry in its order."""
    kept = [p for p in pythonpath.split(os.pathsep) if p and os.path.realpath(p) != zip_path]
    return os.pathsep.join(kept)


def interpreter() -> str:
    """This script beside the running interpreter when it is installed, else the interpreter."""
    script = Path(sys.executable).with_name(SCRIPT)
    return str(script) if script.is_file() and os.access(script, os.X_OK) else sys.executable


def main() -> NoReturn:
    zip_path = installed_zip(sysconfig.get_paths()["purelib"])
    path = without(os.environ.get("PYTHONPATH", ""), zip_path)
    os.execve(sys.executable, [sys.executable, *sys.argv[1:]], {**os.environ, "PYTHONPATH": path})
