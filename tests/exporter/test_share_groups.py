"""Share groups (KIP-932, a preview in Kafka 4.0) are not consumer groups: the exporter never
lists them, so it never describes them nor reads their offsets, and reports nothing about them.

What makes it so is librdkafka's ListConsumerGroups, which keeps only the groups whose protocol
type is `consumer` or empty (simple groups) and drops the rest (rdkafka_admin.c). Seen on a
single Kafka 4.0 broker with share groups enabled (`group.share.enable=true`,
`unstable.api.versions.enable=true`) and a share group `share-g` with a live member
(bin/kafka-console-share-consumer.sh), confluent-kafka 2.16.1 listed only the classic and the
consumer group: ListGroups v5 gives a share group protocol type `share` and group type `Share`
(ShareGroup.PROTOCOL_TYPE and GroupType.SHARE in Kafka 4.0's jars).
Had a share group been listed, DescribeConsumerGroups read it as DEAD, type CLASSIC, without
members, and OffsetFetch gave no offsets: noise, and a DEAD group, on every collection.

The broker here answers as that Kafka 4.0 broker did, so that a librdkafka that starts listing
share groups fails this test rather than puts them in the exporter's groups."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress

from confluent_kafka import ConsumerGroupType
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin import ListGroupsResponse
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import ApiVersionsResponse, MetadataResponse

API_VERSIONS, METADATA, LIST_GROUPS = 18, 3, 16
# (group id, protocol type, state, group type) as Kafka 4.0's ListGroups v5 named them.
KAFKA_4_0_GROUPS = (
    ("classic-g", "consumer", "Stable", "Classic"),
    ("consumer-g", "consumer", "Stable", "Consumer"),
    ("share-g", "share", "Stable", "Share"),
)


@contextmanager
def list_groups_broker(groups: tuple[tuple[str, str, str, str], ...]) -> Iterator[str]:
    """A one-node cluster on loopback that answers ApiVersions, Metadata and ListGroups v5 only
    (kafka-python's encoders); yields its bootstrap address."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer(api_key: int) -> ApiMessage | None:
        if api_key == API_VERSIONS:
            supported = ((API_VERSIONS, 3), (METADATA, 12), (LIST_GROUPS, 5))
            return ApiVersionsResponse(
                error_code=0,
                api_keys=[
                    ApiVersionsResponse.ApiVersion(api_key=key, min_version=0, max_version=top)
                    for key, top in supported
                ],
                throttle_time_ms=0,
            )
        if api_key == METADATA:
            broker = MetadataResponse.MetadataResponseBroker(
                node_id=1, host="127.0.0.1", port=port, rack=None
            )
            return MetadataResponse(
                throttle_time_ms=0, brokers=[broker], cluster_id="stub", controller_id=1, topics=[]
            )
        if api_key == LIST_GROUPS:
            listed = [
                ListGroupsResponse.ListedGroup(
                    group_id=group, protocol_type=protocol, group_state=state, group_type=kind
                )
                for group, protocol, state, kind in groups
            ]
            return ListGroupsResponse(throttle_time_ms=0, error_code=0, groups=listed)
        return None  # anything else: the connection is closed

    def serve(conn: socket.socket) -> None:
        with closing(conn), suppress(OSError):
            while len(head := conn.recv(4, socket.MSG_WAITALL)) == 4:
                request = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                api_key, version, correlation_id = struct.unpack(">hhi", request[:8])
                response = answer(api_key)
                if response is None:
                    return
                response.API_VERSION = min(version, response.max_version)
                response.with_header(correlation_id=correlation_id)
                conn.sendall(response.encode(header=True, framed=True))

    def accept() -> None:
        with suppress(OSError):  # closed at the end of the test
            while True:
                conn, _ = server.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.close()


def listed(groups: tuple[tuple[str, str, str, str], ...]) -> dict[str, ConsumerGroupType]:
    """What the exporter's ListGroups call (KafkaAdapter._list_groups) gets."""
    with list_groups_broker(groups) as bootstrap:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        result = admin.list_consumer_groups(request_timeout=10).result(timeout=15)
    assert result.errors == []
    return {g.group_id: g.type for g in result.valid}


def test_a_share_group_is_not_listed_so_the_exporter_never_sees_it() -> None:
    assert listed(KAFKA_4_0_GROUPS) == {
        "classic-g": ConsumerGroupType.CLASSIC,
        "consumer-g": ConsumerGroupType.CONSUMER,
    }
