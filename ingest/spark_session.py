"""Starts the ingest job's Spark sessions (the streaming job, the completeness check, tests)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession


def start_session(app_name: str, settings: Mapping[str, str]) -> SparkSession:
    """A session whose Python workers run this interpreter unless PYSPARK_PYTHON says otherwise.

    Spark starts its Python workers (the Kafka source, the Python data source planner) with
    PYSPARK_PYTHON, else `python3` from PATH: outside an activated virtualenv that is another
    installation, without pyarrow or Vigía. spark-submit sets PYSPARK_PYTHON from
    spark.pyspark.python, so a deployment's own choice still wins.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
