"""Starts the ingest job's Spark sessions (the streaming job, the completeness check, tests)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pyspark.sql import SparkSession

from vigia.ingest.spark_python import interpreter


def start_session(app_name: str, settings: Mapping[str, str]) -> SparkSession:
    """A session whose Python workers run this interpreter unless PYSPARK_PYTHON says otherwise.

    Spark starts its Python workers (the Kafka source, the Python data source planner) with
    PYSPARK_PYTHON, else `python3` from PATH: outside an activated virtualenv that is another
    installation, without pyarrow or Vigía. The interpreter is started through
    `vigia-spark-python` (ingest/spark_python.py), which imports PySpark from its compiled files.
    spark-submit sets PYSPARK_PYTHON from spark.pyspark.python, so a deployment's own choice
    still wins.
    """
    os.environ.setdefault("PYSPARK_PYTHON", interpreter())
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
