"""CPU-s of a tree of processes sampled every few tenths of a second, short-lived ones included.

A process that lives between two samples (PySpark's Python workers, forked per task) is never
seen, and what a process spends after its last sample is never read either: both would be lost
if each PID's latest utime+stime were summed. The kernel keeps them, though: when a parent reaps
a child (wait), the child's CPU and its own reaped children's are added to the parent's children
times (cutime+cstime). So each process counts its own CPU plus its reaped children's, and a
process that ended is folded into its parent: the CPU its last sample saw moves to the parent's
account under the kinds it had, and the parent's children times, once they hold it, cover the
rest. What a child spent after its last sample, and a child no sample saw, lands in its reaper's
kind: a PySpark worker forked and reaped by pyspark.daemon in the Python workers' kind, the
daemon's last moments in its JVM's. A process whose parent was never sampled (the root, reaped
by the benchmark) keeps its last sample. Children reaped by a parent that ignores SIGCHLD are
not counted by the kernel, nor here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import psutil


@dataclass(frozen=True)
class Reading:
    """One process at one sample."""

    pid: int
    parent: int
    kind: str
    own: float  # utime + stime
    children: float  # cutime + cstime: the children it reaped, and theirs


@dataclass
class _Account:
    reading: Reading
    before: Reading | None = None  # its first sample, if what it did until then is not counted
    folded: Counter[str] = field(default_factory=Counter)  # ended children's, by kind

    def by_kind(self) -> Counter[str]:
        own, children = self.reading.own, self.reading.children
        if self.before is not None:
            own, children = own - self.before.own, children - self.before.children
        # Until the parent's children times hold a folded child (a sample read before the
        # reap, or a child reaped by someone else), what was folded stands for it.
        rest = max(children - sum(self.folded.values()), 0.0)
        return self.folded + Counter({self.reading.kind: own + rest})


@dataclass
class CpuBook:
    """CPU-s per kind of process over sampling rounds; processes of a kind in `preexisting`
    count from their first sample on (daemons that predate what is measured)."""

    preexisting: frozenset[str] = frozenset()
    _accounts: dict[int, _Account] = field(default_factory=dict)

    def update(self, readings: Iterable[Reading], alive: Callable[[int], bool]) -> None:
        """One round: `readings` of the processes seen; `alive(pid)` tells an ended process from
        one this round missed (it keeps its account)."""
        seen = set()
        for reading in readings:
            seen.add(reading.pid)
            account = self._accounts.get(reading.pid)
            if account is None:
                before = reading if reading.kind in self.preexisting else None
                account = self._accounts[reading.pid] = _Account(reading, before)
            account.reading = reading
        ended = {pid for pid in self._accounts.keys() - seen if not alive(pid)}
        # Children before their parents: a parent folded first would leave them nowhere to go.
        while leaves := ended - {self._accounts[pid].reading.parent for pid in ended}:
            for pid in leaves:
                parent = self._accounts.get(self._accounts[pid].reading.parent)
                if parent is not None:
                    parent.folded += self._accounts.pop(pid).by_kind()
            ended -= leaves

    def by_kind(self) -> Counter[str]:
        spent: Counter[str] = Counter()
        for account in self._accounts.values():
            spent += account.by_kind()
        return spent


def reading(process: psutil.Process, kind: str) -> Reading:
    """Inside `process.oneshot()`; psutil.Error if it ended meanwhile."""
    times = process.cpu_times()
    return Reading(
        process.pid,
        process.ppid(),
        kind,
        times.user + times.system,
        times.children_user + times.children_system,
    )
