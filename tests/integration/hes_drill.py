"""What the HES leg's drills that watch the connector through an outage share
(test_connect_worker_killed.py, test_connect_stall_drill.py): a HES writer thread, a look every
second at what the exporter serves, and the check that every row written reached Parquet once."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.exporter.exposition import Samples, value
from tests.exporter.live import Running
from tests.integration.hes_leg import (
    CONNECTOR,
    KAFKA,
    TOPIC,
    Key,
    ingest,
    insert,
    keys_of,
    stored_keys,
)
from vigia.common import kafka_config
from vigia.ingest.config import IngestConfig
from vigia.ingest.kafka_source.offsets import to_json

BATCH, EVERY = 10, 0.5  # 20 rows a second, each batch one transaction
DEADLINE = 240.0  # any one condition; CI's machine runs two drills at a load of 30 and more


class Writer(threading.Thread):
    """Writes BATCH rows of the run's meters every EVERY seconds, each stamped when written."""

    def __init__(self, dsn: str, prefix: str) -> None:
        super().__init__(daemon=True)
        self.dsn, self.prefix = dsn, prefix
        self.written: list[Key] = []
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            while not self.halt.wait(EVERY):
                stamp = int(time.time())
                keys = keys_of(self.prefix, len(self.written), BATCH, stamp)
                insert(self.dsn, keys, stamp)
                self.written.extend(keys)
        except BaseException as exc:
            self.error = exc

    def stop(self) -> list[Key]:
        self.halt.set()
        self.join(60)
        assert self.error is None, f"the HES writer failed: {self.error!r}"
        return self.written


@dataclass
class Look:
    at: float
    stalls: dict[str, float]
    worker_up: float | None
    task: str | None  # the exporter's kafka_connect_task_state at 1
    end: int  # the topic's summed end offsets, as the exporter serves them


@dataclass
class Watch:
    """A look every second at the exporter, kept for the timeline."""

    exporter: Running
    looks: list[Look] = field(default_factory=list)

    def look(self) -> Look:
        found = self.exporter.metrics()
        seen = Look(
            time.monotonic(),
            _stalls(found),
            value(found, "kafka_connect_worker_up", connect="it"),
            next(
                (
                    labels["state"]
                    for (name, labels), v in found.items()
                    if name == "kafka_connect_task_state" and labels["connector"] == CONNECTOR and v
                ),
                None,
            ),
            _topic_end(found),
        )
        self.looks.append(seen)
        return seen

    def until(self, check: Any, timeout: float, what: str) -> Look:
        deadline = time.monotonic() + timeout
        while True:
            seen = self.look()
            if check(seen):
                return seen
            assert time.monotonic() < deadline, f"no {what} after {timeout:g} s: {seen}"
            time.sleep(1)


def _stalls(found: Samples) -> dict[str, float]:
    return {
        labels["cause"]: v
        for (name, labels), v in found.items()
        if name == "kafka_connect_connector_stalled" and labels["connector"] == CONNECTOR
    }


def cause(look: Look) -> str | None:
    return next((c for c, v in look.stalls.items() if v == 1), None)


def _topic_end(found: Samples) -> int:
    return int(
        sum(
            v
            for (name, labels), v in found.items()
            if name == "kafka_topic_partition_current_offset" and labels["topic"] == TOPIC
        )
    )


def every_row_once_in_parquet(
    env: dict[str, str],
    group: str,
    prefix: str,
    start: dict[tuple[str, int], int],
    written: list[Key],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    session: SparkSession = request.getfixturevalue("spark")
    config = IngestConfig(
        bootstrap_servers=env[KAFKA],
        kafka_options=kafka_config.from_env(),
        topic=TOPIC,
        group_id=group,
        output=str(tmp_path / "measure"),
        quarantine=str(tmp_path / "quarantine"),
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        starting_offsets=json.dumps(to_json(start)),
        metrics_port=0,
    )
    expected = Counter(written)
    deadline = time.monotonic() + DEADLINE
    stored = stored_keys(Path(config.output), prefix)
    while set(stored) != set(expected) and time.monotonic() < deadline:
        ingest(session, config)
        stored = stored_keys(Path(config.output), prefix)
    assert stored == expected  # every key stored, exactly once
