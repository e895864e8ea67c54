"""Minimal reproducer of librdkafka's use-after-free in coordinator admin requests (issue 20 §0).

A coordinator-targeted admin request (ListConsumerGroupOffsets, DescribeConsumerGroups, ...) whose
`request_timeout` fires while librdkafka is still waiting for a usable coordinator (no broker up,
FindCoordinator unanswered, coordinator connection down) leaves its `rd_kafka_coord_req` pending;
when a broker comes up the request's send callback (`rd_kafka_admin_coord_request`) finds the
admin op gone, drops the last reference to its `enq_once` (freeing it) and returns an error, upon
which `rd_kafka_coord_req_fail` hands the freed `enq_once` to `rd_kafka_admin_coord_response_parse`:
`rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed` (or a segfault).

Here: a 3-node cluster (the harness's), a client bootstrapped on one node only, that node
stopped, `--requests` `list_consumer_group_offsets(request_timeout=2)` calls that time out, the
node started again. The client process aborts within seconds of the node's return (librdkafka
2.16.0). `--mode long` and `--mode retire` run the exporter's way instead: the client survives.

    PYTHONPATH=. python -m benchmarks.rdkafka_coord_timeout_crash \
        --kafka-home /work/shared/kafka/kafka_2.13-4.0.0
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.realstack.kafka_cluster import KafkaCluster

# Runs in a child process so that its abort is observed, not suffered.
CLIENT = """
import sys, time
from concurrent.futures import wait
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
mode = sys.argv[4]
futures = [
    f
    for n in range(int(sys.argv[3]))
    for f in admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(f"reproducer-group-{n}")],
        request_timeout=2 if mode == "timeout" else 3600,
    ).values()
]
wait(futures, timeout=5)
print(f"{sum(f.done() for f in futures)} of {len(futures)} requests ended ({mode})", flush=True)
if mode == "retire":  # the exporter's way out: the client holding them is destroyed
    del admin, futures
    import gc
    gc.collect()
    print("client destroyed with its requests out", flush=True)
    admin = AdminClient({"bootstrap.servers": sys.argv[1]})
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        admin.list_topics(timeout=1)
        break
    except KafkaException:
        pass
print("node back", flush=True)
time.sleep(15)
try:  # an admin request is served by librdkafka's main thread
    admin.describe_cluster(request_timeout=10).result(timeout=15)
    print("client survived, its main thread answers", flush=True)
except Exception as exc:
    print(f"client alive but its main thread does not answer: {exc!r}", flush=True)
    time.sleep(3600)  # for gdb
"""


def report(client: subprocess.Popen[str]) -> None:
    """The client's lines (librdkafka's own, about the stopped node, left out); where its main
    thread no longer answers, gdb's backtrace of that thread."""
    assert client.stdout is not None
    for line in client.stdout:
        if line.startswith(("%", "[New Thread", "[Thread ")):
            continue
        print(line.rstrip(), flush=True)
        if "does not answer" in line:
            trace = subprocess.run(
                ["gdb", "-p", str(client.pid), "-batch", "-ex", "thread apply all bt 12"],
                capture_output=True,
                text=True,
                timeout=120,
            ).stdout
            main = trace[trace.find("rdk:main") :]
            print("rdk:main thread:\n" + main[: main.find("\nThread ", 1)], flush=True)
            return
    client.wait()
    status = client.returncode
    print(f"client exit status {status} ({'aborted' if status else 'ok'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", type=Path, required=True)
    parser.add_argument("--node", type=int, default=3, help="the node the client bootstraps on")
    parser.add_argument(
        "--requests", type=int, default=200, help="groups asked for, one request each"
    )
    parser.add_argument("--gdb", action="store_true", help="run the client under gdb")
    parser.add_argument(
        "--mode",
        choices=("timeout", "long", "retire"),
        default="timeout",
        help="timeout: request_timeout 2 s (the crash); long: librdkafka's longest timeout and the "
        "wait bounded in Python (the exporter's way); retire: long, then the client destroyed "
        "while its requests are out",
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="rdkafka-coord-"))
    cluster = KafkaCluster(args.kafka_home, workdir)
    try:
        cluster.start_all()
        bootstrap = f"127.0.0.1:{cluster.ports[args.node].plaintext}"
        cluster.stop(args.node)
        argv = [sys.executable, "-c", CLIENT, bootstrap, "180", str(args.requests), args.mode]
        if args.gdb:  # the aborting thread's stack, printed by gdb when the signal arrives
            argv = ["gdb", "-q", "-batch", "-ex", "run", "-ex", "bt 14", "--args", *argv]
        client = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        time.sleep(5)  # the requests have timed out by now
        cluster.start(args.node)
        try:
            report(client)
        finally:
            client.kill()
            client.wait()
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
