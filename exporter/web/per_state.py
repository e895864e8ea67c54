"""A value per exporter state (its exposition, its JSON), built once, by the first request that
needs it."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from vigia.exporter.model.state import ExporterState

V = TypeVar("V")
_Ref = Callable[[], ExporterState | None]


class PerState(Generic[V]):
    """The values of the last two live states are kept, so that a scrape that read the previous
    state just before a new one was published is still served from cache. States are held weakly: a
    cached value must not keep a state alive once the service has moved on (each is ≈15 MB at
    2,000 groups). The value of a state nobody holds any more can never be asked for again: it is
    let go before and after each build, so that rendering a new state does not hold two dead
    expositions (≈13 MB each at 10,000 groups) beside the one it builds."""

    def __init__(self, build: Callable[[ExporterState | None], V]) -> None:
        self._build = build
        self._lock = threading.Lock()
        # Concurrent first requests (two Prometheus servers) wait for one build, not make two.
        self._building = threading.Lock()
        self._cache: dict[int, tuple[_Ref, V]] = {}

    def _cached(self, state: ExporterState | None) -> tuple[_Ref, V] | None:
        with self._lock:
            hit = self._cache.get(id(state))
        # A dead state's reference answers None, never a live state whose id was reused.
        return hit if hit is not None and hit[0]() is state else None

    def get(self, state: ExporterState | None) -> V:
        hit = self._cached(state)
        if hit is not None:
            return hit[1]
        with self._building:  # cached readers never wait for it
            hit = self._cached(state)
            if hit is not None:
                return hit[1]
            self._let_dead_go()
            built = self._build(state)
            with self._lock:
                self._cache[id(state)] = (_no_state if state is None else weakref.ref(state), built)
                while len(self._cache) > 2:
                    del self._cache[next(iter(self._cache))]
            self._let_dead_go()
        return built

    def _let_dead_go(self) -> None:
        with self._lock:
            for key, (ref, _) in list(self._cache.items()):
                if ref is not _no_state and ref() is None:
                    del self._cache[key]


def _no_state() -> None:
    return None
