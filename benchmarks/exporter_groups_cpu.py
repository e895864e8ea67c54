"""CPU seconds per collection of `derive` and `render` at many consumer groups (issue 24), on the
synthetic collections of `benchmarks/group_load.py` (no Kafka: the collection itself is
`exporter_cost_curve.py`'s business).

After a full lag-status window of warm-up collections (rates, lag seconds, statuses and retention
windows all computed), each of `--collections` collections is derived and rendered at the default
granularity once, as the exporter does for a scraped collection; process CPU time
(time.process_time), medians and least values printed (the least is the one the machine's
neighbours disturbed least). `--profile` prints cProfile's top functions of one more
collection instead of timing it.

    python -m benchmarks.exporter_groups_cpu                       # 2,000 groups, a quarter busy
    python -m benchmarks.exporter_groups_cpu --busy 1.0            # every end offset moves
    python -m benchmarks.exporter_groups_cpu --groups 500,2000 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import logging
import pstats
import statistics
import time

from benchmarks.group_load import GroupLoad, snapshot, with_record_times
from vigia.common.logs import setup_logging
from vigia.exporter.cli import tune_gc
from vigia.exporter.collectors import render_bytes
from vigia.exporter.model.lag_status import DEFAULT_WINDOW_SIZE
from vigia.exporter.model.state import ExporterState, History, derive

log = logging.getLogger("benchmarks.exporter_groups_cpu")


def measure(load: GroupLoad, warmup: int, count: int, profile: bool) -> None:
    history = History.create()
    state: ExporterState | None = None
    for i in range(warmup):
        state = derive(state, with_record_times(snapshot(load, i), state), history)
        render_bytes(state)
    derive_cpu: list[float] = []
    render_cpu: list[float] = []
    body = b""
    for i in range(warmup, warmup + count):
        snap = with_record_times(snapshot(load, i), state)
        gc.collect()
        started = time.process_time()
        state = derive(state, snap, history)
        derived = time.process_time()
        body = render_bytes(state)
        derive_cpu.append(derived - started)
        render_cpu.append(time.process_time() - derived)
        log.debug("collection %d: derive %.3f, render %.3f", i, derive_cpu[-1], render_cpu[-1])
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    assert state is not None
    log.info(
        "%d groups × %d partitions (%d%% of %d group topics busy), %d group-partitions, "
        "%d series: derive %.3f + render %.3f = %.3f CPU-s per collection (medians of %d; "
        "least %.3f + %.3f)",
        load.groups,
        load.partitions,
        round(100 * load.busy),
        load.topics,
        len(state.group_lags),
        series,
        statistics.median(derive_cpu),
        statistics.median(render_cpu),
        statistics.median(d + r for d, r in zip(derive_cpu, render_cpu, strict=True)),
        count,
        min(derive_cpu),
        min(render_cpu),
    )
    if profile:
        snap = with_record_times(snapshot(load, warmup + count), state)
        profiler = cProfile.Profile()
        profiler.enable()
        render_bytes(derive(state, snap, history))
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="2000", help="comma-separated sizes (default 2000)")
    parser.add_argument("--partitions", type=int, default=6, help="per group topic")
    parser.add_argument("--topics", type=int, default=20, help="group topics")
    parser.add_argument("--busy", type=float, default=0.25, help="share of group topics moving")
    parser.add_argument("--collections", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=DEFAULT_WINDOW_SIZE + 1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    setup_logging("INFO")
    tune_gc()  # as vigia-exporter does
    for groups in (int(g) for g in args.groups.split(",")):
        load = GroupLoad(groups, args.partitions, args.topics, args.busy)
        measure(load, args.warmup, args.collections, args.profile)


if __name__ == "__main__":
    main()
