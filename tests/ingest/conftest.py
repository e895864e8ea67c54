"""Shared by the ingest job tests: topics on the mock cluster and simulator runs (the Spark
session is tests/spark_session.py's)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from confluent_kafka import Producer

from vigia.ingest.simulator.cli import main as simulate
from vigia.ingest.simulator.manifest import Manifest, load_manifest

TOPIC = "measure"


def create_topic(bootstrap_servers: str, topic: str = TOPIC) -> None:
    """The mock cluster creates a topic (4 partitions) when a producer asks for its metadata."""
    producer = Producer({"bootstrap.servers": bootstrap_servers, "log_level": 3})
    metadata = producer.list_topics(topic, timeout=10)
    assert metadata.topics[topic].error is None


def utc_day(days_ago: int) -> dt.date:
    return dt.datetime.now(dt.UTC).date() - dt.timedelta(days=days_ago)


def backfill(
    bootstrap_servers: str,
    manifest: Path,
    *,
    day: dt.date,
    meters: int,
    malformed_ratio: float = 0.0,
    duplicate_ratio: float = 0.0,
    seed: int = 42,
    topic: str = TOPIC,
) -> Manifest:
    """One simulated day (meters × 96 × 4 valid measures) through vigia-simulate."""
    code = simulate(
        [
            "backfill",
            "--bootstrap-servers",
            bootstrap_servers,
            "--topic",
            topic,
            "--start-date",
            day.isoformat(),
            "--meters",
            str(meters),
            "--malformed-ratio",
            str(malformed_ratio),
            "--duplicate-ratio",
            str(duplicate_ratio),
            "--seed",
            str(seed),
            "--manifest",
            str(manifest),
            "--metrics-port",
            "0",
        ]
    )
    assert code == 0
    return load_manifest(manifest)
