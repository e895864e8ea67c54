"""`vigia-simulate live | backfill | outage`: smart-meter measures, as an HES writes them, to Kafka
(``--sink kafka``, the default) or into the HES database itself (``--sink hes --hes-dsn DSN``,
the table ``hes.measure``; Kafka Connect then carries the rows to the topic).

Every flag has an environment variable ``VIGIA_SIMULATE_<FLAG>`` (``--malformed-ratio`` →
``VIGIA_SIMULATE_MALFORMED_RATIO``), except the shared ones: ``VIGIA_KAFKA_BOOTSTRAP_SERVERS``,
``VIGIA_KAFKA_OPTIONS``, ``VIGIA_HES_DSN``, ``VIGIA_HES_DSN_FILE`` and ``VIGIA_LOG_LEVEL``. Flags
win. Flags go after the subcommand.

Exit codes: 0 everything delivered; 1 the cluster (or the HES database) could not be reached or
some messages were not delivered (the manifest, when asked for, is written anyway and counts only
delivered messages);
2 invalid configuration. SIGINT / SIGTERM stop the run cleanly: queued messages are flushed and
the manifest written.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from vigia.common.hes import DsnError, parse_dsn
from vigia.common.kafka_config import KafkaOptionError, merged
from vigia.common.logs import setup_logging
from vigia.common.secret_file import SecretFileError, read_secret
from vigia.ingest.schema import MAGNITUDES
from vigia.ingest.simulator.delivery import DeliveryTally
from vigia.ingest.simulator.hes_sink import HesSink, HesSinkError
from vigia.ingest.simulator.malformed import FaultInjector
from vigia.ingest.simulator.manifest import Manifest, meter_range, write_manifest
from vigia.ingest.simulator.metrics import MetricsServer, RunState, SimulatorCollector
from vigia.ingest.simulator.producer import KafkaSink, ProducerError
from vigia.ingest.simulator.runner import Outage, Runner

log = logging.getLogger("vigia.simulate")

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
SINKS = ("kafka", "hes")
HES_TABLE = "hes.measure"


class ConfigError(ValueError):
    pass


class _Parser(argparse.ArgumentParser):
    """Reports a bad flag as one line (exit 2 in `main`), not usage plus message."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(message)


def _env(flag: str, default: str) -> str:
    return os.environ.get("VIGIA_SIMULATE_" + flag.upper().replace("-", "_"), default)


def _bounded(kind: Callable[[str], Any], low: float, high: float | None = None) -> Any:
    def convert(text: str) -> Any:
        value = kind(text)
        if value < low or (high is not None and value > high):
            upper = f" and at most {high:g}" if high is not None else ""
            raise argparse.ArgumentTypeError(f"{text} must be at least {low:g}{upper}")
        return value

    convert.__name__ = kind.__name__
    return convert


