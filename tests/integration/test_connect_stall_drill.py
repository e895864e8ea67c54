"""Issue 23's stall on the real stack, paged: the Connect worker cut off from Kafka for longer
than its session timeout leaves `hes-measure` unassigned for Connect's whole scheduled rebalance
delay, while REST still says the task is RUNNING. A real Prometheus evaluates the repository's rules
on the exporter and the worker's JMX agent, and a real Alertmanager routes them (its routing and
inhibitions, second-scale group timers). First a rolling restart of the brokers, the HES written
throughout: no page. Then the cut-off: exactly one page, HesConnectorStalled, within 3 minutes of
the last record, which resolves by itself once rows move again; every row the HES wrote reaches
Parquet once.

How the stall comes about (seen in the worker's log, IncrementalCooperativeAssignor at DEBUG): the
group coordinator does not answer for the session timeout (10 s) and then 3 s more, so the worker
revokes its own connector and task ("Broker coordinator was unreachable for 3000ms. Revoking
previous assignment"); meanwhile the coordinator expires the worker, which rejoins under a new
member id owning nothing. The leader — the same worker, remembering its last assignment — finds
the connector and task lost with their member departed, and holds them back for
scheduled.rebalance.max.delay.ms ("Delayed rebalance is active. Delaying 300000ms"). A rolling
restart of this small, idle cluster does not bring it about (its coordinator moves in well under
3 s); on a loaded one, as in the issue, it can. Here a network partition is played (`cut_off`),
which brings it about every time. The harness's worker waits 2 minutes instead of Connect's 5
(tests/realstack/connect_worker.py), which changes when the stall ends, not when it pages.

What the exporter served at each moment is recorded (tests/realstack/moments.py;
tests/fixtures/connect-debezium/drills/worker-cut-off/). Written for the shared, busy harness: the
exporter filtered to the topic and the run's group, every wait with a deadline."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from tests.exporter.live import exporter_process, wait_for
from tests.integration.hes_drill import (
    BATCH,
    DEADLINE,
    Watch,
    Writer,
    cause,
    every_row_once_in_parquet,
)
from tests.integration.hes_leg import (
    CONNECT,
    CONNECTOR,
    JMX,
    KAFKA,
    TOPIC,
    WRITER,
    env,  # noqa: F401
    exporter_args,
    topic_ends,
)
from tests.integration.ingest_chaos import Brokers, brokers  # noqa: F401
from tests.monitoring.servers import (
    RULE_FILES,
    Receiver,
    derived_prometheus_config,
    fast_alertmanager_config,
    render_alertmanager_config,
    webhook_receiver,
)
from tests.realstack.connect_worker import HARNESS_REBALANCE_DELAY_MS, ConnectWorker
from tests.realstack.kafka_cluster import KafkaCluster
from tests.realstack.moments import Moments
from tests.servers import ALERTMANAGER, PROMETHEUS, start_alertmanager, start_prometheus
from vigia.common import kafka_config
from vigia.exporter.connect.stall import CAUSES

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.prometheus]

# Longer than the worker's session timeout (10 s) and the 3 s it then looks for a coordinator.
BROKERS_PAUSED = 16.0
# Longer than the session timeout again: the coordinator, running, expires the silent member.
WORKER_PAUSED = 15.0
# The bound, from the last record before the pause to the notification. Alertmanager's
# group_wait for pages is 30 s in production and 1 s here: the page must come 29 s earlier.
PAGE_WITHIN = 180.0 - 29.0
# The delay, then the task's start and Debezium's first records.
ROWS_AGAIN_WITHIN = HARNESS_REBALANCE_DELAY_MS / 1000 + 90.0
# keep_firing_for (1 m), then an evaluation, Alertmanager's group_interval and a margin.
RESOLVED_WITHIN = 120.0


def cut_off(cluster: KafkaCluster, worker: ConnectWorker) -> None:
    """The worker cut off from Kafka as by a network partition, whose far side goes on: every
    broker paused with SIGSTOP until the worker has revoked its own tasks, then the worker paused
    while the brokers run again, long enough for its group coordinator to expire it. (With the
    brokers alone paused, whether the coordinator expires the member before the worker's rejoin
    reaches it is a race.) Everything is continued on the way out, whatever happens."""
    assert worker.process is not None
    nodes, worker_process = list(cluster.nodes.values()), worker.process
    try:
        for process in nodes:
            process.signal(signal.SIGSTOP)
        time.sleep(BROKERS_PAUSED)
        worker_process.signal(signal.SIGSTOP)
        for process in nodes:
            process.signal(signal.SIGCONT)
        time.sleep(WORKER_PAUSED)
    finally:
        for process in nodes:
            process.signal(signal.SIGCONT)
        worker_process.signal(signal.SIGCONT)


def pages(pager: Receiver, status: str) -> list[dict[str, Any]]:
    """The alerts of every notification the pager received with `status`."""
    return [
        alert
        for payload in pager.payloads("pager")
        for alert in payload["alerts"]
        if alert["status"] == status
    ]


# A rolling restart, then the stall's 2 minutes of delay and its resolution: 494 s on a busy
# machine, close to the default 600 s; each wait inside keeps its own deadline.
@pytest.mark.timeout(900)
def test_a_worker_cut_off_from_kafka_stalls_for_the_rebalance_delay_and_pages_once(
    env: dict[str, str],  # noqa: F811
    connect_worker: ConnectWorker,
    real_stack_cluster: KafkaCluster,
    brokers: Brokers,  # noqa: F811
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    if PROMETHEUS is None or ALERTMANAGER is None:
        pytest.skip("not installed: prometheus, prometheus-alertmanager (Debian packages)")
    run_id = uuid.uuid4().hex[:8]
    group, prefix = f"vigia-it-stall-{run_id}", f"it{run_id}-"
    options = kafka_config.from_env()
    start = topic_ends(env[KAFKA], options)
    writer = Writer(env[WRITER], prefix)
    with (
        webhook_receiver() as pager,
        exporter_process(tmp_path / "exporter.log", *exporter_args(env, group)) as exporter,
    ):
        (tmp_path / "am").mkdir()
        rendered = render_alertmanager_config(
            tmp_path / "am" / "rendered.yml", pager.url("pager"), pager.url("ticket")
        )
        alertmanager = start_alertmanager(
            fast_alertmanager_config(rendered, tmp_path / "am" / "alertmanager.yml"),
            tmp_path / "am" / "data",
            tmp_path / "am" / "alertmanager.log",
        )
        # The worker's JMX agent too, as in production: without its Debezium series,
        # HesCdcDisconnected (on their absence, `for: 5m`) fires in a drill that runs long, before
        # the stall pages and holds it back.
        prometheus_config = derived_prometheus_config(
            tmp_path,
            {
                "vigia-exporter": [exporter.url.removeprefix("http://")],
                "kafka-connect": [urlsplit(env[JMX]).netloc],
            },
            RULE_FILES,
            alertmanager=alertmanager.url.removeprefix("http://"),
            interval="2s",
        )
        prometheus = start_prometheus(
            prometheus_config, tmp_path / "data", tmp_path / "prometheus.log"
        )
        try:
            watch = Watch(exporter)
            moments = Moments(tmp_path / "worker-cut-off", exporter, env[CONNECT], TOPIC, env[JMX])
            watch.until(
                lambda s: s.task == "RUNNING" and set(s.stalls) == set(CAUSES),
                DEADLINE,
                "the task RUNNING and every stall series served",
            )
            wait_for(
                lambda: exporter.get("/api/v1/cluster").status_code == 200,
                DEADLINE,
                "the exporter's first collection",
            )
            moments.record("healthy")

            writer.start()
            watch.until(lambda s: len(writer.written) >= 5 * BATCH, 30, "rows written")
            watch.until(lambda s: s.end > sum(start.values()), DEADLINE, "rows moving")
            _rolling_restart(brokers, watch, moments)
            assert not pager.payloads("pager"), "a rolling restart paged"
            rolled = watch.look()
            before = watch.until(lambda s: s.end > rolled.end, DEADLINE, "rows moving after it")
            cut_off(real_stack_cluster, connect_worker)
            moments.mark(
                f"the worker cut off from Kafka {BROKERS_PAUSED + WORKER_PAUSED:g} s, "
                f"{len(writer.written)} rows written"
            )

            stalled = watch.until(
                lambda s: cause(s) == "unassigned", DEADLINE, "the stall, cause unassigned"
            )
            rest = httpx.get(f"{env[CONNECT]}/connectors/{CONNECTOR}/status", timeout=10).json()
            moments.mark(
                f"stalled, cause unassigned, {stalled.at - before.at:.1f} s after the last look "
                f"before the pause; REST: connector {rest['connector']['state']}, tasks "
                f"{[t['state'] for t in rest['tasks']]}"
            )
            moments.record("cut-off-stalled")

            firing = _wait(lambda: pages(pager, "firing"), PAGE_WITHIN, "the page")
            paged = watch.look()
            assert [p["labels"]["alertname"] for p in firing] == ["HesConnectorStalled"], firing
            page = firing[0]
            assert (
                page["labels"]["connector"] == CONNECTOR
                and "unassigned" in (page["annotations"]["description"])
            )
            moments.mark(f"paged: {page['annotations']['summary']!r}")
            assert paged.at - before.at < PAGE_WITHIN
            moments.record("paged")

            _wait(lambda: watch.look().end > paged.end, ROWS_AGAIN_WITHIN, "rows again")
            moving = watch.looks[-1]
            moments.mark(f"rows move again, {moving.at - before.at:.1f} s after the pause began")
            moments.record("moving-again")
            rows_then = len(writer.written)
            watch.until(lambda s: len(writer.written) >= rows_then + 4 * BATCH, 30, "rows after")
            written = writer.stop()
            every_row_once_in_parquet(env, group, prefix, start, written, tmp_path, request)
            moments.mark(f"every one of {len(written)} rows in Parquet, once")

            resolved = _wait(lambda: pages(pager, "resolved"), RESOLVED_WITHIN, "the resolve")
            moments.mark(f"resolved, {watch.look().at - moving.at:.1f} s after rows moved")
            moments.record("recovered")
            assert [p["labels"] for p in resolved] == [page["labels"]]
            # Exactly one page: one firing notification, of one alert, in the whole drill.
            assert [p["labels"]["alertname"] for p in pages(pager, "firing")] == [
                "HesConnectorStalled"
            ]
        finally:
            writer.halt.set()
            prometheus.stop()
            alertmanager.stop()
            kafka = AdminClient({"bootstrap.servers": env[KAFKA], **options})
            kafka.delete_consumer_groups([group], request_timeout=30)[group].exception(timeout=30)


def _rolling_restart(brokers: Brokers, watch: Watch, moments: Moments) -> None:  # noqa: F811
    """Every broker stopped (controlled shutdown) for 5 s and started again in turn, the next one
    once `measure` is in sync again, with the HES written meanwhile. On this small cluster the
    group coordinator moves in well under the 3 s that would make the worker revoke its task
    (measured): routine maintenance, no stall expected, and no page allowed."""
    causes: set[str] = set()
    for broker in brokers.ids():
        brokers.stop(broker)
        time.sleep(5)
        brokers.start(broker)
        brokers.wait_in_sync(TOPIC, broker)
        causes |= {c for c in [cause(watch.look())] if c}
    moments.mark(f"rolling restart done; stall causes served meanwhile: {sorted(causes) or 'none'}")


def _wait(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"no {what} after {timeout:g} s"
        time.sleep(1)
    return found
