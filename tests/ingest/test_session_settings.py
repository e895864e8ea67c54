"""The Spark settings `vigia-ingest` starts its session with: a local master's JVM gets the
throughput collector and the configured heap, unless spark-submit already chose them."""

from __future__ import annotations

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from vigia.ingest.job import session_settings


@pytest.fixture
def no_running_jvm(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the job sees before its JVM starts: SparkConf then holds only spark-submit's settings
    (none here), not those of the test session's JVM."""
    monkeypatch.setattr(SparkContext, "_jvm", None)


@pytest.mark.usefixtures("no_running_jvm")
def test_a_local_master_gets_the_throughput_collector_and_the_heap() -> None:
    settings = session_settings("local[2]", "3g")
    assert settings["spark.driver.extraJavaOptions"] == "-XX:+UseParallelGC"
    assert settings["spark.driver.memory"] == "3g"
    assert settings["spark.sql.shuffle.partitions"].isdigit()


@pytest.mark.usefixtures("no_running_jvm")
def test_a_cluster_master_keeps_what_its_deployment_chose() -> None:
    settings = session_settings("spark://master:7077", "3g")
    assert settings["spark.master"] == "spark://master:7077"
    assert not {
        "spark.driver.extraJavaOptions",
        "spark.driver.memory",
        "spark.sql.shuffle.partitions",
    } & set(settings)


@pytest.mark.usefixtures("no_running_jvm")
def test_spark_submit_settings_win(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import SparkConf

    submitted = SparkConf(loadDefaults=False).setAll(
        [("spark.driver.memory", "8g"), ("spark.driver.extraJavaOptions", "-XX:+UseG1GC")]
    )
    monkeypatch.setattr("pyspark.SparkConf", lambda: submitted)
    settings = session_settings("local[2]", "3g")
    assert "spark.driver.memory" not in settings
    assert "spark.driver.extraJavaOptions" not in settings


def test_the_session_jvm_collects_with_the_parallel_collector(spark: SparkSession) -> None:
    """The settings reach the JVM: the test session is started from them, as the job's is."""
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory  # type: ignore[union-attr]
    names = {bean.getName() for bean in beans.getGarbageCollectorMXBeans()}
    assert names == {"PS Scavenge", "PS MarkSweep"}
