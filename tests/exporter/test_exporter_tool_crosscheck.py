"""Structure of the snapshots against Kafka's own tools, run right after each recording.

The tools ran 10-16 s after the JSON while producers kept going, so only structure is compared,
never offsets (fixtures README, "Files").
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import SCENARIOS
from tests.exporter.exposition import samples
from tests.exporter.recorded import fixture_path, snapshot, state
from vigia.exporter.collectors import render
from vigia.exporter.model.granularity import FULL

_PARTITION_LINE = re.compile(
    r"^\tTopic: (?P<topic>\S+)\tPartition: (?P<p>\d+)\tLeader: (?P<leader>-?\d+|none)"
    r"\tReplicas: (?P<replicas>[\d,]*)\tIsr: (?P<isr>[\d,]*)"
)


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_partitions_match_kafka_topics_describe(scenario: str) -> None:
    tool = {}
    for line in fixture_path(scenario, ".kafka-topics.txt").read_text().splitlines():
        m = _PARTITION_LINE.match(line)
        if m:
            leader = -1 if m["leader"] == "none" else int(m["leader"])
            tool[(m["topic"], int(m["p"]))] = (
                leader,
                _ids(m["replicas"]),
                frozenset(_ids(m["isr"])),
            )
    ours = {
        (t.name, p.partition): (p.leader, p.replicas, frozenset(p.isr))
        for t in snapshot(scenario).topics
        for p in t.partitions
    }
    assert len(ours) == 68
    assert ours == tool


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_committed_partitions_match_kafka_consumer_groups_describe(scenario: str) -> None:
    tool: set[tuple[str, str, int]] = set()
    clients: dict[str, set[str]] = {}
    for line in fixture_path(scenario, ".consumer-groups.txt").read_text().splitlines():
        cols = line.split()
        if len(cols) >= 9 and cols[0] != "GROUP":
            tool.add((cols[0], cols[1], int(cols[2])))
            if cols[8] != "-":
                clients.setdefault(cols[0], set()).add(cols[8])
    found = samples(render(state(scenario), FULL))
    ours = {
        (labels["consumergroup"], labels["topic"], int(labels["partition"]))
        for (name, labels) in found
        if name == "kafka_consumergroup_lag"
    }
    assert ours == tool
    members = {
        g.group_id: {m.client_id for m in g.members or ()}
        for g in snapshot(scenario).groups
        if g.members
    }
    assert members == clients == {"billing": {"billing-1"}}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_replicas_match_kafka_log_dirs_describe(scenario: str) -> None:
    line = fixture_path(scenario, ".log-dirs.json").read_text()
    tool = {
        (b["broker"], p["partition"])
        for b in json.loads(line)["brokers"]
        for d in b["logDirs"]
        for p in d["partitions"]
        if not p["isFuture"]
    }
    ours = {
        (broker, f"{topic}-{partition}")
        for (topic, partition, broker) in state(scenario).replica_sizes
    }
    assert ours == tool
