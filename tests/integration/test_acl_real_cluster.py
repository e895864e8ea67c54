"""ACLs on a real cluster's authorizer (tests/realstack's harness: StandardAuthorizer, user `vigia`
with no ACL of its own): a group the exporter may not describe is reported as that group's fact —
`kafka_consumergroup_access_denied` 1, `denied` in /api/v1/cluster, an `authorization` error — and
`vigia_exporter_up` stays 1, while a group it may describe is read as usual. Creates a topic, two
groups and the ACLs for `vigia` (all named vigia-it-acl-<random>) and deletes them at the end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.exporter.exposition import value
from tests.exporter.live import exporter_process, wait_for
from tests.realstack.kafka_cluster import SECURED_USER, KafkaCluster
from tests.realstack.topics import create_topic
from vigia.common.kafka_config import ENV_VAR

pytestmark = pytest.mark.integration
DEADLINE = 240.0  # any one condition; CI's machine runs two drills at a load of 30 and more


@pytest.fixture
def cluster(real_stack_cluster: KafkaCluster) -> KafkaCluster:
    return real_stack_cluster


def _allow(
    principal: str, kind: ResourceType, name: str, *operations: AclOperation
) -> list[AclBinding]:
    return [
        AclBinding(
            kind, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW
        )
        for op in operations
    ]


@pytest.fixture
def groups(cluster: KafkaCluster) -> Iterator[tuple[str, str, str]]:
    """(topic, allowed group, denied group): both groups committed offsets on the topic."""
    run = uuid.uuid4().hex[:8]
    topic, allowed, denied = (f"vigia-it-acl-{run}-{n}" for n in ("topic", "allowed", "denied"))
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    create_topic(cluster.bootstrap, topic, 3, replication=3)
    principal = f"User:{SECURED_USER}"
    bindings = [
        *_allow(
            principal,
            ResourceType.BROKER,
            "kafka-cluster",
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
        ),
        *_allow(
            principal,
            ResourceType.TOPIC,
            topic,
            AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS,
        ),
        *_allow(principal, ResourceType.GROUP, allowed, AclOperation.DESCRIBE),
    ]
    for future in admin.create_acls(bindings, request_timeout=30).values():
        future.result(timeout=30)
    try:
        for group in (allowed, denied):
            consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
            try:
                offsets = [TopicPartition(topic, p, 0) for p in range(3)]
                wait_for(
                    lambda c=consumer, o=offsets: c.commit(offsets=o, asynchronous=False) or True,
                    DEADLINE,
                    f"{group} to commit",
                )
            finally:
                consumer.close()
        yield topic, allowed, denied
    finally:
        everything_of_vigia = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            principal,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        admin.delete_acls([everything_of_vigia], request_timeout=30)
        admin.delete_consumer_groups([allowed, denied], request_timeout=30)
        admin.delete_topics([topic], operation_timeout=30)[topic].exception(60)


def test_a_group_the_acls_hide_is_reported_for_that_group_and_up_stays_1(
    cluster: KafkaCluster,
    groups: tuple[str, str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic, allowed, denied = groups
    options = cluster.secured_options(SECURED_USER)
    monkeypatch.setenv(ENV_VAR, ",".join(f"{k}={v}" for k, v in options.items()))
    run_prefix = topic.rsplit("-", 1)[0]
    with exporter_process(
        tmp_path / "exporter.log",
        *("--bootstrap-servers", cluster.secured_bootstrap, "--no-probe"),
        *("--collection-interval", "2", "--group-include", f"^{run_prefix}-"),
        *("--topic-include", f"^{topic}$"),
    ) as exporter:

        def denied_reported() -> bool:
            found = exporter.metrics()
            return value(found, "kafka_consumergroup_access_denied", consumergroup=denied) == 1

        wait_for(denied_reported, DEADLINE, f"{denied} reported as denied")
        found = exporter.metrics()
        assert value(found, "vigia_exporter_up") == 1
        assert value(found, "kafka_consumergroup_access_denied", consumergroup=allowed) is None
        assert (
            value(found, "vigia_exporter_last_collection_errors", kind="authorization") or 0
        ) >= 1
        lag = [
            value(
                found,
                "kafka_consumergroup_lag",
                consumergroup=allowed,
                topic=topic,
                partition=str(p),
            )
            for p in range(3)
        ]
        assert lag == [0, 0, 0], lag
        doc = exporter.get("/api/v1/cluster").json()
        denials = [e["message"] for e in doc["errors"] if e["kind"] == "authorization"]
        assert denials and all(denied in m for m in denials), denials  # that group's, no other
        by_id = {g["group_id"]: g for g in doc["groups"]}
        assert by_id[denied]["denied"], by_id[denied]
        assert not by_id[allowed]["denied"], by_id[allowed]
        assert options["sasl.password"] not in exporter.log_text()
