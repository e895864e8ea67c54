"""The one Spark session of a test process (a pytest plugin, loaded by tests/conftest.py).

`getOrCreate` hands every caller in a process the session that exists: two session fixtures would
give a test whichever started first, with the other's settings. So there is one, with the job's own
settings (`session_settings`) for a local[2] master; only the web UI is off, since two pytest
workers would race for its port.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from vigia.ingest.job import quiet_spark_logs, session_settings
from vigia.ingest.spark_session import start_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = start_session(
        "vigia-tests", {**session_settings("local[2]"), "spark.ui.enabled": "false"}
    )
    quiet_spark_logs(session, "INFO")
    yield session
    session.stop()
