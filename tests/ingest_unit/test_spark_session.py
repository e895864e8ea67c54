"""Spark's Python workers run the interpreter of the installation that starts the session: outside
an activated virtualenv, `python3` on PATH is another one (issue 21: no pyarrow there)."""

from __future__ import annotations

import os
import sys

import pytest
from pyspark.sql import SparkSession

from ingest.spark_session import start_session


def test_python_workers_run_this_interpreter(spark: SparkSession) -> None:
    assert spark.sparkContext.pythonExec == sys.executable
    ran = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable)
    assert ran.collect() == [sys.executable]


def test_an_interpreter_chosen_by_the_deployment_wins(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python/bin/python3")
    assert start_session("vigia-ingest-unit", {}) is spark
    assert os.environ["PYSPARK_PYTHON"] == "/opt/python/bin/python3"
