"""Exporters run as processes against a real cluster and scraped as Prometheus would: Vigía's
(`python -m vigia.exporter.cli`, from this checkout) and kafka_exporter 1.9.0, the exporter most
Kafka users run (../shared/kafka-exporter). Shared by the series budget test and the benchmarks."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.realstack.process import LoggedProcess

LAST_COLLECTION = "vigia_exporter_last_collection_timestamp_seconds"


@contextmanager
def running(name: str, argv: Sequence[str], workdir: Path) -> Iterator[LoggedProcess]:
    """A process of the harness's kind (its own session, output in a log), stopped by its PID."""
    process = LoggedProcess(name, argv, workdir / f"{name}.log", dict(os.environ))
    process.launch()
    try:
        yield process
    finally:
        process.stop(30)


def exporter_argv(bootstrap: str, port: int, *extra: str) -> list[str]:
    """`vigia-exporter` at its defaults but for `extra`, run from this checkout."""
    return [
        sys.executable,
        "-m",
        "vigia.exporter.cli",
        "--bootstrap-servers",
        bootstrap,
        "--port",
        str(port),
        *extra,
    ]


def kafka_exporter_argv(binary: Path, bootstrap: str, port: int) -> list[str]:
    """kafka_exporter at its defaults, as ../shared/kafka-exporter/README.md runs it."""
    return [
        str(binary),
        f"--kafka.server={bootstrap.split(',')[0]}",
        "--kafka.version=4.0.0",
        f"--web.listen-address=127.0.0.1:{port}",
    ]


def scrape(url: str, timeout: float = 600.0) -> str:
    """/metrics; kafka_exporter's scrape took 75 s at 2,000 groups on the loaded 2-core machine."""
    response = httpx.get(f"{url}/metrics", timeout=timeout)
    response.raise_for_status()
    return response.text


def series_count(exposition: str) -> int:
    return sum(1 for line in exposition.splitlines() if line and not line.startswith("#"))


def gauge(exposition: str, name: str) -> float | None:
    """A label-less sample read off its line, without parsing the whole exposition."""
    prefix = f"\n{name} "
    at = exposition.find(prefix)
    if at < 0:
        return None
    return float(exposition[at + len(prefix) :].split("\n", 1)[0])


def next_collection(url: str, after: float | None, interval: float, deadline: float) -> str:
    """The exposition of the first collection that finished after `after` (its timestamp):
    asked for when it is due, then every second, as few scrapes as can see it."""
    if after is not None:
        time.sleep(max(0.0, after + interval - time.time()))
    while time.monotonic() < deadline:
        try:
            text = scrape(url, timeout=30)
        except (httpx.HTTPError, OSError):
            text = ""
        stamp = gauge(text, LAST_COLLECTION)
        if stamp is not None and (after is None or stamp > after):
            return text
        time.sleep(1.0)
    raise TimeoutError(f"no new collection at {url} before the deadline")


def wait_listening(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=5)
            return
        except (httpx.HTTPError, OSError):
            time.sleep(0.5)
    raise TimeoutError(f"nothing listens at {url}")
