"""What holds the exporter's memory at many consumer groups, and whether it grows (issue 24 §4).

Feeds the synthetic collections of `benchmarks/group_load.py` (N groups × P partitions, offsets
moving, no Kafka) through `derive` and `render` as the exporter does, keeping what the running
exporter keeps: the trackers (`History`), the latest state and the expositions the web app's
per-state cache keeps (`exporter/web/per_state.py`, which holds its states weakly;
`--kept-states 2` plays the cache before issue 24, which held the last two states too). After each
collection it prints the process's RSS and, every `--every` collections, the deep size of each
holder (offset history, lag-status windows, retention windows, ISR history, record-time cache, the
states, the exposition) and, with `--tracemalloc`, the largest allocation sites still alive.

Collections follow each other as fast as the CPU allows (15 s apart in simulated time): a run of
240 collections is an hour of the exporter's life in a few minutes, so growth per collection is
visible without waiting an hour. What it cannot show: the clients' memory (librdkafka's and
kafka-python's buffers, the decoded answers of a real collection), which only the real-stack
benchmark (`exporter_cost_curve.py`) measures.

    python -m benchmarks.exporter_memory         # 2,000 groups × 6 partitions, 60 collections
    python -m benchmarks.exporter_memory --collections 240 --every 40
    python -m benchmarks.exporter_memory --tracemalloc --collections 30 --every 10
"""

from __future__ import annotations

import argparse
import gc
import logging
import resource
import tracemalloc

import psutil

from benchmarks.exporter_snapshot import _deep_size
from benchmarks.group_load import GroupLoad, snapshot, with_record_times
from vigia.common.glibc_malloc import fix_mmap_threshold
from vigia.common.logs import setup_logging
from vigia.exporter.cli import tune_gc
from vigia.exporter.collectors import render_bytes
from vigia.exporter.model.state import ExporterState, History, derive
from vigia.exporter.web.per_state import PerState

log = logging.getLogger("benchmarks.exporter_memory")
MB = 1e6


def _rss() -> float:
    return psutil.Process().memory_info().rss / MB


def _peak_rss() -> float:
    """The process's highest RSS so far: a collection's transient, which RSS after it misses."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


def _holders(history: History, states: list[ExporterState], body: bytes) -> str:
    state = states[-1]
    # Each size counts what the holders before it did not (shared objects once, in this order).
    parts = {
        "offset history": history.offsets,
        "lag-status windows": history.lag_status,
        "retention windows": history.retention,
        "ISR history": history.isr,
        "record-time cache": state.record_times,
        "snapshot": state.snapshot,
        "latest state (rest)": state,
    }
    sizes: dict[str, float] = {}
    counted = 0
    for n, name in enumerate(parts):
        total = _deep_size(tuple(parts.values())[: n + 1])
        sizes[name] = (total - counted) / MB
        counted = total
    sizes["older states kept (rest)"] = (_deep_size((*parts.values(), *states)) - counted) / MB
    sizes["exposition bytes"] = len(body) / MB
    return ", ".join(f"{name} {size:.1f}" for name, size in sizes.items())


def run(load: GroupLoad, count: int, every: int, trace: bool, kept_states: int) -> None:
    if trace:
        tracemalloc.start()
    history = History.create()
    kept: list[ExporterState] = []
    exposition = PerState(render_bytes)  # the web app's cache, as /metrics fills it
    state: ExporterState | None = None
    start_rss = _rss()
    for i in range(count):
        state = derive(state, with_record_times(snapshot(load, i), state), history)
        kept = [*kept[len(kept) + 1 - kept_states :], state]
        body = exposition.get(state)
        rss = _rss()
        log.info(
            "collection %3d: RSS %.1f MB (%+.1f since the start), peak %.1f MB",
            i + 1,
            rss,
            rss - start_rss,
            _peak_rss(),
        )
        if (i + 1) % every == 0 or i + 1 == count:
            gc.collect()
            log.info("  held (MB): %s", _holders(history, kept, body))
            if trace:
                current, peak = tracemalloc.get_traced_memory()
                log.info("  traced: %.1f MB now, %.1f MB at the peak", current / MB, peak / MB)
                top = tracemalloc.take_snapshot().statistics("lineno")[:12]
                for stat in top:
                    log.info(
                        "  %8.1f MB %8d blocks  %s", stat.size / MB, stat.count, stat.traceback
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=6, help="per group topic")
    parser.add_argument("--topics", type=int, default=20, help="group topics")
    parser.add_argument("--busy", type=float, default=0.25, help="share of group topics moving")
    parser.add_argument("--collections", type=int, default=60)
    parser.add_argument("--every", type=int, default=20, help="holders printed every N")
    parser.add_argument("--tracemalloc", action="store_true", help="allocation sites (slower)")
    parser.add_argument("--kept-states", type=int, default=1, help="states held (default 1)")
    args = parser.parse_args()
    setup_logging("INFO")
    tune_gc()  # as vigia-exporter does
    fix_mmap_threshold()
    load = GroupLoad(args.groups, args.partitions, args.topics, args.busy)
    log.info(
        "%d groups × %d partitions, %d%% of %d group topics busy, %d collections; RSS at start "
        "%.1f MB (imports)",
        load.groups,
        load.partitions,
        round(100 * load.busy),
        load.topics,
        args.collections,
        _rss(),
    )
    run(load, args.collections, args.every, args.tracemalloc, args.kept_states)


if __name__ == "__main__":
    main()
