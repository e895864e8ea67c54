"""The exporter's glibc malloc settings (one arena, large blocks mapped), observed in glibc's own
statistics."""

from __future__ import annotations

import subprocess
import sys

from vigia.common.glibc_malloc import fix_mmap_threshold, limit_arenas

# Eight threads alive at once, each allocating through malloc (objects over 512 bytes), then
# glibc's per-arena statistics on stderr.
THREADS = """
import ctypes, sys, threading
from vigia.common.glibc_malloc import limit_arenas
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


def _run(script: str, mode: str, **env: str) -> str:
    run = subprocess.run(
        [sys.executable, "-c", script, mode],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
        check=True,
    )
    return run.stdout + run.stderr


def _arenas(mode: str, **env: str) -> tuple[str, int]:
    output = _run(THREADS, mode, **env)
    return output.splitlines()[0], output.count("Arena ")


def test_the_cap_holds_eight_threads_to_one_arena() -> None:
    assert _arenas("capped") == ("True", 1)


def test_without_the_cap_the_same_threads_take_more() -> None:
    assert _arenas("uncapped")[1] > 2


def test_malloc_arena_max_in_the_environment_wins() -> None:
    assert _arenas("capped", MALLOC_ARENA_MAX="3") == ("False", 3)


def test_a_c_library_without_mallopt_is_left_alone() -> None:
    assert not limit_arenas(libc=object(), environ={})  # type: ignore[arg-type]


# A freed 8-MB block raises glibc's default threshold to 8 MB; then whether a 1-MB block is mapped
# (`hblkhd`, bytes in mapped blocks) or taken from the heap.
LARGE_BLOCK = """
import ctypes, sys
from vigia.common.glibc_malloc import fix_mmap_threshold
print(fix_mmap_threshold() if sys.argv[1] == "fixed" else "-")
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
freed = bytearray(8_000_000)
del freed
block = bytearray(1_000_000)
print(libc.mallinfo2().hblkhd >= 1_000_000)
"""


def _mapped(mode: str, **env: str) -> list[str]:
    return _run(LARGE_BLOCK, mode, **env).split()


def test_a_fixed_threshold_keeps_a_large_block_mapped_after_a_larger_one_was_freed() -> None:
    assert _mapped("fixed") == ["True", "True"]


def test_without_it_glibc_takes_the_block_from_the_heap() -> None:
    assert _mapped("default") == ["-", "False"]


def test_malloc_mmap_threshold_in_the_environment_wins() -> None:
    assert _mapped("fixed", MALLOC_MMAP_THRESHOLD_="16777216") == ["False", "False"]
    assert not fix_mmap_threshold(libc=object(), environ={})  # type: ignore[arg-type]
