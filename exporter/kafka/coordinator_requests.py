"""librdkafka's group requests (the describes of consumer-protocol groups and of groups ListGroups
gives no type for; every describe and OffsetFetch where kafka-python cannot connect) sent so that
librdkafka cannot crash the exporter.

librdkafka sends these to each group's coordinator through `rd_kafka_coord_req`. When such an
admin request's own timeout fires while librdkafka is still waiting for a usable coordinator (no
broker up, FindCoordinator unanswered, the coordinator's connection down: every broker stop),
the request is freed, but its coordinator lookup goes on; when a broker comes up the lookup calls
back into the freed request and releases it a second time. The process aborts on
`rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0'` or segfaults in rdk:main
(librdkafka 2.16.0; `benchmarks/rdkafka_coord_timeout_crash.py` reproduces it in one request;
upstream confluentinc/librdkafka#4605).

So librdkafka never times these requests out: they are sent with its longest request timeout
(one hour), the collection stops waiting for them at its own deadline, and a group whose request
is still out is not asked again until it is answered (one request per group and kind in flight).
A request unanswered for `RETIRE_AFTER_SECONDS` retires the client that holds it: librdkafka keeps
a group's coordinator cached and, while that broker is down, asks again which broker coordinates
only on a broker state change, so such requests wait minutes; a fresh client looks the coordinator
up anew. Destroying a client fails its pending lookups without calling back into them, which is
safe, and keeps every request far from librdkafka's own timeout. Late answers are dropped: the
offsets of an earlier moment, compared with the collection's newer end offsets, would overstate
lag.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

log = logging.getLogger(__name__)

# librdkafka's maximum for an admin request's `request_timeout` (AdminOptions, 3600 * 1000 ms).
LIBRDKAFKA_MAX_REQUEST_TIMEOUT = 3600.0
# Two default collection intervals: a coordinator that moved is found again by the next-but-one
# collection.
RETIRE_AFTER_SECONDS = 30.0
DESCRIBE, OFFSETS = "describe", "offsets"


class StillWaiting(Exception):
    """The group's previous request of this kind has not been answered yet."""


class CoordinatorRequests:
    """One admin client for coordinator requests and the requests it has out, by (kind, group)."""

    def __init__(
        self, factory: Callable[[], Any], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._factory = factory
        self._clock = clock
        self._admin: Any = None
        self._pending: dict[tuple[str, str], tuple[float, Future[Any]]] = {}

    def describe(self, group_ids: Iterable[str]) -> dict[str, Future[Any]]:
        """A future per group; for a group still waiting for an earlier answer, a failed one."""
        ask = self._free(DESCRIBE, group_ids)
        sent = (
            self._client().describe_consumer_groups(
                ask, request_timeout=LIBRDKAFKA_MAX_REQUEST_TIMEOUT
            )
            if ask
            else {}
        )
        return self._track(DESCRIBE, group_ids, sent)

    def offsets(
        self,
        group_ids: Iterable[str],
        partitions: Mapping[str, list[TopicPartition]] | None = None,
    ) -> dict[str, Future[Any]]:
        """One OffsetFetch per group, of all its partitions or of those `partitions` names for it
        (librdkafka's mock cluster answers "all" with none); futures as for `describe`."""
        ask = self._free(OFFSETS, group_ids)
        sent: dict[str, Future[Any]] = {}
        for group_id in ask:
            try:
                sent.update(
                    self._client().list_consumer_group_offsets(
                        [
                            ConsumerGroupTopicPartitions(
                                group_id, (partitions or {}).get(group_id) or None
                            )
                        ],
                        request_timeout=LIBRDKAFKA_MAX_REQUEST_TIMEOUT,
                    )
                )
            except Exception as exc:  # not sent: this group fails alone
                failed: Future[Any] = Future()
                failed.set_exception(exc)
                sent[group_id] = failed
        return self._track(OFFSETS, group_ids, sent)

    def close(self) -> None:
        self._admin = None
        self._pending.clear()

    def _client(self) -> Any:
        if self._admin is None:
            self._admin = self._factory()
        return self._admin

    def _free(self, kind: str, group_ids: Iterable[str]) -> list[str]:
        """The groups that have no request of this kind out; retires the client first when one
        of its requests has been out too long."""
        now = self._clock()
        oldest = min((sent for sent, f in self._pending.values() if not f.done()), default=now)
        if now - oldest > RETIRE_AFTER_SECONDS:
            log.info(
                "group coordinator requests unanswered for %.0f s: replacing the admin client that "
                "holds them, so that their coordinators are looked up anew",
                now - oldest,
            )
            retired, self._admin = self._admin, None
            self._pending.clear()
            # Destroying a client waits for its threads: not on the collection's time.
            threading.Thread(target=_drop, args=(retired,), daemon=True).start()
            del retired
        for key in [k for k, (_, f) in self._pending.items() if f.done()]:
            del self._pending[key]  # answered, maybe after its collection gave up: dropped
        return [g for g in group_ids if (kind, g) not in self._pending]

    def _track(
        self, kind: str, group_ids: Iterable[str], sent: Mapping[str, Future[Any]]
    ) -> dict[str, Future[Any]]:
        now = self._clock()
        futures: dict[str, Future[Any]] = {}
        for group_id in group_ids:
            if group_id in sent:
                futures[group_id] = sent[group_id]
                self._pending[(kind, group_id)] = (now, sent[group_id])
                continue
            pending = self._pending.get((kind, group_id))
            if pending is None:
                continue
            waiting: Future[Any] = Future()
            waiting.set_exception(
                StillWaiting(f"no answer from its coordinator for {now - pending[0]:.0f} s")
            )
            futures[group_id] = waiting
        return futures


def _drop(client: Any) -> None:
    """Runs on a thread of its own, which holds the last reference to `client` until it ends."""
    del client
