"""The web app's per-state cache of expositions and JSON documents: built once per state, and
never holding the value of a state that nobody can ask for again."""

from __future__ import annotations

import gc
import weakref

from tests.exporter.recorded import snapshot
from vigia.exporter.model.state import ExporterState, derive
from vigia.exporter.web.per_state import PerState


class Body:
    """A value that can be watched die (bytes cannot be referenced weakly)."""


class Watched:
    def __init__(self) -> None:
        self.bodies: list[weakref.ref[Body]] = []
        self.alive_at_build: list[int] = []
        self.cache: PerState[Body] = PerState(self.build)

    def build(self, _: ExporterState | None) -> Body:
        gc.collect()
        self.alive_at_build.append(sum(ref() is not None for ref in self.bodies))
        body = Body()
        self.bodies.append(weakref.ref(body))
        return body


def test_a_dead_states_value_is_let_go_before_the_next_one_is_built() -> None:
    watched = Watched()
    older = derive(None, snapshot("healthy"))
    watched.cache.get(older)
    newer = derive(older, snapshot("healthy"))
    del older  # the service moved on; no request holds it
    gc.collect()
    watched.cache.get(newer)
    assert watched.alive_at_build == [0, 0], "a dead state's value was held while building"
    kept = watched.cache.get(newer)
    assert len(watched.alive_at_build) == 2, "a live state's value was built again"
    assert watched.bodies[-1]() is kept


def test_a_state_a_request_still_holds_keeps_its_value() -> None:
    watched = Watched()
    held = derive(None, snapshot("healthy"))
    first = watched.cache.get(held)
    newer = derive(held, snapshot("healthy"))
    watched.cache.get(newer)
    assert watched.alive_at_build == [0, 1]
    assert watched.cache.get(held) is first
    assert len(watched.alive_at_build) == 2


def test_the_value_for_no_state_yet_is_not_taken_for_a_dead_one() -> None:
    watched = Watched()
    before_any = watched.cache.get(None)
    state = derive(None, snapshot("healthy"))
    watched.cache.get(state)
    assert watched.cache.get(None) is before_any
    assert len(watched.alive_at_build) == 2
