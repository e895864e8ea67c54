"""Spark's Python workers run the interpreter of the installation that starts the session: outside
an activated virtualenv, `python3` on PATH is another one (no pyarrow there). They start through
vigia-spark-python (ingest/spark_python.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from vigia.ingest.spark_python import interpreter

REPO = Path(__file__).resolve().parents[2]


def test_python_workers_run_this_interpreter_with_pyspark_from_its_compiled_files(
    spark: SparkSession,
) -> None:
    assert spark.sparkContext.pythonExec == interpreter() != sys.executable
    ran = spark.sparkContext.parallelize([0], 1).map(
        lambda _: (__import__("sys").executable, __import__("pyspark").__file__)
    )
    assert ran.collect() == [(sys.executable, pyspark.__file__)]
    assert ".zip" not in pyspark.__file__


# Run in a child process: this session has its own PYSPARK_PYTHON, which Spark reads when the
# session's context starts, and the folder's shared session must stay as it is.
_CHILD = """
import json, sys
from vigia.ingest.spark_session import start_session
spark = start_session(
    "vigia-deployment-python", {"spark.master": "local[1]", "spark.ui.enabled": "false"}
)
ran = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable).collect()
print(json.dumps({"workers": ran, "python_exec": spark.sparkContext.pythonExec}))
spark.stop()
"""


def test_an_interpreter_chosen_by_the_deployment_wins(tmp_path: Path) -> None:
    """The deployment's interpreter is another installation (a virtualenv of its own, which sees
    this one's packages through a .pth file); PYSPARK_PYTHON names it."""
    deployment = tmp_path / "deployment"
    venv.create(deployment, with_pip=False)
    (site,) = (deployment / "lib").glob("python3*/site-packages")
    (site / "vigia-test.pth").write_text("\n".join(sys.path[1:]) + "\n")
    chosen = str(deployment / "bin" / "python")
    assert chosen != sys.executable
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env={**os.environ, "PYSPARK_PYTHON": chosen},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    ran = json.loads(child.stdout.strip().splitlines()[-1])
    assert ran == {"workers": [chosen], "python_exec": chosen}
