"""Hours of realistic metric history for a real Prometheus, written as OpenMetrics for
`promtool tsdb create-blocks-from openmetrics`.

Sources, each stamped with the job/instance/cluster labels Prometheus' scrape would add:
- vigia-exporter: `exporter.recording.replay` fed a collection every 15 s that follows the five
  recorded cluster states in a loop (TIMELINE: healthy → broker 1 stopped → back without leaders →
  rebalanced, each held for minutes). Each collection is the recorded state shifted in time, with
  offsets and replica sizes advanced at the rates recorded between `healthy` and `rebalanced`, the
  commits of groups that were consuming advanced with them (vigia-ingest never commits, so its lag
  grows), and the shared volume's free space shrinking as the log dirs grow.
- kafka-jmx: the real broker scrapes (`*.jmx-broker-N.prom`) of the state the timeline is in,
  cumulative series advanced the same way; broker 1 is down (up 0) during `broker-down`.
- vigia-ingest: `ingest.metrics.IngestMetrics` (the job's real collector) fed one progress event
  and one written batch every 30 s, a few Kafka retries every fifth batch and one retention skip,
  plus `vigia_ingest_day_completeness_ratio`, which the ingest job does not serve yet (synthetic,
  named as in prometheus/rules/alerts.yml), with the SLIs of prometheus/slo/slos.yml (freshness
  per batch, yesterday's deadline counted half an hour in); and
  `ingest.spark_health.SparkHealth` answering the
  recorded standalone cluster (tests/fixtures/spark-rest/): healthy, then an executor lost
  halfway.
- probe (`vigia_probe_*` on the exporter target): the exporter's real probe bookkeeping
  (`exporter.probe.tracker.LatencyTracker`) and collector, fed simulated probe rounds.
- the HES leg (tests/monitoring/hes_history.py): the recorded Kafka Connect / Debezium / HES
  database states in a loop, and the exporter's Connect and HES families.
Every target is scraped every 15 s, like prometheus/prometheus.yml.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from prometheus_client import CollectorRegistry, Gauge

from tests.conftest import KAFKA_FIXTURES, SCENARIOS
from vigia.exporter.model.granularity import DEFAULT, Granularity
from vigia.exporter.recording import replay

CLUSTER = "smartmeter"
SCRAPE_INTERVAL = 15.0
INGEST_QUERY = "measure-ingest"
CUMULATIVE = re.compile(r".*(_total|_count|_sum|_bucket)$")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?$")


@dataclass(frozen=True)
class Target:
    job: str
    instance: str
    broker: str | None = None

    def labels(self) -> str:
        extra = f',broker="{self.broker}"' if self.broker else ""
        return f'job="{self.job}",instance="{self.instance}",cluster="{CLUSTER}"{extra}'


EXPORTER = Target("vigia-exporter", "exporter:9308")
INGEST = Target("vigia-ingest", "ingest:9310")
SPARK_REST = Path(__file__).parents[1] / "fixtures" / "spark-rest"
BROKERS = {b: Target("kafka-jmx", f"kafka-{b}:9404", str(b)) for b in (1, 2, 3)}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: str  # inside the braces, without a trailing comma
    value: float


def collect(registry: CollectorRegistry) -> list[Sample]:
    """What a scrape of `registry` returns, without formatting and re-parsing text."""
    return [
        Sample(s.name, ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels.items()), s.value)
        for family in registry.collect()
        for s in family.samples
        if not s.name.endswith("_created")
    ]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def parse_exposition(text: str) -> list[Sample]:
    """Samples of a text exposition (0.0.4), without `_created` series."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if match is None:
            raise ValueError(f"not a sample line: {line!r}")
        name, braces, value = match.groups()
        if name.endswith("_created"):
            continue
        labels = braces[1:-1].rstrip(",") if braces else ""
        samples.append(Sample(name, labels, float(value)))
    return samples


