"""One glibc malloc arena for a long-running, many-threaded component.

glibc gives each thread that allocates while the others hold the existing arenas an arena of its
own, up to eight per core, and an arena's freed memory mostly stays resident. The exporter's
threads (librdkafka's, kafka-python's, the collection pool, the web server's) each ended up with
one: at 2,000 groups one arena holds its resident memory ≈35 MB lower than glibc's default, with
the same CPU (docs/performance.md, "Resident memory"). Python threads allocate under the GIL, so
they seldom wait for the arena's lock anyway.

Called first thing in a component's main, before any thread starts: a thread keeps the arena it
was given. `MALLOC_ARENA_MAX` in the environment, which glibc reads itself, wins; on another C
library this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from collections.abc import Mapping
from typing import Any, Protocol

M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = 1


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
    if "MALLOC_ARENA_MAX" in (os.environ if environ is None else environ):
        return False
    lib = libc if libc is not None else _glibc()
    if lib is None or not hasattr(lib, "mallopt"):
        return False
    return bool(lib.mallopt(M_ARENA_MAX, arenas))
