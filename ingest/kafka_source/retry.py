"""When a Kafka call is tried again: the retry policy of every call the ingest job makes.

While a broker restarts, partition leadership moves twice and for a few seconds the cluster
answers NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, LEADER_NOT_AVAILABLE, timeouts, ...
librdkafka retries some of these inside producers and consumers, but not in the admin client's
ListOffsets, nor in a consumer's watermark query. `retrying` tries a call again, with exponential
backoff and a fresh look at the metadata in between, until the call's own deadline; what is not
retriable fails at once. Pure: the clock is injected, the Kafka calls are the caller's functions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from confluent_kafka import KafkaError

log = logging.getLogger(__name__)

T = TypeVar("T")

LEADER_MOVEMENT: Final = frozenset(
    {
        # Kafka marks these retriable but librdkafka's KafkaError.retriable() often says False,
        # depending on which client path produced the error.
        KafkaError.NOT_LEADER_FOR_PARTITION,  # Kafka's NOT_LEADER_OR_FOLLOWER (code 6)
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.BROKER_NOT_AVAILABLE,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.KAFKA_STORAGE_ERROR,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REBALANCE_IN_PROGRESS,
        # librdkafka's own: a broker connection went away or a request got no answer in time.
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._WAIT_COORD,
    }
)
"""Error codes a broker restart produces that mean "ask again in a moment"."""

LEADERLESS: Final = frozenset(
    {
        KafkaError._NOENT,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._DESTROY_BROKER,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)
"""What librdkafka's admin client ("No leaders found"), a consumer's watermark query ("Unknown
partition", "Broker handle destroyed") and a broker that has not yet applied the metadata of a
rolling restart ("Unknown topic or partition", seen on a real cluster) say about a partition whose
leader is unknown right now: retriable for a partition the metadata just listed, which is the only
kind the job asks about."""

CALLS: Final = ("metadata", "list_offsets", "watermarks", "fetch", "group_commit")
"""The ``call`` label values of vigia_ingest_kafka_retries_total."""


def is_retriable(error: KafkaError) -> bool:
    if error.fatal():
        return False
    return bool(error.retriable()) or error.code() in LEADER_MOVEMENT


def error_name(error: KafkaError) -> str:
    """The ``error`` label: the error code's name (a finite enum), e.g. NOT_LEADER_FOR_PARTITION."""
    return str(error.name())


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Failure:
    """One thing a try could not do: ``what`` (e.g. "measure-2"; empty when the sentence around
    says it) and why. ``leaderless``: the
    error means the partition has no leader right now, whatever its code (librdkafka's admin
    client says _NOENT "No leaders found")."""

    what: str
    error: KafkaError
    leaderless: bool = False

    @property
    def retriable(self) -> bool:
        return self.leaderless or is_retriable(self.error)


class CallFailed(Exception):
    """Raised by a try: what it could not do this time (every partition that failed)."""

    def __init__(self, failures: Sequence[Failure]) -> None:
        super().__init__(_describe(failures))
        self.failures = tuple(failures)


class GaveUp(Exception):
    """A call failed for good; ``sentence`` names what, the error and how long it waited."""

    def __init__(self, sentence: str, failures: Sequence[Failure]) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.failures = tuple(failures)


RetryObserver = Callable[[str, str], None]
"""Told (call, error name) for every retry, e.g. to count them in a metric."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff from ``first_backoff_s`` to ``max_backoff_s``, within ``deadline_s``."""

    deadline_s: float
    first_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    tries_per_deadline: int = 3

    def try_timeout(self, remaining: float) -> float:
        """How long one try may take: a request sent to a broker that just went away gets no
        answer, and waiting the whole deadline for it would leave no time to ask another. The
        last try still gets a second, so a call may overrun its deadline by that much."""
        share = max(self.deadline_s / self.tries_per_deadline, 1.0)
        return max(min(remaining, share), min(share, 1.0))

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0 for the first)."""
        return float(min(self.max_backoff_s, self.first_backoff_s * 2**retry))

    def next_wait(self, retry: int, elapsed: float, failures: Sequence[Failure]) -> float | None:
        """How long to wait before trying again, or None to give up."""
        if not all(f.retriable for f in failures):
            return None
        remaining = self.deadline_s - elapsed
        if remaining <= 0:
            return None
        return min(self.backoff(retry), remaining)


def _describe(failures: Sequence[Failure]) -> str:
    return "; ".join(f"{f.what}: {f.error.str()}" if f.what else f.error.str() for f in failures)


def retrying(
    call: str,
    attempt: Callable[[float], T],
    policy: RetryPolicy,
    clock: Clock,
    *,
    between: Callable[[float], object] | None = None,
    observer: RetryObserver | None = None,
) -> T:
    """``attempt(timeout_s)`` until it returns, raising `GaveUp` once the policy says so.

    ``attempt`` raises `CallFailed` for what it could not do; ``between(timeout_s)`` runs before
    each retry (re-reading metadata, so the next try goes to the new leader); its own failures
    are left to the next try to report. One log line for a call that needed retries, not one per
    try.
    """
    started = clock.monotonic()
    retries = 0
    while True:
        elapsed = clock.monotonic() - started
        try:
            result = attempt(policy.try_timeout(policy.deadline_s - elapsed))
        except CallFailed as failed:
            elapsed = clock.monotonic() - started
            wait = policy.next_wait(retries, elapsed, failed.failures)
            if wait is None:
                raise GaveUp(
                    _give_up_sentence(failed.failures, elapsed, retries), failed.failures
                ) from failed
            if observer is not None:
                observer(call, error_name(failed.failures[0].error))
            retries += 1
            clock.sleep(wait)
            if between is not None:
                try:
                    between(policy.try_timeout(policy.deadline_s - (clock.monotonic() - started)))
                except Exception as exc:
                    log.debug("metadata refresh before retrying %s failed: %s", call, exc)
            continue
        if retries:
            log.info(
                "Kafka %s succeeded after %d %s in %.1f s",
                call,
                retries,
                "retry" if retries == 1 else "retries",
                clock.monotonic() - started,
            )
        return result


def _give_up_sentence(failures: Sequence[Failure], elapsed: float, retries: int) -> str:
    if not all(f.retriable for f in failures):
        after = f" after {retries} {'retry' if retries == 1 else 'retries'} in {elapsed:.1f} s"
        return f"{_describe(failures)} (not retriable{after if retries else ''})"
    tries = retries + 1
    return (
        f"{_describe(failures)} (still failing after {elapsed:.1f} s and "
        f"{tries} {'try' if tries == 1 else 'tries'})"
    )
