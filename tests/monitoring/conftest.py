"""Session fixtures: a real Alertmanager routing to a loopback receiver, and a real Prometheus
holding two hours of history backfilled from the exporter's, the brokers' and the ingest job's real
output (tests/monitoring/history.py), recording rules included; and one holding the exporter alone,
run with kafka_exporter's per-partition group series, for kafka_exporter's community board."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest
import yaml

from tests.conftest import free_port
from tests.monitoring import boards
from tests.monitoring.community_7589 import QUERIES as COMMUNITY_QUERIES
from tests.monitoring.history import History, write_exporter_history, write_history
from tests.monitoring.promql import metric_name, selectors
from tests.monitoring.servers import (
    RULE_FILES,
    PromAPI,
    Receiver,
    derived_prometheus_config,
    fast_alertmanager_config,
    render_alertmanager_config,
    webhook_receiver,
)
from tests.servers import (
    MISSING,
    PROMTOOL,
    Server,
    run,
    start_alertmanager,
    start_prometheus,
    wait_until,
)
from vigia.exporter.model.granularity import DEFAULT, Level

HISTORY_SECONDS = 2 * 3600
WARMUP = 15 * 60  # the first minutes lack the 5m-15m windows rates and derivatives need


@pytest.fixture(scope="session")
def binaries() -> None:
    if MISSING:
        pytest.skip(
            f"not installed: {', '.join(MISSING)} (Debian packages prometheus, "
            "prometheus-alertmanager)"
        )


@pytest.fixture(scope="session")
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as r:
        yield r


@pytest.fixture(scope="session")
def alertmanager(
    binaries: None, receiver: Receiver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("alertmanager")
    rendered = render_alertmanager_config(
        work / "rendered.yml", receiver.url("pager"), receiver.url("ticket")
    )
    config = fast_alertmanager_config(rendered, work / "alertmanager.yml")
    server = start_alertmanager(config, work / "data", work / "alertmanager.log")
    yield server
    server.stop()


def rule_expressions() -> dict[str, str]:
    """Rule name (record or alert) -> expression, over every rule file."""
    out = {}
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                out[rule.get("record") or rule["alert"]] = rule["expr"]
    return out


def needed_metrics() -> set[str]:
    exprs = [*rule_expressions().values(), *(t.expr for t in boards.targets())]
    exprs += [v.query for v in boards.variables()] + list(COMMUNITY_QUERIES.values())
    return {name for expr in exprs for s in selectors(expr) if (name := metric_name(s))}


@dataclass(frozen=True)
class Backfilled:
    api: PromAPI
    history: History

    @property
    def start(self) -> float:
        return self.history.start + WARMUP

    def end(self) -> float:
        return time.time()  # the backfill ends a minute ago; self-scrapes cover the last seconds


@pytest.fixture(scope="session")
def backfilled(
    binaries: None, alertmanager: Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backfilled]:
    assert PROMTOOL is not None
    work = tmp_path_factory.mktemp("backfill")
    end = time.time() - 60
    needed = needed_metrics()
    history = write_history(
        work / "history.om", work / "recordings", end - HISTORY_SECONDS, end, needed.__contains__
    )
    data = work / "data"
    history_file = str(work / "history.om")
    result = run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", history_file, str(data)])
    assert result.returncode == 0, result.stderr
    (work / "history.om").unlink()  # ~100 MB

    port = free_port()
    config = derived_prometheus_config(
        work,
        {
            "prometheus": [f"127.0.0.1:{port}"],
            "alertmanager": [alertmanager.url.removeprefix("http://")],
        },
        RULE_FILES,
        interval="2s",
    )
    log = work / "prometheus.log"
    server = start_prometheus(config, data, log, port)
    try:
        rules_out = work / "rule-blocks"
        recording = [p for p in RULE_FILES if p.name in ("recording.yml", "slo.yml")]
        result = run(
            [PROMTOOL, "tsdb", "create-blocks-from", "rules", f"--start={int(history.start)}",
             f"--end={int(history.end)}", f"--url={server.url}", "--eval-interval=15s",
             f"--output-dir={rules_out}", *map(str, recording)],
            timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
    finally:
        server.stop()
    for block in rules_out.iterdir():
        shutil.move(str(block), data / block.name)

    server = start_prometheus(config, data, log, port)
    api = PromAPI(server.url)
    # Prometheus' and Alertmanager's own metrics come from live scrapes: wait for a rate's worth.
    wait_until(
        lambda: (
            api.instant("rate(prometheus_rule_evaluation_failures_total[1m])")
            and api.instant("rate(alertmanager_notifications_failed_total[1m])")
        ),
        60,
        "two self-scrapes of Prometheus and Alertmanager",
    )
    yield Backfilled(api, history)
    server.stop()


# Community boards made for kafka_exporter (Grafana 7589) read its per-partition group series,
# which Vigía's exporter serves on request only: an exporter run with them, alone.
COMMUNITY_GRANULARITY = replace(DEFAULT, group_offsets=Level.PARTITION)
COMMUNITY_HISTORY_SECONDS = WARMUP + 10 * 60


@pytest.fixture(scope="session")
def backfilled_community(
    binaries: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backfilled]:
    assert PROMTOOL is not None
    work = tmp_path_factory.mktemp("backfill-community")
    end = time.time() - 60
    history = write_exporter_history(
        work / "history.om",
        work / "recordings",
        end - COMMUNITY_HISTORY_SECONDS,
        end,
        COMMUNITY_GRANULARITY,
    )
    data = work / "data"
    result = run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(work / "history.om"), str(data)]
    )
    assert result.returncode == 0, result.stderr
    port = free_port()
    config = derived_prometheus_config(work, {"prometheus": [f"127.0.0.1:{port}"]}, [])
    server = start_prometheus(config, data, work / "prometheus.log", port)
    yield Backfilled(PromAPI(server.url), history)
    server.stop()


def dump(result: object) -> str:
    return json.dumps(result)[:500]
