"""The exporter's cap on glibc malloc arenas, observed in glibc's own statistics."""

from __future__ import annotations

import subprocess
import sys

from vigia.common.malloc_arenas import limit_arenas

# Eight threads alive at once, each allocating through malloc (objects over 512 bytes), then
# glibc's per-arena statistics on stderr.
THREADS = """
import ctypes, sys, threading
from vigia.common.malloc_arenas import limit_arenas
print(limit_arenas() if sys.argv[1] == "capped" else "-")
allocated, done = threading.Barrier(9), threading.Event()
def work():
    kept = [bytes(2000) for _ in range(50)]
    allocated.wait()
    done.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
allocated.wait()
ctypes.CDLL(None).malloc_stats()
done.set()
"""


def _arenas(mode: str, **env: str) -> tuple[str, int]:
    run = subprocess.run(
        [sys.executable, "-c", THREADS, mode],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
        check=True,
    )
    return run.stdout.strip(), run.stderr.count("Arena ")


def test_the_cap_holds_eight_threads_to_one_arena() -> None:
    assert _arenas("capped") == ("True", 1)


def test_without_the_cap_the_same_threads_take_more() -> None:
    assert _arenas("uncapped")[1] > 2


def test_malloc_arena_max_in_the_environment_wins() -> None:
    assert _arenas("capped", MALLOC_ARENA_MAX="3") == ("False", 3)


def test_a_c_library_without_mallopt_is_left_alone() -> None:
    assert not limit_arenas(libc=object(), environ={})  # type: ignore[arg-type]
