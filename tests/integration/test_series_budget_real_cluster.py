"""The series budget's claim (docs/metrics.md, "Series budget") on a real cluster: Vigía's exporter
at its defaults serves fewer series than kafka_exporter 1.9.0 at its defaults, both run against
the same cluster at the same time and counted off their /metrics, and kafka_exporter serves
exactly what the formula in tests/exporter/test_exporter_series_budget.py says it does.

kafka_exporter is ../shared/kafka-exporter/kafka_exporter, named by VIGIA_TEST_KAFKA_EXPORTER."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.exporter.exposition import samples, value
from tests.exporter.test_exporter_series_budget import Counts, kafka_exporter
from tests.realstack.exporters import (
    KAFKA_EXPORTER_ENV,
    LAST_COLLECTION,
    exporter_argv,
    kafka_exporter_argv,
    next_collection,
    running,
    scrape,
    series_count,
    wait_listening,
)
from tests.realstack.targets import KafkaTarget
from tests.requirements import require

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kafka_exporter_binary() -> Path:
    path = Path(os.environ.get(KAFKA_EXPORTER_ENV, "").strip() or "/nonexistent")
    require(
        path.is_file() and os.access(path, os.X_OK),
        "kafka_exporter 1.9.0",
        f"set {KAFKA_EXPORTER_ENV} to its binary (../shared/kafka-exporter/kafka_exporter)",
    )
    return path


def _steady_vigia(url: str) -> str:
    """The exposition of the exporter's second collection: rates and lag seconds need two."""
    deadline = time.monotonic() + 300
    first = samples(next_collection(url, None, 0, deadline))
    interval = value(first, "vigia_exporter_collection_interval_seconds") or 15.0
    return next_collection(url, value(first, LAST_COLLECTION), interval, deadline)


def _their_counts(text: str) -> Counts:
    """The formula's quantities, read off kafka_exporter's own answer."""
    found = samples(text)

    def series(name: str) -> list[float]:
        return [v for (n, _), v in found.items() if n == name]

    (brokers,) = series("kafka_brokers")
    return Counts(
        P=int(sum(series("kafka_topic_partitions"))),
        R=0,
        R_o=0,
        T=len(series("kafka_topic_partitions")),
        B=int(brokers),
        D=0,
        G=len(series("kafka_consumergroup_members")),
        GP=0,
        GP_t=len(series("kafka_consumergroup_current_offset")),
        GT=len(series("kafka_consumergroup_current_offset_sum")),
        BT_r=0,
        BT_l=0,
    )


def test_vigia_at_its_defaults_serves_fewer_series_than_kafka_exporter(
    kafka_target: KafkaTarget, kafka_exporter_binary: Path, tmp_path: Path
) -> None:
    bootstrap = kafka_target.bootstrap
    ours_port, theirs_port = free_port(), free_port()
    ours_url, theirs_url = f"http://127.0.0.1:{ours_port}", f"http://127.0.0.1:{theirs_port}"
    theirs_argv = kafka_exporter_argv(kafka_exporter_binary, bootstrap, theirs_port)
    with (
        running("vigia-exporter", exporter_argv(bootstrap, ours_port), tmp_path),
        running("kafka_exporter", theirs_argv, tmp_path),
    ):
        ours = _steady_vigia(ours_url)
        wait_listening(theirs_url)
        scrape(theirs_url)  # its first scrape refreshes its metadata
        theirs = scrape(theirs_url)
    ours_found, theirs_found = samples(ours), samples(theirs)
    assert value(ours_found, "vigia_exporter_up") == 1
    c = _their_counts(theirs)
    # The same cluster: as many brokers, topics and partitions (the Go runtime's and the
    # process's own series aside, kafka_exporter's are all kafka_*).
    ours_partitions = {
        labels["topic"]: v for (n, labels), v in ours_found.items() if n == "kafka_topic_partitions"
    }
    ours_brokers = sum(1 for name, _ in ours_found if name == "kafka_broker_up")
    seen = (ours_brokers, len(ours_partitions), sum(ours_partitions.values()))
    assert seen == (c.B, c.T, c.P), (c, ours_partitions)
    theirs_kafka = sum(1 for name, _ in theirs_found if name.startswith("kafka_"))
    assert theirs_kafka == kafka_exporter(c), c
    print(
        f"\nseries: Vigía {series_count(ours):,} (all of /metrics), kafka_exporter {theirs_kafka:,}"
        f" (kafka_* alone; {series_count(theirs):,} with its runtime's) for {c.P} partitions, "
        f"{c.G} groups"
    )
    assert series_count(ours) <= theirs_kafka
