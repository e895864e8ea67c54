"""Why the exporter asks committed offsets through kafka-python wherever it can connect.

librdkafka's admin OffsetFetch (`list_consumer_group_offsets`) answered with a coordinator error
dereferences the consumer group of a client that has none, in its main thread: the process dies
of a segfault (`rd_kafka_cgrp_op` from `rd_kafka_handle_OffsetFetch`, the frame of the exporter's
crash on CI). Run here on librdkafka's mock cluster, in a child process so that its death is
observed, not suffered. Should a librdkafka release fix it, this test fails: the exporter could
then let librdkafka ask the offsets while kafka-python connects (exporter.kafka.adapter).
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from confluent_kafka import KafkaError

from tests.rdkafka_mock import controlled_cluster

OFFSET_FETCH = 9  # Kafka's API key

CLIENT = """
import sys
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
bootstrap = sys.argv[1]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g"})
consumer.commit(offsets=[TopicPartition("t", 0, 5)], asynchronous=False)
consumer.close()
print("committed", flush=True)
sys.stdin.readline()  # the test makes OffsetFetch fail from here on
admin = AdminClient({"bootstrap.servers": bootstrap})
future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")])["g"]
try:
    print("answered", future.result(timeout=30), flush=True)
except Exception as exc:
    print("failed", exc, flush=True)
"""


@pytest.mark.parametrize("code", [KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE])
def test_librdkafkas_admin_offset_fetch_dies_on_a_coordinator_error(code: int) -> None:
    with controlled_cluster() as cluster:
        cluster.create_topic("t", 1)
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT, cluster.bootstrap_servers],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert client.stdout is not None and client.stdin is not None
        assert client.stdout.readline().strip() == "committed"
        cluster.push_errors(OFFSET_FETCH, *[code] * 5)
        client.stdin.write("\n")
        client.stdin.flush()
        output, _ = client.communicate(timeout=60)
    assert client.returncode == -signal.SIGSEGV, output
