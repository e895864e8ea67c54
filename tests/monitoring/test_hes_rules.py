"""prometheus/tests/hes_test.yml is driven by the recordings: every series it feeds for the
recorded connectors (`hes-measure`, `hes-broken`, Debezium server `cdc`) exists in the recordings
with those labels, and carries only values recorded for it: the worker's JMX scrapes for
`debezium_mysql_*` / `kafka_connect_task_status`, the exporter's output on the recorded REST
answers for its Connect families. Absent samples (`_`, `stale`) only where a recorded state lacks
the series. `kafka_connect_connector_stalled` also depends on the flow verdict, which the
recordings do not hold (the HES was down or idle): its values are the exporter's output on each
recorded answer beside every verdict (or none: no --hes-dsn), and with the worker not answering
after it (the connectors left out).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict

import yaml

from tests.connect.recorded import FIXTURES, STATES
from tests.connect.test_connect_model import recorded_reports
from tests.monitoring.history import parse_exposition
from tests.monitoring.servers import PROMETHEUS_DIR
from vigia.exporter.connect.collector import render_connect
from vigia.exporter.connect.model import ConnectView
from vigia.exporter.connect.stall import Pipeline
from vigia.exporter.connect.watcher import next_report
from vigia.exporter.model.pipeline_flow import FLOW_STATES, Flow

TESTS = PROMETHEUS_DIR / "tests" / "hes_test.yml"
RECORDED = {"connector": ("hes-measure", "hes-broken"), "server": ("cdc",)}
ADDED_BY_PROMETHEUS = ("job", "instance", "cluster")
SERIES = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$")
LABEL = re.compile(r'\s*([a-zA-Z_]+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
ABSENT = "absent"
STALLED = "kafka_connect_connector_stalled"

Key = tuple[str, frozenset[tuple[str, str]]]


def _key(name: str, labels: dict[str, str]) -> Key:
    return name, frozenset((k, v) for k, v in labels.items() if k not in ADDED_BY_PROMETHEUS)


def _labels(text: str) -> dict[str, str]:
    return dict(LABEL.findall(text))


def expand(values: str) -> list[float | str]:
    """promtool's expanding notation: `a`, `axN`, `a+bxN`, `a-bxN`, `_`, `_xN`, `stale`."""
    out: list[float | str] = []
    for token in values.split():
        if token == "stale" or token.startswith("_"):
            count = int(token.partition("x")[2] or 0) + 1 if token.startswith("_") else 1
            out += [ABSENT] * count
            continue
        m = re.fullmatch(r"(-?[\d.e]+)(?:([+-][\d.e]+))?(?:x(\d+))?", token)
        assert m, token
        start, step, times = float(m[1]), float(m[2] or 0), int(m[3] or 0)
        out += [start + step * i for i in range(times + 1)]
    return out


def recorded() -> dict[Key, set[float | str]]:
    """Every value each series had in the recorded states; ABSENT when a state lacks it."""
    per_state: list[dict[Key, float]] = []
    for state, report in zip(STATES, recorded_reports(), strict=True):
        scrape = (FIXTURES / state / "worker-metrics.prom").read_text(encoding="utf-8")
        samples = parse_exposition(scrape) + parse_exposition(render_connect([report]))
        per_state.append({_key(s.name, _labels(s.labels)): s.value for s in samples})
    values: dict[Key, set[float | str]] = defaultdict(set)
    for key in set().union(*per_state):
        for state in per_state:
            values[key].add(state.get(key, ABSENT))
    stalls = {k for k in values if k[0] == STALLED}
    for report in recorded_reports():
        down = next_report(report, ConnectView("connect", "http://c", 0, error="timed out"))
        for verdict, seen in itertools.product((*FLOW_STATES, None), (report, down)):
            pipeline = None if verdict is None else Pipeline("hes-measure", Flow(verdict, 0))
            found = {
                _key(s.name, _labels(s.labels)): s.value
                for s in parse_exposition(render_connect([seen], pipeline))
                if s.name == STALLED
            }
            for key in stalls | found.keys():
                values[key].add(found.get(key, ABSENT))
    return values


def test_the_recorded_series_of_the_unit_tests_carry_recorded_values() -> None:
    history = recorded()
    checked = 0
    for group in yaml.safe_load(TESTS.read_text())["tests"]:
        for series in group["input_series"]:
            m = SERIES.match(series["series"])
            assert m, series
            labels = _labels(m[2])
            if not any(labels.get(k) in names for k, names in RECORDED.items()):
                continue  # a synthetic connector, or an HES / ingest series
            if not m[1].startswith(("kafka_connect_", "debezium_mysql_")):
                continue
            key = _key(m[1], labels)
            assert key in history, f"{group['name']}: {series['series']} is not in the recordings"
            unexpected = set(expand(str(series["values"]))) - history[key]
            assert not unexpected, (group["name"], series["series"], unexpected, history[key])
            checked += 1
    assert checked >= 10