class OpenMetricsWriter:
    def __init__(self, out: TextIO) -> None:
        self._out = out
        self.samples = 0

    def write(self, target: Target, samples: list[Sample], t: float) -> None:
        extra = target.labels()
        lines = []
        for s in samples:
            labels = f"{s.labels},{extra}" if s.labels else extra
            lines.append(f"{s.name}{{{labels}}} {_number(s.value)} {t:.3f}\n")
        self._out.writelines(lines)
        self.samples += len(lines)

    def up(self, target: Target, t: float, value: int) -> None:
        self.write(target, [Sample("up", "", float(value))], t)

    def close(self) -> None:
        self._out.write("# EOF\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


# How long each recorded state lasts in one cycle of the history (seconds). The recorder moved on
# after 15-33 s; real incidents last minutes, and a state must outlast Prometheus' 5-minute lookback
# to be seen: a backfill cannot carry staleness markers, so a series that disappears (broker 1 from
# the metadata) stays visible for 5 minutes after its last sample.
TIMELINE = (
    ("healthy", 180.0),
    ("healthy-later", 180.0),
    ("broker-down", 480.0),
    ("broker-back-imbalanced", 360.0),
    ("rebalanced", 300.0),
)
PERIOD = sum(hold for _, hold in TIMELINE)


@dataclass(frozen=True)
class Recordings:
    """The five recorded cluster states, the second each was taken at (from the first), and the
    per-second growth between the first and the last."""

    texts: dict[str, str]
    taken: dict[str, float]
    rates: dict[str, dict[Any, float]]

    def at(self, elapsed: float) -> str:
        """The scenario the timeline is in `elapsed` seconds after the history starts."""
        position = elapsed % PERIOD
        for scenario, hold in TIMELINE:
            if position < hold:
                return scenario
            position -= hold
        raise AssertionError("unreachable")


def load_recordings() -> Recordings:
    texts = {s: (KAFKA_FIXTURES / f"{s}.json").read_text(encoding="utf-8") for s in SCENARIOS}
    states = {s: json.loads(t) for s, t in texts.items()}
    first = states[SCENARIOS[0]]["collected_at"]
    taken = {s: state["collected_at"] - first for s, state in states.items()}
    span = taken[SCENARIOS[-1]]
    return Recordings(texts, taken, _rates(states[SCENARIOS[0]], states[SCENARIOS[-1]], span))


def _rates(first: dict[str, Any], last: dict[str, Any], span: float) -> dict[str, dict[Any, float]]:
    """Per-second growth recorded between the first and last state."""

    def offsets(state: dict[str, Any]) -> dict[tuple[str, int], int]:
        return {
            (t["name"], p["partition"]): p["latest_offset"] or 0
            for t in state["topics"]
            for p in t["partitions"]
        }

    def committed(state: dict[str, Any]) -> dict[tuple[str, str, int], int]:
        return {
            (g["group_id"], c["topic"], c["partition"]): c["offset"]
            for g in state["groups"]
            for c in g["committed"] or []
        }

    def sizes(state: dict[str, Any]) -> dict[tuple[int, str, int], int]:
        return {
            (b["broker"], p["topic"], p["partition"]): p["size_bytes"]
            for b in state["log_dirs"]
            for d in b["log_dirs"]
            for p in d["partitions"]
        }

    def growth(before: dict[Any, int], after: dict[Any, int]) -> dict[Any, float]:
        return {k: max(0, after[k] - v) / span for k, v in before.items() if k in after}

    size_rates = growth(sizes(first), sizes(last))
    offset_rates = growth(offsets(first), offsets(last))
    # A group that committed during the recording keeps consuming at the production rate (its
    # recorded lag repeats); one that did not stays where it is (its lag grows, like vigia-ingest).
    moved = growth(committed(first), committed(last))
    return {
        "offsets": offset_rates,
        "committed": {k: offset_rates.get(k[1:], 0.0) for k, rate in moved.items() if rate > 0},
        "sizes": size_rates,
        "volume": {"all": sum(size_rates.values())},  # one filesystem shared by all log dirs
    }


def state_at(recordings: Recordings, start: float, elapsed: float) -> dict[str, Any]:
    """The recorded state the timeline is in, as collected `elapsed` s after `start`: counters
    advanced from the moment it was recorded at the recorded rates."""
    scenario = recordings.at(elapsed)
    s = json.loads(recordings.texts[scenario])  # a fresh copy, faster than deepcopy
    advance = elapsed - recordings.taken[scenario]  # seconds of growth since it was recorded
    shift = start + elapsed - s["collected_at"]
    rates = recordings.rates
    s["collected_at"] += shift
    for topic in s["topics"]:
        for p in topic["partitions"]:
            if p["latest_offset"] is not None:
                rate = rates["offsets"].get((topic["name"], p["partition"]), 0.0)
                p["latest_offset"] += int(rate * advance)
            if p.get("latest_timestamp_ms") is not None:
                p["latest_timestamp_ms"] += int(shift * 1000)
    for group in s["groups"]:
        for c in group["committed"] or []:
            rate = rates["committed"].get((group["group_id"], c["topic"], c["partition"]), 0.0)
            c["offset"] += int(rate * advance)
    for broker in s["log_dirs"]:
        for d in broker["log_dirs"]:
            for p in d["partitions"]:
                rate = rates["sizes"].get((broker["broker"], p["topic"], p["partition"]), 0.0)
                p["size_bytes"] += int(rate * advance)
            if d.get("usable_bytes") is not None:
                d["usable_bytes"] -= int(rates["volume"]["all"] * advance)
    if s.get("quorum"):
        for replica in [*s["quorum"]["voters"], *s["quorum"]["observers"]]:
            for key in ("last_fetch_timestamp_ms", "last_caught_up_timestamp_ms"):
                if replica.get(key) is not None:
                    replica[key] += int(shift * 1000)
    return s


class ConsumingGroups:
    """Consumers that keep up commit a moment after the newest offsets, never exactly the same lag
    twice (held constant, any evaluation of consumer status would call the lag "not decreasing").
    Each collection, a group that was consuming during the recording commits up to a random share
    (0-2x) of its recorded lag behind the latest offset; commits never go back."""

    def __init__(self, recordings: Recordings, seed: int = 11) -> None:
        self._rng = random.Random(seed)
        self._consuming = {group for group, _, _ in recordings.rates["committed"]}
        self._last: dict[tuple[str, str, int], int] = {}

    def jitter(self, state: dict[str, Any]) -> dict[str, Any]:
        latest = {
            (t["name"], p["partition"]): p["latest_offset"]
            for t in state["topics"]
            for p in t["partitions"]
        }
        for group in state["groups"]:
            if group["group_id"] not in self._consuming:
                continue
            share = self._rng.uniform(0.0, 2.0)
            for c in group["committed"] or []:
                key = (group["group_id"], c["topic"], c["partition"])
                newest = latest.get((c["topic"], c["partition"])) or c["offset"]
                lag = max(0, newest - c["offset"])
                c["offset"] = max(self._last.get(key, 0), newest - int(lag * share))
                self._last[key] = c["offset"]
        return state


def exporter_collections(
    recordings: Recordings,
    start: float,
    end: float,
    workdir: Path,
    granularity: Granularity = DEFAULT,
) -> list[tuple[float, str, list[Sample]]]:
    """(collected_at, scenario, samples) of a collection every 15 s, through the real exporter
    pipeline (`exporter.recording.replay`, fed the states as successive collections), served at
    `granularity`."""
    workdir.mkdir(parents=True, exist_ok=True)
    paths, scenarios = [], []
    commits = ConsumingGroups(recordings)
    elapsed = 0.0
    while start + elapsed <= end:
        state = commits.jitter(state_at(recordings, start, elapsed))
        path = workdir / f"{len(paths):05d}.json"
        path.write_text(json.dumps(state), encoding="utf-8")
        paths.append(path)
        scenarios.append(state["scenario"])
        elapsed += SCRAPE_INTERVAL
    # Replay serves the exporter as if its probe were disabled (only vigia_probe_up 0); the probe
    # families come from ProbeFeed, as a running probe's would.
    return [
        (r.collected_at, scenario, [s for s in parse_exposition(r.exposition) if not probe(s)])
        for r, scenario in zip(replay(paths, granularity=granularity), scenarios, strict=True)
    ]


def probe(sample: Sample) -> bool:
    return sample.name.startswith("vigia_probe_")


def jmx_scrapes(keep: Callable[[str], bool]) -> dict[tuple[str, int], list[Sample]]:
    """The recorded broker scrapes per (scenario, broker), only the families `keep` wants."""
    scrapes = {}
    for scenario in SCENARIOS:
        for broker in BROKERS:
            path = KAFKA_FIXTURES / f"{scenario}.jmx-broker-{broker}.prom"
            if path.exists():
                samples = parse_exposition(path.read_text(encoding="utf-8"))
                scrapes[(scenario, broker)] = [s for s in samples if keep(s.name)]
    return scrapes


def jmx_rates(
    scrapes: dict[tuple[str, int], list[Sample]], span: float
) -> dict[tuple[int, str, str], float]:
    """Per-second growth of each cumulative JMX series between the first and last scrape (none for
    a series that went back: broker 1's JVM restarted in between)."""
    first, last = SCENARIOS[0], SCENARIOS[-1]
    rates = {}
    for broker in BROKERS:
        before = {(s.name, s.labels): s.value for s in scrapes.get((first, broker), [])}
        for s in scrapes.get((last, broker), []):
            key = (s.name, s.labels)
            if CUMULATIVE.match(s.name) and key in before and s.value >= before[key]:
                rates[(broker, *key)] = (s.value - before[key]) / span
    return rates


def stored_at(rows: int, lateness: float) -> Any:
    """`rows` measures stored `lateness` seconds after the HES wrote them, as the job counts them
    (`ingest.freshness.AgeCounts`)."""
    from vigia.ingest.freshness import FRESHNESS_BUCKETS, AgeCounts

    buckets = tuple(rows if lateness <= le else 0 for le in FRESHNESS_BUCKETS)
    return AgeCounts(buckets, rows, rows * lateness)


class IngestFeed:
    """The ingest job's real collector, fed as a healthy job would feed it."""

    BATCH_EVERY = 30.0
    ROWS_PER_SECOND = 2000.0
    PHASES = ("addBatch", "commitOffsets", "getBatch", "latestOffset", "queryPlanning", "walCommit")

    def __init__(self, start: float, seed: int = 5) -> None:
        # Imported here: it needs pyspark, which only the history (not the static tests) requires.
        from vigia.ingest.deadline import DeadlineState
        from vigia.ingest.metrics import BatchWritten, IngestMetrics, ProgressSample
        from vigia.ingest.schema import REASONS
        from vigia.ingest.spark_health import SparkHealth

        self._batch_written = BatchWritten
        self._deadline_state = DeadlineState
        self._progress_sample = ProgressSample
        self._reasons = [r.value for r in REASONS]
        self.now = start
        self._rng = random.Random(seed)
        self.retries: dict[tuple[str, str], int] = {}
        self.skipped: dict[tuple[str, int], int] = {}
        self.metrics = IngestMetrics(
            INGEST_QUERY,
            clock=lambda: self.now,
            kafka_retries=lambda: dict(self.retries),
            skipped_offsets=lambda: dict(self.skipped),
        )
        self.health = SparkHealth(INGEST_QUERY)
        answers = SPARK_REST / "healthy-allexecutors.json", SPARK_REST / "lost-allexecutors.json"
        healthy, lost = (json.loads(path.read_text()) for path in answers)
        self.lost_at = start + 3600
        self.health.attach(lambda: healthy if self.now < self.lost_at else lost)
        self.registry = CollectorRegistry()
        self.registry.register(self.metrics)
        self.registry.register(self.health)
        self.completeness = Gauge(
            "vigia_ingest_day_completeness_ratio",
            "Share of the expected measures stored, per closed day.",
            ["measure_date"],
            registry=self.registry,
        )
        today = dt.datetime.fromtimestamp(start, dt.UTC).date()
        daily = int(self.ROWS_PER_SECOND * 86400)
        self.metrics.seed_days({today - dt.timedelta(days=d): daily for d in range(1, 7)})
        for d in range(1, 7):
            # Yesterday lost part of its data (an outage): IngestDayCompletenessLow must fire.
            self.completeness.labels((today - dt.timedelta(days=d)).isoformat()).set(
                0.962 if d == 1 else 0.998
            )
        # The SLIs of prometheus/slo/slos.yml: yesterday's deadline passes half an hour in, at
        # 96.2 % like the completeness gauge.
        self._deadline_at, self._yesterday, self._daily = (
            start + 1800,
            today - dt.timedelta(1),
            daily,
        )
        self._deadline_passed = False
        self.metrics.deadline_counted(DeadlineState(), 0)
        self.metrics.query_started()
        self._batch = 0
        self._next_batch = start

    def advance(self, t: float) -> None:
        while self._next_batch <= t:
            self._run_batch(self._next_batch)
            self._next_batch += self.BATCH_EVERY
        self.now = t

    def _run_batch(self, t: float) -> None:
        rng = self._rng
        rows = int(self.ROWS_PER_SECOND * self.BATCH_EVERY * rng.uniform(0.9, 1.1))
        invalid = {r: (rng.randint(0, 12) if i < 4 else 0) for i, r in enumerate(self._reasons)}
        duration = rng.uniform(4.0, 14.0)
        phases = dict(zip(self.PHASES, (0.75, 0.05, 0.02, 0.03, 0.05, 0.1), strict=True))
        self.metrics.progress(
            self._progress_sample(
                batch_id=self._batch,
                timestamp=t + duration,
                input_rows=rows,
                input_rows_per_second=rows / self.BATCH_EVERY,
                processed_rows_per_second=rows / duration,
                batch_duration_seconds=duration,
                phase_seconds={k: v * duration for k, v in phases.items()},
                invalid_by_reason=invalid,
                # Readings are 15-minute periods; the newest stored is the last closed period.
                newest_measure_timestamp=(t // 900) * 900,
                offsets_behind={"measure": rng.randint(0, 4000)},
                end_offsets={},
            )
        )
        if self._batch % 5 == 0:  # a leader moving now and then: the reads and the planner retry
            for call, retries in (("fetch", rng.randint(1, 6)), ("list_offsets", 1)):
                key = (call, "NOT_LEADER_FOR_PARTITION")
                self.retries[key] = self.retries.get(key, 0) + retries
        if self._batch == 40:
            self.skipped[("measure", 2)] = 1500
        day = dt.datetime.fromtimestamp(t, dt.UTC).date()
        valid = rows - sum(invalid.values())
        # 99.8 % of the live measures stored within 5 minutes, 0.2 % within an hour, and a
        # snapshot re-read hours late (cohort redelivered).
        late = valid // 500
        freshness = {
            "live": stored_at(valid - late, 240.0) + stored_at(late, 2400.0),
            "redelivered": stored_at(100, 30000.0),
        }
        self.metrics.batch_written(
            self._batch_written(self._batch, valid, 0, {day: valid}, freshness)
        )
        if not self._deadline_passed and t >= self._deadline_at:
            self._deadline_passed = True
            stored = int(self._daily * 0.962)
            state = self._deadline_state(self._yesterday, self._daily, stored)
            self.metrics.deadline_counted(state, 0)
        self._batch += 1

    def samples(self) -> list[Sample]:
        return collect(self.registry)


class ProbeFeed:
    """The exporter's real probe bookkeeping and collector, fed as the probe runner feeds them:
    one acks=all and one acks=1 message per probe partition every 5 s. Each broker leads one probe
    partition; while broker 1 is down its partition is led by broker 2, and the round in flight
    when it stopped fails."""

    INTERVAL = 5.0

    def __init__(self, start: float, seed: int = 7) -> None:
        from vigia.exporter.probe.collector import ProbeCollector
        from vigia.exporter.probe.runner import RUNNING
        from vigia.exporter.probe.tracker import LatencyTracker

        self._rng = random.Random(seed)
        self.tracker = LatencyTracker()
        self.registry = CollectorRegistry()
        self.coverage = dict.fromkeys(BROKERS, True)
        self.registry.register(
            ProbeCollector(self.tracker.stats, lambda: RUNNING, lambda: self.coverage)
        )
        self._next = start
        self._round = 0
        self._was_up: set[int] = set(BROKERS)

    def step(self, t: float, brokers_up: set[int]) -> list[Sample]:
        rng = self._rng
        while self._next <= t:
            at = self._next
            leaders = {p if p in brokers_up else min(brokers_up) for p in BROKERS}
            self.coverage = {b: b in leaders for b in BROKERS}
            for partition, preferred in enumerate(BROKERS):
                leader = preferred if preferred in brokers_up else min(brokers_up)
                just_stopped = preferred in self._was_up - brokers_up
                for acks in ("all", "1"):
                    message = f"{self._round}-{partition}-{acks}"
                    self.tracker.sent(
                        message, partition=partition, broker=preferred if just_stopped else leader,
                        acks=acks, round_id=self._round, at=at,
                    )  # fmt: skip
                    if just_stopped:
                        self.tracker.delivered(message, at=at + 1.0, error=True)
                        continue
                    latency = rng.uniform(0.001, 0.004) + (
                        rng.uniform(0.001, 0.003) if acks == "all" else 0.0
                    )
                    self.tracker.delivered(message, at=at + latency)
                    self.tracker.received(message, at=at + latency + rng.uniform(0.002, 0.008))
            self._was_up = set(brokers_up)
            self._round += 1
            self._next += self.INTERVAL
        self.tracker.expire(t)
        return collect(self.registry)


@dataclass(frozen=True)
class History:
    start: float
    end: float
    samples: int


def write_history(
    out: Path, workdir: Path, start: float, end: float, keep_jmx: Callable[[str], bool]
) -> History:
    """Writes [start, end] of every source as OpenMetrics into `out`."""
    from tests.monitoring.hes_history import HesFeed  # it imports this module's helpers

    recordings = load_recordings()
    collections = exporter_collections(recordings, start, end, workdir)
    scrapes = jmx_scrapes(keep_jmx)
    rates = jmx_rates(scrapes, recordings.taken[SCENARIOS[-1]])
    ingest = IngestFeed(start)
    probe = ProbeFeed(start)
    hes = HesFeed(start, keep_jmx)

    with out.open("w", encoding="utf-8") as handle:
        writer = OpenMetricsWriter(handle)
        for t, scenario, exposition in collections:
            up = {b for b in BROKERS if (scenario, b) in scrapes}
            writer.up(EXPORTER, t, 1)
            writer.write(EXPORTER, exposition + probe.step(t, up), t)
            advance = t - start - recordings.taken[scenario]
            for broker, target in BROKERS.items():
                samples = scrapes.get((scenario, broker))
                writer.up(target, t, 1 if samples is not None else 0)
                if samples is not None:
                    writer.write(target, _advanced(samples, rates, broker, advance), t)
            ingest.advance(t)
            writer.up(INGEST, t, 1)
            writer.write(INGEST, ingest.samples(), t)
            for target, samples in hes.step(t).items():
                if target != EXPORTER:
                    writer.up(target, t, 1)
                writer.write(target, samples, t)
        writer.close()
    return History(start=start, end=end, samples=writer.samples)


def write_exporter_history(
    out: Path, workdir: Path, start: float, end: float, granularity: Granularity
) -> History:
    """Writes [start, end] of the exporter alone, at `granularity`, as OpenMetrics into `out`."""
    collections = exporter_collections(load_recordings(), start, end, workdir, granularity)
    with out.open("w", encoding="utf-8") as handle:
        writer = OpenMetricsWriter(handle)
        for t, _, exposition in collections:
            writer.up(EXPORTER, t, 1)
            writer.write(EXPORTER, exposition, t)
        writer.close()
    return History(start=start, end=end, samples=writer.samples)


def _advanced(
    samples: list[Sample], rates: dict[tuple[int, str, str], float], broker: int, seconds: float
) -> list[Sample]:
    return [
        Sample(s.name, s.labels, s.value + seconds * rates.get((broker, s.name, s.labels), 0.0))
        for s in samples
    ]
