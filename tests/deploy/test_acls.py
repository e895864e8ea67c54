"""docs/security.md's ACL commands grant what the code uses: its topics, groups and operations.

Each component's `kafka-acls.sh` commands are parsed from docs/security.md and compared with the
names the code derives (default probe topic and probe group prefix, the ingest job's group and its
readers' group from --group-id, the topics) and with the operations each component's Kafka calls
need (the list issue 15 read from a broker's authorizer log, plus Alter on the cluster for the
probe's preferred-leader elections).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from vigia.exporter.probe.runner import DEFAULT_TOPIC, GROUP_PREFIX
from vigia.ingest.config import IngestConfig
from vigia.ingest.kafka_source.options import reader_group
from vigia.ingest.simulator.cli import build_parser

SECURITY = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text("utf-8")

Grant = tuple[str, str, str, str, frozenset[str]]
"""(principal, resource type, resource name, pattern type, operations)."""


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", SECURITY, re.S | re.M)
    assert match, f"docs/security.md has no section {title!r}"
    return match.group(1)


def grants(text: str) -> set[Grant]:
    found = set()
    for line in re.findall(r"^\$ADMIN (.+)$", text, re.M):
        words = shlex.split(line)
        assert words[0] == "--add", line
        options: dict[str, list[str]] = {}
        key = ""
        for word in words[1:]:
            if word.startswith("--"):
                key = word
                options.setdefault(key, [])
            else:
                options[key].append(word)
        (principal,) = options["--allow-principal"]
        if "--cluster" in options:
            resource, name = "cluster", "kafka-cluster"
        else:
            resource = "topic" if "--topic" in options else "group"
            (name,) = options[f"--{resource}"]
        pattern = options.get("--resource-pattern-type", ["literal"])[0]
        found.add((principal, resource, name, pattern, frozenset(options["--operation"])))
    return found


def component(marker: str) -> str:
    text = section("ACLs on a secured cluster")
    parts = re.split(r"^\*\*", text, flags=re.M)
    (part,) = [p for p in parts if p.startswith(marker)]
    return part


def test_exporter_grants() -> None:
    user = "User:vigia-exporter"
    assert grants(component("Exporter")) == {
        (
            user,
            "cluster",
            "kafka-cluster",
            "literal",
            frozenset({"Describe", "DescribeConfigs", "Alter"}),
        ),
        (user, "topic", "*", "literal", frozenset({"Describe", "DescribeConfigs"})),
        (user, "group", "*", "literal", frozenset({"Describe"})),
        (user, "topic", DEFAULT_TOPIC, "literal", frozenset({"Read", "Write", "Create", "Alter"})),
        (user, "group", GROUP_PREFIX, "prefixed", frozenset({"Read"})),
    }


def test_ingest_grants_name_the_group_and_the_readers_group_derived_from_it() -> None:
    defaults = IngestConfig(bootstrap_servers="b:9092")
    user = "User:vigia-ingest"
    read = frozenset({"Describe", "Read"})
    assert grants(component("Ingest job")) == {
        (user, "topic", defaults.topic, "literal", read),
        (user, "group", defaults.group_id, "literal", read),
        (user, "group", reader_group(defaults.group_id), "literal", read),
    }
    assert f"`--group-id {defaults.group_id}`" in component("Ingest job")
    assert reader_group("billing") == "billing-reader"


def test_simulator_grants() -> None:
    topic = build_parser().parse_args(["backfill"]).topic
    assert grants(component("Simulator")) == {
        ("User:vigia-simulator", "topic", topic, "literal", frozenset({"Describe", "Write"}))
    }


@pytest.mark.parametrize("advice", ["VIGIA_KAFKA_OPTIONS", "`ps`"])
def test_passwords_go_through_the_environment(advice: str) -> None:
    assert advice in section("SASL/SSL and other client settings")
