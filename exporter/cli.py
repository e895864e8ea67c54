"""`vigia-exporter`: parse the configuration, bind the port, serve the app with uvicorn."""

from __future__ import annotations

import faulthandler
import gc
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from typing import NoReturn

import uvicorn
from confluent_kafka import KafkaException

from vigia.common.glibc_malloc import fix_mmap_threshold, limit_arenas
from vigia.common.logs import setup_logging
from vigia.common.web_guard import AsgiGuard
from vigia.common.web_tls import server_context
from vigia.exporter.config import PROG, ConfigError, ExporterConfig, parse_config
from vigia.exporter.connect.adapter import ConnectClient
from vigia.exporter.connect.watcher import ConnectWatcher
from vigia.exporter.hes.adapter import HesAdapter
from vigia.exporter.hes.binlog_watch import BinlogWatch
from vigia.exporter.hes.watch import SourceWatcher
from vigia.exporter.kafka.adapter import KafkaAdapter
from vigia.exporter.kafka.connect_offsets import ConnectOffsets
from vigia.exporter.kafka.record_times import RecordTimeReader
from vigia.exporter.kafka.topic_tail import TopicTail
from vigia.exporter.model.binlog import BinlogTracker
from vigia.exporter.model.state import History
from vigia.exporter.probe.runner import ProbeRunner
from vigia.exporter.service import CollectionService
from vigia.exporter.web.app import create_app
from vigia.exporter.web.server import QuietServer
from vigia.exporter.web.tls_sniff import sniffing_protocol

log = logging.getLogger("exporter")


def tune_gc() -> None:
    """The exporter's state is acyclic and freed by reference counting; the cyclic collector's
    full collections only rescan its large, long-lived history and the imported modules, about a
    quarter of derive's and render's CPU at 2,000 partitions (benchmarks/exporter_snapshot.py).
    Never rescan what startup created, and collect the oldest generation 100 times less often."""
    gc.freeze()
    gc.set_threshold(700, 10, 1000)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    limit_arenas()  # before any thread starts
    fix_mmap_threshold()
    # A crash in native code (librdkafka's threads) leaves every thread's stack on stderr, where
    # the supervisor keeps the exporter's log, instead of a bare exit status; `kill -USR1` writes
    # them there from a running exporter that stopped answering.
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        config = parse_config(argv)
    except ConfigError as exc:
        _invalid(str(exc))
    setup_logging(config.log_level)
    # uvicorn's own start and stop (six lines) say nothing the exporter's "serving" line does not;
    # its errors still show.
    logging.getLogger("uvicorn.error").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        adapter = KafkaAdapter(
            config.bootstrap_servers,
            config.kafka_options,
            config.filters,
            # The ingest job's group, whether or not the cluster can list its groups.
            named_groups={config.source.group: config.source.topic},
            slow_phase_interval=config.slow_phase_interval,
            assumed_configs=config.assumed_topic_configs,
        )
    except KafkaException as exc:
        _invalid(f"invalid Kafka option: {exc.args[0].str() if exc.args else exc}")
    try:
        sock = _bind(config)
    except OSError as exc:
        adapter.close()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        _invalid(f"cannot listen on {config.listen_address}:{config.port}: {reason}")

    probe = ProbeRunner(
        {**config.kafka_options, "bootstrap.servers": config.bootstrap_servers}, config.probe
    )
    record_times = RecordTimeReader(
        config.bootstrap_servers, config.kafka_options, config.record_budget
    )
    service = CollectionService(
        adapter.collect,
        config.collection_interval,
        config.collection_timeout,
        bootstrap_servers=config.bootstrap_servers,
        history=History.create(
            config.lag_status_window, config.catch_up_window, config.retention_floor
        ),
        probe=probe,
        enrich=record_times,
    )
    connect = [
        ConnectWatcher(
            ConnectClient(t.name, t.url, config.collection_timeout), config.collection_interval
        )
        for t in config.connect_urls
    ]
    source = _source_watcher(config)
    app = create_app(
        service,
        connect=connect,
        source=source,
        granularity=config.granularity,
        cluster_name=config.cluster_name,
    )
    server = QuietServer(_server_config(AsgiGuard(app, config.web), config))
    log.info(
        "serving %s://%s:%d/metrics%s; collecting from %s (cluster %s) every %g s (timeout %g s, "
        "lag status over %d collections)",
        "https" if config.web.tls else "http",
        config.listen_address,
        config.port,
        f" ({len(config.web.users)} basic-auth users)" if config.web.users else "",
        config.bootstrap_servers,
        config.cluster_name,
        config.collection_interval,
        config.collection_timeout,
        config.lag_status_window,
    )
    tune_gc()
    for target in config.connect_urls:
        log.info("watching Kafka Connect %r at %s", target.name, target.url)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        # uvicorn shut down cleanly, then re-raised Ctrl-C's signal: this is a normal stop.
        pass
    finally:
        record_times.close()
        adapter.close()
        sock.close()
    _exit_after_a_clean_stop()


def _exit_after_a_clean_stop() -> NoReturn:
    """Status 0 without the interpreter's and the C library's exit handlers: librdkafka's
    threads of the handles that cannot be closed (an AdminClient has no close) still run while
    those free OpenSSL's state, and a stopped exporter once died there (status -11)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _server_config(app: AsgiGuard, config: ExporterConfig) -> uvicorn.Config:
    """uvicorn's settings; with TLS, uvicorn serves the socket as is and the sniffing protocol
    upgrades each connection (or answers plain HTTP with a 400)."""
    tls = config.web.tls
    return uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        http="auto" if tls is None else sniffing_protocol(server_context(tls)),
    )


def _source_watcher(config: ExporterConfig) -> SourceWatcher | None:
    settings = config.source
    if settings.hes is None:
        return None
    log.info(
        "watching the HES at %s and topic %s every %g s (day rows every %g s; connector %s "
        "stalled after %g s without a record while the HES writes)",
        settings.hes.redacted(),
        settings.topic,
        settings.interval,
        settings.count_interval,
        settings.connector,
        settings.stall_after,
    )
    kafka = {**config.kafka_options, "bootstrap.servers": config.bootstrap_servers}
    binlog = None
    if settings.offsets_topic:
        log.info(
            "binlog margin of connector %s every %g s (its offset from topic %s; at risk under "
            "%g s)",
            settings.connector,
            settings.binlog_interval,
            settings.offsets_topic,
            settings.binlog_floor,
        )
        binlog = BinlogWatch(
            ConnectOffsets(settings.offsets_topic, settings.connector, kafka),
            BinlogTracker(settings.binlog_floor, config.catch_up_window),
            settings.binlog_interval,
            config.collection_timeout,
        )
    return SourceWatcher(
        HesAdapter(settings.hes, config.collection_timeout),
        TopicTail(settings.topic, kafka),
        settings.interval,
        config.collection_timeout,
        group=settings.group,
        count_interval=settings.count_interval,
        connector=settings.connector,
        stall_after=settings.stall_after,
        binlog=binlog,
    )


def _bind(config: ExporterConfig) -> socket.socket:
    """Bind before starting anything so that a port in use is a configuration error."""
    family = socket.AF_INET6 if ":" in config.listen_address else socket.AF_INET
    return socket.create_server((config.listen_address, config.port), family=family)


def _invalid(reason: str) -> NoReturn:
    sys.stderr.write(f"{PROG}: error: {reason}\n")
    raise SystemExit(2)


if __name__ == "__main__":
    main()
