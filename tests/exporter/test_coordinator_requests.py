"""Group coordinator requests are never timed out by librdkafka (its use-after-free, issue 20 §0):
one request per group and kind in flight, sent with librdkafka's longest timeout, and the client
holding a request unanswered for long is replaced."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any

import pytest

from vigia.exporter.kafka.coordinator_requests import (
    LIBRDKAFKA_MAX_REQUEST_TIMEOUT,
    RETIRE_AFTER_SECONDS,
    CoordinatorRequests,
    StillWaiting,
)


class Admin:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, float]] = []
        self.futures: dict[tuple[str, str], Future[Any]] = {}

    def _future(self, kind: str, group: str, timeout: float) -> Future[Any]:
        self.sent.append((kind, group, timeout))
        future: Future[Any] = Future()
        self.futures[(kind, group)] = future
        return future

    def describe_consumer_groups(
        self, groups: list[str], request_timeout: float
    ) -> dict[str, Future[Any]]:
        return {g: self._future("describe", g, request_timeout) for g in groups}

    def list_consumer_group_offsets(
        self, request: list[Any], request_timeout: float
    ) -> dict[str, Future[Any]]:
        (group,) = [r.group_id for r in request]
        return {group: self._future("offsets", group, request_timeout)}


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_group_with_a_request_out_is_not_asked_again_until_answered() -> None:
    admins: list[Admin] = []
    requests = CoordinatorRequests(lambda: admins.append(Admin()) or admins[-1])
    first = requests.offsets(["a", "b"])
    (admin,) = admins
    assert [(k, g) for k, g, _ in admin.sent] == [("offsets", "a"), ("offsets", "b")]
    assert {t for _, _, t in admin.sent} == {LIBRDKAFKA_MAX_REQUEST_TIMEOUT}
    first["a"].set_result("a's offsets")

    second = requests.offsets(["a", "b"])
    assert [g for _, g, _ in admin.sent] == ["a", "b", "a"]  # b is still out
    assert second["a"] is admin.futures[("offsets", "a")]
    with pytest.raises(StillWaiting, match="no answer from its coordinator"):
        second["b"].result(timeout=0)

    first["b"].set_result("late")  # after its collection: dropped, b is asked afresh
    requests.offsets(["b"])
    assert [g for _, g, _ in admin.sent] == ["a", "b", "a", "b"]


def test_describe_and_offsets_are_tracked_apart() -> None:
    admin = Admin()
    requests = CoordinatorRequests(lambda: admin)
    requests.describe(["a"])
    requests.offsets(["a"])
    assert [(k, g) for k, g, _ in admin.sent] == [("describe", "a"), ("offsets", "a")]


def test_the_client_holding_a_request_too_long_is_replaced_long_before_librdkafka_times_it_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """librdkafka would look a moved coordinator up only on a broker state change; a fresh client
    looks it up anew, and destroying the old one with requests out is safe."""
    caplog.set_level(logging.INFO)
    clock = Clock()
    admins: list[Admin] = []
    requests = CoordinatorRequests(lambda: admins.append(Admin()) or admins[-1], clock)
    requests.offsets(["a"])
    clock.now = RETIRE_AFTER_SECONDS - 1
    requests.offsets(["a"])
    assert len(admins) == 1
    clock.now = RETIRE_AFTER_SECONDS + 1
    assert RETIRE_AFTER_SECONDS + 1 < LIBRDKAFKA_MAX_REQUEST_TIMEOUT
    fresh = requests.offsets(["a"])
    assert len(admins) == 2
    assert fresh["a"] is admins[1].futures[("offsets", "a")]
    assert "replacing the admin client" in caplog.text


def test_a_request_that_cannot_be_sent_fails_its_group_alone() -> None:
    class Refusing(Admin):
        def list_consumer_group_offsets(
            self, request: list[Any], request_timeout: float
        ) -> dict[str, Future[Any]]:
            if request[0].group_id == "bad":
                raise ValueError("refused")
            return super().list_consumer_group_offsets(request, request_timeout)

    requests = CoordinatorRequests(Refusing)
    futures = requests.offsets(["bad", "good"])
    with pytest.raises(ValueError, match="refused"):
        futures["bad"].result(timeout=0)
    assert not futures["good"].done()
    assert "bad" in requests.offsets(["bad"])  # asked again: a failure is not a request out
