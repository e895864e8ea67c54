"""Groups the exporter may not describe are a fact about its permissions, not a failed collection.

Issue 15: without Describe on groups, 59 of 60 groups failed with GROUP_AUTHORIZATION_FAILED and
`vigia_exporter_up` dropped to 0. Now those groups are listed in `errors` (kind authorization) and
counted in `vigia_exporter_last_collection_errors`, and `up` stays 1; any other failure still fails.
Each denied group is reported on its own: `denied` in its /api/v1/cluster entry and a
`kafka_consumergroup_access_denied` series; the groups the exporter may see get neither.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from tests.exporter.exposition import samples, value
from tests.exporter.fake_kafka import FakeCluster, Faults, kafka_exception
from tests.exporter.recorded import snapshot
from vigia.exporter.collectors import exposition
from vigia.exporter.service import CollectionService
from vigia.exporter.web import api


def collect(faults: Faults) -> CollectionService:
    fake = FakeCluster(snapshot("healthy"), faults)
    adapter = fake.adapter()
    service = CollectionService(adapter.collect, interval=60, timeout=5, probe=None)
    try:
        service.collect_once()
    finally:
        adapter.close()
    return service


def test_groups_denied_are_reported_and_up_stays_1() -> None:
    denied = kafka_exception(
        KafkaError.GROUP_AUTHORIZATION_FAILED, "Broker: Group authorization failed"
    )
    service = collect(Faults(describe_groups=denied))
    state = service.state
    assert state is not None and state.up
    errors = api.cluster_json(state)["errors"]
    assert [(e["phase"], e["kind"]) for e in errors] == [("groups", "authorization")]
    assert errors[0]["message"].startswith("DescribeGroups denied, ")
    assert "GROUP_AUTHORIZATION_FAILED" in errors[0]["message"]
    found = samples(exposition(state))
    assert value(found, "vigia_exporter_up") == 1
    assert value(found, "vigia_exporter_last_collection_errors", kind="authorization") == 1


def test_other_group_failures_still_fail_the_collection() -> None:
    broken = kafka_exception(KafkaError._TIMED_OUT, "Local: Timed out")
    state = collect(Faults(describe_groups=broken)).state
    assert state is not None and not state.up
    (error,) = api.cluster_json(state)["errors"]
    assert (error["phase"], error["kind"]) == ("groups", "transport")
    assert "denied" not in error["message"]


def test_each_denied_group_is_reported_on_its_own() -> None:
    denied = kafka_exception(
        KafkaError.GROUP_AUTHORIZATION_FAILED, "Broker: Group authorization failed"
    )
    faults = Faults(describe_groups=denied, describe_groups_spared=frozenset({"vigia-ingest"}))
    state = collect(faults).state
    assert state is not None and state.up
    groups = {g["group_id"]: g for g in api.cluster_json(state)["groups"]}
    hidden = {"billing", "events-reader", "verify-group", "verify-group-848"}
    assert {g for g, entry in groups.items() if entry["denied"]} == hidden
    assert all(groups[g]["denied"] == ["groups"] and groups[g]["state"] is None for g in hidden)
    assert groups["vigia-ingest"]["denied"] == [] and groups["vigia-ingest"]["state"] is not None
    (error,) = api.cluster_json(state)["errors"]
    assert error["message"].startswith("DescribeGroups denied, 4 of 5 groups failed, first: ")
    found = samples(exposition(state))
    series = {
        labels["consumergroup"]: v
        for (name, labels), v in found.items()
        if name == "kafka_consumergroup_access_denied"
    }
    assert series == dict.fromkeys(hidden, 1)
