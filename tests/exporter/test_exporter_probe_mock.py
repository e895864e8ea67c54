"""`vigia-exporter` as a process with its end-to-end probe: running against librdkafka's mock
cluster, and disabled with --no-probe.

The mock cannot create topics (no controller) but auto-creates one on produce, with partitions
that all prefer broker 1; the probe then uses that topic as it finds it, says in the log that it
cannot add partitions for the other brokers, and attributes each partition to its leader.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.conftest import MockCluster, free_port
from tests.exporter.exposition import Samples, value
from tests.exporter.live import exporter_process, wait_for

FAST = ("--collection-interval", "0.5", "--collection-timeout", "1.5")
PROBE = ("--probe-topic", "vigia-probe", "--probe-interval", "0.3", "--probe-deadline", "3")


def test_probe_runs_on_the_existing_topic_and_serves_its_families(
    mock_cluster: MockCluster, tmp_path: Path
) -> None:
    bootstrap = mock_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("vigia-probe", b"not a probe")  # the mock auto-creates the topic
    assert producer.flush(10) == 0
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics("vigia-probe", timeout=5)
    leaders = {p.leader for p in metadata.topics["vigia-probe"].partitions.values()}

    with exporter_process(
        tmp_path / "exporter.log", "--bootstrap-servers", bootstrap, *FAST, *PROBE
    ) as exp:

        def every_leader_ok() -> Samples | None:
            found = exp.metrics()
            ok = [
                value(found, "vigia_probe_messages_total", broker=str(b), outcome="ok") or 0
                for b in leaders
            ]
            return found if min(ok) >= 3 else None

        found = wait_for(every_leader_ok, 60, "probe round trips through every leader")
        assert isinstance(found, dict)
        assert value(found, "vigia_probe_up") == 1
        for broker in map(str, leaders):
            for acks in ("all", "1"):
                count = "vigia_probe_produce_latency_seconds_count"
                assert (value(found, count, broker=broker, acks=acks) or 0) >= 1
            assert (value(found, "vigia_probe_roundtrip_latency_seconds_count", broker=broker)) >= 3
            replication = value(found, "vigia_probe_replication_latency_seconds", broker=broker)
            assert replication is not None and replication >= 0
            assert value(found, "vigia_probe_messages_total", broker=broker, outcome="failed") == 0

        probe = exp.get("/api/v1/cluster").json()["probe"]
        assert (probe["status"], probe["topic"], probe["interval_seconds"]) == (
            "running",
            "vigia-probe",
            0.3,
        )
        assert {b["broker"] for b in probe["brokers"]} == leaders
        assert all(b["messages"]["ok"] >= 3 for b in probe["brokers"])
    log = exp.log_text()
    assert "end-to-end probe running on 'vigia-probe'" in log
    assert "cannot add probe partitions led by brokers [2, 3]" in log


def test_no_probe_serves_probe_up_0_and_logs_why(tmp_path: Path) -> None:
    unreachable = f"127.0.0.1:{free_port()}"
    with exporter_process(
        tmp_path / "exporter.log", "--bootstrap-servers", unreachable, "--no-probe", *FAST
    ) as exp:
        found = exp.metrics()
        assert value(found, "vigia_probe_up") == 0
        assert {n for n, _ in found if n.startswith("vigia_probe")} == {"vigia_probe_up"}
        wait_for(lambda: exp.get("/readyz").status_code == 200, what="a first collection")
        assert exp.get("/api/v1/cluster").json()["probe"] == {
            "status": "disabled",
            "topic": None,
            "interval_seconds": None,
            "brokers": [],
            "coverage": [],
        }
    assert "end-to-end probe disabled by configuration (--no-probe)" in exp.log_text()