def _ratio(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a ratio in [0, 1)")
    return value


def _utc_datetime(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


_utc_datetime.__name__ = "ISO-8601 date-time"


def _date(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


_date.__name__ = "YYYY-MM-DD date"


def _truthy(text: str) -> bool:
    return text.strip().lower() in {"1", "true", "yes", "on"}


def _common_flags() -> _Parser:
    common = _Parser(add_help=False)
    add = common.add_argument
    add(
        "--bootstrap-servers",
        default=os.environ.get("VIGIA_KAFKA_BOOTSTRAP_SERVERS", "localhost:9092"),
        help="Kafka bootstrap servers (env VIGIA_KAFKA_BOOTSTRAP_SERVERS; localhost:9092)",
    )
    add(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka setting, repeatable (env VIGIA_KAFKA_OPTIONS)",
    )
    add("--topic", default=_env("topic", "measure"), help="topic to produce to (measure)")
    add(
        "--sink",
        choices=SINKS,
        default=_env("sink", "kafka"),
        help="kafka: produce to the topic; hes: upsert into hes.measure (kafka)",
    )
    add(
        "--hes-dsn",
        default=os.environ.get("VIGIA_HES_DSN", "") or None,
        help="HES database for --sink hes, mysql://user:password@host:3306/hes, a user with "
        "INSERT and UPDATE on hes.* (env VIGIA_HES_DSN)",
    )
    add(
        "--hes-dsn-file",
        default=os.environ.get("VIGIA_HES_DSN_FILE", "") or None,
        help="file holding the --hes-dsn, so that its password shows in no process list "
        "(--hes-dsn and VIGIA_HES_DSN win; env VIGIA_HES_DSN_FILE)",
    )
    add("--meters", type=_bounded(int, 1), default=_env("meters", "10000"), help="meters (10000)")
    add("--meter-prefix", default=_env("meter_prefix", "UY"), help="meter id prefix (UY)")
    add(
        "--rate",
        type=_bounded(float, 0),
        default=_env("rate", "0"),
        help="at most this many messages per second; 0 = as fast as possible (0)",
    )
    add(
        "--malformed-ratio",
        type=_ratio,
        default=_env("malformed_ratio", "0"),
        help="share of malformed messages, every rejection reason in turn (0)",
    )
    add(
        "--duplicate-ratio",
        type=_bounded(float, 0, 1),
        default=_env("duplicate_ratio", "0"),
        help="share of readings re-sent later as a correction with a newer ts (0)",
    )
    add("--manifest", default=_env("manifest", "") or None, help="write the run's manifest here")
    add("--metrics-address", default=_env("metrics_address", "127.0.0.1"))
    add(
        "--metrics-port",
        type=_bounded(int, 0, 65535),
        default=_env("metrics_port", "9311"),
        help="/metrics port; 0 = no endpoint (9311)",
    )
    add(
        "--metrics-linger",
        type=_bounded(float, 0),
        default=_env("metrics_linger", "0"),
        help="keep /metrics up this many seconds after the run, for a last scrape (0)",
    )
    add("--seed", type=int, default=_env("seed", "42"), help="random seed (42)")
    add(
        "--connect-timeout",
        type=_bounded(float, 0.1),
        default=_env("connect_timeout", "10"),
        help="seconds to wait for the cluster before giving up (10)",
    )
    add(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=os.environ.get("VIGIA_LOG_LEVEL", "INFO"),
    )
    return common


def _live_flags(parser: _Parser) -> None:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    parser.add_argument(
        "--start",
        type=_utc_datetime,
        default=_env("start", now),
        help="simulated start time, ISO-8601, UTC when no offset (now)",
    )
    parser.add_argument(
        "--speed",
        type=_bounded(float, 0.001),
        default=_env("speed", "1"),
        help="simulated seconds per wall-clock second (1)",
    )
    parser.add_argument(
        "--duration",
        type=_bounded(float, 0),
        default=_env("duration", "0"),
        help="wall-clock seconds to run; 0 = until stopped (0)",
    )


def build_parser() -> _Parser:
    parser = _Parser(prog="vigia-simulate", description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True, metavar="{live,backfill,outage}")
    common = _common_flags()

    backfill = modes.add_parser("backfill", parents=[common], help="whole days, fast")
    yesterday = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()
    backfill.add_argument(
        "--start-date", type=_date, default=_env("start_date", yesterday), help="(yesterday, UTC)"
    )
    backfill.add_argument("--days", type=_bounded(int, 1), default=_env("days", "1"), help="(1)")

    live = modes.add_parser("live", parents=[common], help="readings as their time comes")
    _live_flags(live)

    outage = modes.add_parser("outage", parents=[common], help="live, with a hold-back window")
    _live_flags(outage)
    outage.add_argument(
        "--outage-after",
        type=_bounded(float, 0),
        default=_env("outage_after", "0"),
        help="wall-clock seconds of normal sending before the outage (0)",
    )
    outage.add_argument(
        "--outage-duration",
        type=_bounded(float, 0),
        default=_env("outage_duration", "300"),
        help="wall-clock seconds during which nothing is sent (300)",
    )
    outage.add_argument(
        "--outage-every",
        type=_bounded(float, 0),
        default=_env("outage_every", "0"),
        help="repeat the outage this many wall-clock seconds after each start; 0 = once (0)",
    )
    outage.add_argument(
        "--stop-after-release",
        action=argparse.BooleanOptionalAction,
        default=_truthy(_env("stop_after_release", "false")),
        help="stop once the backlog is sent instead of continuing live (false)",
    )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    try:
        args = build_parser().parse_args(argv)
    except ValueError as exc:  # a bad environment default fails while the parser is built
        raise ConfigError(str(exc)) from exc
    try:
        args.kafka_options = merged(args.kafka_option)
        args.meter_range = meter_range(args.meters, args.meter_prefix)
        if not args.hes_dsn and args.hes_dsn_file:
            args.hes_dsn = read_secret(args.hes_dsn_file)
        args.hes = parse_dsn(args.hes_dsn) if args.hes_dsn else None
    except SecretFileError as exc:
        raise ConfigError(f"--hes-dsn-file: {exc}") from None
    except DsnError as exc:
        raise ConfigError(f"--hes-dsn: {exc}") from exc
    except (KafkaOptionError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc
    if args.mode == "outage" and 0 < args.outage_every <= args.outage_duration:
        raise ConfigError("--outage-every must be longer than --outage-duration")
    if args.sink == "hes":
        if args.hes is None:
            raise ConfigError("--sink hes needs --hes-dsn (or VIGIA_HES_DSN)")
        if args.malformed_ratio:
            raise ConfigError("--malformed-ratio: the HES table cannot hold a malformed row")
    if args.manifest and not Path(args.manifest).parent.is_dir():
        raise ConfigError(f"--manifest: directory {Path(args.manifest).parent} does not exist")
    return args


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT / SIGTERM end the run cleanly; the previous handlers come back afterwards (the
    simulator also runs inside test processes). Signals reach only the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        log.info("%s: stopping after the current chunk", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _open_sink(args: argparse.Namespace) -> KafkaSink | HesSink | int:
    """The checked sink, or the exit code when it cannot be used."""
    if args.sink == "hes":
        hes = HesSink(args.hes, args.connect_timeout)
        try:
            hes.check()
        except HesSinkError as exc:
            log.error("%s", exc)
            return EXIT_FAILED
        log.info("writing to %s on %s", HES_TABLE, hes.target)
        return hes
    try:
        sink = KafkaSink(
            args.bootstrap_servers, args.topic, args.kafka_options, args.connect_timeout
        )
    except ProducerError as exc:
        log.error("%s", exc)
        return EXIT_CONFIG
    try:
        partitions = sink.check()
    except ProducerError as exc:
        log.error("%s", exc)
        return EXIT_FAILED
    log.info(
        "producing to %s (%d partitions) on %s", args.topic, partitions, sink.bootstrap_servers
    )
    return sink


def run(args: argparse.Namespace) -> int:
    sink = _open_sink(args)
    if isinstance(sink, int):
        return sink

    tally, state = DeliveryTally(), RunState()
    server: MetricsServer | None = None
    if args.metrics_port:
        try:
            server = MetricsServer(
                args.metrics_address,
                args.metrics_port,
                SimulatorCollector(tally, state, sink.pending),
            )
        except OSError as exc:
            log.error(
                "cannot serve metrics on %s:%d: %s",
                args.metrics_address,
                args.metrics_port,
                exc.strerror,
            )
            return EXIT_FAILED
    stop = threading.Event()
    try:
        with _stop_on_signals(stop):
            manifest = _produce(args, sink, tally, state, stop)
            if server is not None and args.metrics_linger > 0 and not stop.is_set():
                log.info("serving final metrics for %g s", args.metrics_linger)
                stop.wait(args.metrics_linger)
    finally:
        if server is not None:
            server.stop()
        if isinstance(sink, HesSink):
            sink.close()
    if manifest.failed:
        log.error(
            "%d messages were not delivered (first error: %s)", manifest.failed, tally.first_error
        )
        return EXIT_FAILED
    return EXIT_OK


def _produce(
    args: argparse.Namespace,
    sink: KafkaSink | HesSink,
    tally: DeliveryTally,
    state: RunState,
    stop: threading.Event,
) -> Manifest:
    """The run itself, then the manifest of what was delivered (written when asked for)."""
    runner = Runner(
        sink,
        args.meter_range,
        args.seed,
        tally,
        state,
        FaultInjector(args.malformed_ratio, args.duplicate_ratio),
        rate=args.rate,
        stop=stop,
    )
    started = dt.datetime.now(dt.UTC)
    try:
        if args.mode == "backfill":
            runner.backfill(args.start_date, args.days)
        else:
            outage = None
            if args.mode == "outage":
                outage = Outage(
                    args.outage_after,
                    args.outage_duration,
                    args.stop_after_release,
                    args.outage_every,
                )
            runner.live(args.start, args.speed, args.duration, outage)
    except ProducerError as exc:
        # The message the producer refused is not delivered; the manifest still gets written.
        log.error("%s", exc)
        tally.fail(1, str(exc))
    finally:
        state.backlog_seconds = 0.0
        undelivered = sink.flush(sink.delivery_timeout + 5.0)
        if undelivered:
            tally.fail(undelivered, "no delivery report before the producer was closed")

    manifest = tally.manifest(
        mode=args.mode,
        topic=HES_TABLE if args.sink == "hes" else args.topic,
        seed=args.seed,
        meters=args.meter_range,
        magnitudes=MAGNITUDES,
    )
    manifest.started_at = _iso(started)
    manifest.finished_at = _iso(dt.datetime.now(dt.UTC))
    manifest.first_ts = _iso_epoch(runner.first_ts)
    manifest.last_ts = _iso_epoch(runner.last_ts)
    if args.manifest:
        write_manifest(manifest, args.manifest)
        log.info("manifest written to %s", args.manifest)
    log.info(
        "delivered %d messages (%d valid, %d corrections, %d malformed), %d failed",
        manifest.produced,
        manifest.valid_total,
        manifest.duplicates,
        manifest.malformed_total,
        manifest.failed,
    )
    return manifest


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _iso_epoch(seconds: int | None) -> str | None:
    return None if seconds is None else _iso(dt.datetime.fromtimestamp(seconds, dt.UTC))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except ConfigError as exc:
        setup_logging("INFO")
        log.error("invalid configuration: %s", exc)
        return EXIT_CONFIG
    setup_logging(args.log_level)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
