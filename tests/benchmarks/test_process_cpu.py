"""The benchmarks' CPU bookkeeping (benchmarks/process_cpu.py): short-lived processes count once;
and how benchmarks/ingest_real_cluster.py reports repetitions."""

from __future__ import annotations

import selectors
import subprocess
import sys
import threading

import psutil
import pytest

from benchmarks.ingest_real_cluster import DRIVER, DRIVER_WORKERS, Watch, spread
from benchmarks.process_cpu import CpuBook, Reading


def everyone_alive(pid: int) -> bool:
    return True


def nobody_alive(pid: int) -> bool:
    return False


def test_a_child_no_sample_saw_counts_in_its_reapers_kind() -> None:
    book = CpuBook()
    book.update([Reading(10, 1, "daemon", own=1.0, children=0.0)], everyone_alive)
    book.update([Reading(10, 1, "daemon", own=1.1, children=0.6)], everyone_alive)
    assert book.by_kind() == {"daemon": pytest.approx(1.7)}


def test_a_sampled_child_once_reaped_counts_once_its_last_sample_in_its_own_kind() -> None:
    book = CpuBook()
    book.update(
        [Reading(10, 1, "daemon", 1.0, 0.0), Reading(11, 10, "worker", 2.0, 0.0)], everyone_alive
    )
    # The worker spent 0.5 s more after that sample, then its parent reaped it.
    book.update([Reading(10, 1, "daemon", 1.0, 2.5)], nobody_alive)
    assert book.by_kind() == {"worker": pytest.approx(2.0), "daemon": pytest.approx(1.5)}


def test_a_parent_read_before_the_reap_still_holds_the_childs_last_sample() -> None:
    book = CpuBook()
    book.update(
        [Reading(10, 1, "daemon", 1.0, 0.0), Reading(11, 10, "worker", 2.0, 0.0)], everyone_alive
    )
    book.update([Reading(10, 1, "daemon", 1.0, 0.0)], nobody_alive)
    assert book.by_kind() == {"worker": pytest.approx(2.0), "daemon": pytest.approx(1.0)}
    book.update([Reading(10, 1, "daemon", 1.0, 2.5)], nobody_alive)
    assert sum(book.by_kind().values()) == pytest.approx(3.5)


def test_a_root_reaped_by_no_sampled_process_keeps_its_last_sample() -> None:
    book = CpuBook()
    book.update(
        [Reading(10, 1, "driver", 1.0, 0.0), Reading(11, 10, "jvm", 5.0, 0.0)], everyone_alive
    )
    book.update([], nobody_alive)
    assert book.by_kind() == {"driver": pytest.approx(1.0), "jvm": pytest.approx(5.0)}


def test_a_child_and_its_parent_ending_together_fold_into_the_grandparent() -> None:
    book = CpuBook()
    book.update(
        [
            Reading(10, 1, "driver", 1.0, 0.0),
            Reading(11, 10, "jvm", 5.0, 0.0),
            Reading(12, 11, "worker", 3.0, 0.0),
        ],
        everyone_alive,
    )
    # The JVM reaped the worker (3.5 s in all) and the driver the JVM (5.5 s of its own).
    book.update([Reading(10, 1, "driver", 1.0, 9.0)], lambda pid: pid == 10)
    # What they spent after their last samples (0.5 + 0.5) is the driver's, their reaper's.
    assert book.by_kind() == {
        "driver": pytest.approx(2.0),
        "jvm": pytest.approx(5.0),
        "worker": pytest.approx(3.0),
    }
    assert sum(book.by_kind().values()) == pytest.approx(10.0)


def test_a_process_a_round_missed_keeps_its_account() -> None:
    book = CpuBook()
    book.update(
        [Reading(10, 1, "daemon", 1.0, 0.0), Reading(11, 10, "worker", 2.0, 0.0)], everyone_alive
    )
    book.update([Reading(10, 1, "daemon", 1.0, 0.0)], everyone_alive)
    book.update(
        [Reading(10, 1, "daemon", 1.0, 0.0), Reading(11, 10, "worker", 2.5, 0.0)], everyone_alive
    )
    assert book.by_kind() == {"worker": pytest.approx(2.5), "daemon": pytest.approx(1.0)}


def test_preexisting_processes_count_from_their_first_sample() -> None:
    book = CpuBook(frozenset({"daemon"}))
    book.update([Reading(10, 1, "daemon", 40.0, 3.0)], everyone_alive)
    book.update([Reading(10, 1, "daemon", 41.0, 3.5)], everyone_alive)
    assert book.by_kind()["daemon"] == pytest.approx(1.5)


def test_a_preexisting_daemons_earlier_children_are_not_its_new_ones() -> None:
    # A worker daemon that reaped an earlier run's executor (110 s) starts this run's.
    book = CpuBook(frozenset({"daemon"}))
    book.update(
        [Reading(10, 1, "daemon", 40.0, 110.0), Reading(11, 10, "executor", 0.5, 0.0)],
        everyone_alive,
    )
    book.update(
        [Reading(10, 1, "daemon", 40.5, 110.0), Reading(11, 10, "executor", 100.0, 0.0)],
        everyone_alive,
    )
    # The executor ended, not reaped yet at this sample, then reaped with 1 s more.
    book.update([Reading(10, 1, "daemon", 41.0, 110.0)], nobody_alive)
    assert book.by_kind() == {"daemon": pytest.approx(1.0), "executor": pytest.approx(100.0)}
    book.update([Reading(10, 1, "daemon", 41.0, 211.0)], nobody_alive)
    assert book.by_kind() == {"daemon": pytest.approx(2.0), "executor": pytest.approx(100.0)}


FORKS = 5
BURN_S = 0.2
PERIOD_S = 1.0  # longer than a child's life, unless the machine is very busy
PARENT = f"""
import os, sys, time
for _ in range({FORKS}):
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + {BURN_S}
        while time.process_time() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
print("done", flush=True)
sys.stdin.read()
"""


def test_the_watch_counts_forked_children_that_lived_between_two_samples() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    root = psutil.Process(parent.pid)
    watch = Watch(daemons=())
    stop = threading.Event()

    def sample() -> None:
        tick = 0
        while not stop.is_set():
            watch.sample(root, tick)
            tick += 1
            stop.wait(PERIOD_S)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        assert parent.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(parent.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=120), "the children did not finish in 120 s"
        assert parent.stdout.readline() == b"done\n"
    finally:
        stop.set()
        sampler.join()
    watch.sample(root, 0)
    times = root.cpu_times()
    truth = times.user + times.system + times.children_user + times.children_system
    parent.communicate(timeout=60)
    # The kernel's account is in clock ticks, apart from process_time's.
    assert times.children_user + times.children_system >= 0.9 * FORKS * BURN_S
    spent = watch.cpu_by_kind()
    assert set(spent) <= {DRIVER, DRIVER_WORKERS}
    # The parent blocks on its stdin from before the last sample: nothing moves meanwhile.
    assert sum(spent.values()) == pytest.approx(truth, abs=0.05)


def test_repetitions_show_their_median_and_range_one_run_its_value() -> None:
    assert spread([57.8], ".1f") == "57.8"
    assert spread([61.0, 57.8, 72.4], ".1f") == "61.0 (57.8–72.4)"
    assert spread([60000.0, 42000.0], ",.0f") == "51,000 (42,000–60,000)"
