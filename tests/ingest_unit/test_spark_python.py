"""vigia-spark-python: Spark's Python workers import PySpark from its compiled files, not the zip
Spark puts first on their path."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from pyspark.find_spark_home import _find_spark_home

from vigia.ingest.spark_python import SCRIPT, installed_zip, interpreter, without

PURELIB = sysconfig.get_paths()["purelib"]
ZIP = installed_zip(PURELIB)


def test_only_the_installed_pysparks_zip_leaves_the_path_the_rest_keeps_its_order() -> None:
    other_spark = "/opt/spark/python/lib/pyspark.zip"
    py4j = str(Path(ZIP).with_name("py4j-0.10.9.9-src.zip"))
    path = os.pathsep.join([ZIP, py4j, other_spark, "", "/srv/job"])
    assert without(path, ZIP) == os.pathsep.join([py4j, other_spark, "/srv/job"])
    assert without("", ZIP) == ""


def test_the_zip_is_the_one_under_the_spark_home_pyspark_finds() -> None:
    home = _find_spark_home()
    assert os.path.realpath(Path(home, "python", "lib", "pyspark.zip")) == ZIP
    assert Path(ZIP).is_file()


def test_the_script_is_used_where_installed_else_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert interpreter() == str(Path(sys.executable).with_name(SCRIPT))
    bare = tmp_path / "python3"
    bare.touch()
    monkeypatch.setattr(sys, "executable", str(bare))
    assert interpreter() == str(bare)


def test_the_script_runs_this_interpreter_with_pyspark_from_its_compiled_files() -> None:
    code = "import pyspark, sys; print(sys.executable); print(pyspark.__file__)"
    ran = subprocess.run(
        [interpreter(), "-c", code],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([ZIP, "/srv/job"])},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    executable, pyspark_file = ran.stdout.split()
    assert executable == sys.executable
    assert pyspark_file == str(Path(PURELIB, "pyspark", "__init__.py"))
