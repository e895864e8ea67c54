"""glibc malloc for a long-running, many-threaded component: one arena, and large blocks given
back.

One arena. glibc gives each thread that allocates while the others hold the existing arenas an
arena of its own, up to eight per core, and an arena's freed memory mostly stays resident. The
exporter's threads (librdkafka's, kafka-python's, the collection pool, the web server's) each ended
up with one: at 2,000 groups one arena holds its resident memory ≈35 MB lower than glibc's default,
with the same CPU (docs/performance.md, "Resident memory"). Python threads allocate under the GIL,
so they seldom wait for the arena's lock anyway.

Large blocks given back. glibc serves a block of 128 KiB or more with its own mapping, returned to
the system when freed, but raises that threshold to the size of each such block freed, up to
32 MiB. Each collection builds and frees tables of that size (a dict per group-partition value,
the exposition), so after the first ones they come from the heap, whose freed middle stays
resident: at 10,000 groups ≈55 MB of the exporter's memory (docs/performance.md, "Resident
memory"). A fixed threshold keeps them mapped.

Called first thing in a component's main, before any thread starts: a thread keeps the arena it
was given. `MALLOC_ARENA_MAX` and `MALLOC_MMAP_THRESHOLD_` in the environment, which glibc reads
itself, win; on another C library this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from collections.abc import Mapping
from typing import Any, Protocol

# glibc's malloc.h
M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3
ARENAS = 1
MMAP_THRESHOLD = 128 * 1024  # glibc's own default, kept from rising


class _Libc(Protocol):
    def mallopt(self, param: int, value: int) -> int: ...


def _glibc() -> Any | None:
    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    return None if name is None else ctypes.CDLL(name)


def limit_arenas(
    arenas: int = ARENAS, libc: _Libc | None = None, environ: Mapping[str, str] | None = None
) -> bool:
    """Caps glibc's malloc arenas at `arenas`; True when it did."""
    return _mallopt(M_ARENA_MAX, arenas, "MALLOC_ARENA_MAX", libc, environ)


def fix_mmap_threshold(
    threshold: int = MMAP_THRESHOLD,
    libc: _Libc | None = None,
    environ: Mapping[str, str] | None = None,
) -> bool:
    """Serves every block of `threshold` bytes or more with its own mapping; True when it did."""
    return _mallopt(M_MMAP_THRESHOLD, threshold, "MALLOC_MMAP_THRESHOLD_", libc, environ)


def _mallopt(
    param: int,
    value: int,
    variable: str,
    libc: _Libc | None,
    environ: Mapping[str, str] | None,
) -> bool:
    """glibc's `mallopt`, unless `variable` (the same setting, which glibc reads at start) is in
    the environment or the C library is another."""
    if variable in (os.environ if environ is None else environ):
        return False
    lib = libc if libc is not None else _glibc()
    if lib is None or not hasattr(lib, "mallopt"):
        return False
    return bool(lib.mallopt(param, value))
