"""The series budget's claim (docs/metrics.md, "Series budget") on a real cluster: Vigía's exporter
at its defaults serves fewer series than kafka_exporter 1.9.0 at its defaults, both run against
the same cluster at the same time and counted off their /metrics, and kafka_exporter serves
exactly what the formula in tests/exporter/test_exporter_series_budget.py says it does.

kafka_exporter is ../shared/kafka-exporter/kafka_exporter, named by VIGIA_TEST_KAFKA_EXPORTER."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.exporter.exposition import Samples, samples, value
from tests.exporter.test_exporter_series_budget import Counts, kafka_exporter
from tests.realstack.exporters import (
    LAST_COLLECTION,
    exporter_argv,
    kafka_exporter_argv,
    next_collection,
    running,
    scrape,
    series_count,
    wait_listening,
)
from tests.realstack.plugin import KAFKA_EXPORTER_ENV
from tests.realstack.targets import KafkaTarget
from tests.requirements import require

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def kafka_exporter_binary() -> Path:
    """Asked for before the cluster: without the binary, no cluster is started for nothing."""
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


PER_PARTITION = tuple(
    f"kafka_topic_partition_{name}"
    for name in (
        "current_offset",
        "oldest_offset",
        "leader",
        "replicas",
        "in_sync_replica",
        "leader_is_preferred",
        "under_replicated_partition",
    )
)


def _their_counts(found: Samples) -> Counts:
    """The formula's quantities, read off kafka_exporter's own answer: its topics and their
    partitions, its brokers and groups, and the (group, topic) pairs it sums offsets for, each
    counting every partition of its topic."""
    partitions = {
        labels["topic"]: int(v) for (n, labels), v in found.items() if n == "kafka_topic_partitions"
    }
    pairs = [labels for n, labels in found if n == "kafka_consumergroup_current_offset_sum"]
    (brokers,) = [v for (n, _), v in found.items() if n == "kafka_brokers"]
    groups = [labels for n, labels in found if n == "kafka_consumergroup_members"]
    return Counts(
        P=sum(partitions.values()),
        R=0,
        R_o=0,
        T=len(partitions),
        B=int(brokers),
        D=0,
        G=len(groups),
        GP=0,
        GP_t=sum(partitions[pair["topic"]] for pair in pairs),
        GT=len(pairs),
        BT_r=0,
        BT_l=0,
    )


def _families(c: Counts) -> dict[str, int]:
    """Series per kafka_* family, as the formula counts them."""
    return {
        "kafka_brokers": 1,
        "kafka_broker_info": c.B,
        "kafka_topic_partitions": c.T,
        **dict.fromkeys(PER_PARTITION, c.P),
        "kafka_consumergroup_members": c.G,
        "kafka_consumergroup_current_offset": c.GP_t,
        "kafka_consumergroup_lag": c.GP_t,
        "kafka_consumergroup_current_offset_sum": c.GT,
        "kafka_consumergroup_lag_sum": c.GT,
        "kafka_exporter_build_info": 1,
    }


def test_vigia_at_its_defaults_serves_fewer_series_than_kafka_exporter(
    kafka_exporter_binary: Path, kafka_target: KafkaTarget, tmp_path: Path
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
    # Kept beside the exporters' logs: what a failure below is about.
    (tmp_path / "vigia.prom").write_text(ours)
    (tmp_path / "kafka_exporter.prom").write_text(theirs)
    ours_found, theirs_found = samples(ours), samples(theirs)
    assert value(ours_found, "vigia_exporter_up") == 1
    c = _their_counts(theirs_found)
    # The same cluster: as many brokers, topics and partitions.
    ours_partitions = {
        labels["topic"]: v for (n, labels), v in ours_found.items() if n == "kafka_topic_partitions"
    }
    ours_brokers = sum(1 for name, _ in ours_found if name == "kafka_broker_up")
    seen = (ours_brokers, len(ours_partitions), sum(ours_partitions.values()))
    assert seen == (c.B, c.T, c.P), (c, ours_partitions)
    # The Go runtime's and the process's own series aside, kafka_exporter's are all kafka_*.
    theirs_kafka = Counter(name for name, _ in theirs_found if name.startswith("kafka_"))
    print(
        f"\nseries: Vigía {series_count(ours):,} (all of /metrics), kafka_exporter "
        f"{theirs_kafka.total():,} (kafka_* alone; {series_count(theirs):,} with its runtime's) "
        f"for {c.P} partitions, {c.G} groups"
    )
    # kafka_exporter can lose the last series of a scrape: collectChans reads the slice its
    # receiving goroutine appends to without waiting for that goroutine's last append (seen in
    # two runs of two: one kafka_consumergroup_lag_sum short). One, and nothing extra.
    counted = Counter(_families(c))
    assert sum(counted.values()) == kafka_exporter(c)
    assert not theirs_kafka - counted, (c, theirs_kafka - counted)
    assert (counted - theirs_kafka).total() <= 1, (c, counted - theirs_kafka)
    assert series_count(ours) <= theirs_kafka.total()
