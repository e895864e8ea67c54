"""What librdkafka said while connecting, named in one line: the glue between clients and logging.

Every confluent-kafka client of every component is created with `KafkaDiagnostics.client_config()`:
- ``logger``: librdkafka's own log lines go through Python logging (rate-limited per distinct line,
  see `common.librdkafka_log`), never raw ``%3|…`` lines on stderr;
- ``error_cb``: librdkafka's error events.
Both are classified (`common.kafka_errors`); the first time a new authentication, TLS or
authorization problem shows up, one ERROR line says it ("authentication failed for user X with
mechanism Y (…)"), and `problem` keeps the latest one for the caller's own error message.

librdkafka names a failed certificate check only "broker certificate could not be verified" (an
unknown CA and a hostname mismatch read the same); the first time it does, the diagnostics repeat
the handshake with Python's ssl module, same CA file and host, which says which of the two it is
(`tls_verdict`, a few seconds at most, once per broker address).

librdkafka hands both over only while the application polls the client (confluent-kafka forwards
its log queue to the client's main queue): a blocking call such as ``list_topics(timeout=30)``
serves none of them. `wait_for_metadata` therefore asks in short slices, polls in between, and gives
up at once on an authentication or TLS problem, which no retry fixes. The slices double (0.5 s,
1 s, 2 s, …) so that a slow but working cluster is not asked again and again too briefly.

    diagnostics = KafkaDiagnostics(options, "ingest.librdkafka")
    producer = Producer({**config, **diagnostics.client_config()})
    metadata = wait_for_metadata(producer, diagnostics, timeout=10.0, topic="measure")
"""

from __future__ import annotations

import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

from vigia.common.kafka_errors import (
    ACCESS_KINDS,
    NOT_A_TLS_LISTENER,
    TLS,
    TRANSPORT,
    Problem,
    classify,
)
from vigia.common.librdkafka_log import librdkafka_logger

_SLICE_SECONDS = 0.5
_TOPIC_RETRY_SECONDS = 0.5
_log = logging.getLogger(__name__)
_TLS_CHECK_SECONDS = 3.0
# A transport error right after an authentication or TLS failure ("1/1 brokers are down") is its
# consequence: the access problem stays the cause this long after it was last seen.
_ACCESS_MEMORY_SECONDS = 60.0
_UNVERIFIED = "could not be verified"
# The broker librdkafka names, e.g. "ssl://kafka-1:9093/bootstrap" or "sasl_ssl://10.0.0.5:9093/2".
_BROKER = re.compile(r"\b(?:ssl|sasl_ssl)://\[?([^\s/\]]+?)\]?:(\d+)/")


class KafkaUnavailable(RuntimeError):
    """Metadata could not be read. `cause` says why in one line; `timed_out` is False when an
    authentication or TLS problem (`problem`) ended the wait early."""

    def __init__(
        self,
        cause: str,
        problem: Problem | None,
        timed_out: bool,
        error: BaseException | None = None,
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.problem = problem
        self.timed_out = timed_out
        self.error = error
        """The last failed metadata call's exception (a timeout), if any."""

    def sentence(self, bootstrap_servers: str, timeout: float, name: str = "Kafka") -> str:
        if self.timed_out:
            return f"cannot reach {name} at {bootstrap_servers} within {timeout:g} s ({self.cause})"
        return f"cannot use {name} at {bootstrap_servers}: {self.cause}"


class _Client(Protocol):
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...
    def poll(self, timeout: float = -1) -> Any: ...


class KafkaDiagnostics:
    def __init__(self, options: Mapping[str, str], logger_name: str) -> None:
        # Only the two settings a message may quote: the rest may hold secrets.
        self._subject = {k: v for k, v in options.items() if k.startswith("sasl.mechanism")}
        if "sasl.username" in options:
            self._subject["sasl.username"] = options["sasl.username"]
        self._ca_file = options.get("ssl.ca.location")
        self._check_hostname = (
            options.get("ssl.endpoint.identification.algorithm", "https") != "none"
        )
        self._tls_checked: set[tuple[str, int]] = set()
        self._librdkafka = librdkafka_logger(logger_name)
        self._log = logging.getLogger(logger_name.rsplit(".", 1)[0])
        self._lock = threading.Lock()
        self._problem: Problem | None = None
        self._access: tuple[Problem, float] | None = None
        self._reported: set[str] = set()
        self._answered = False

    def client_config(self) -> dict[str, Any]:
        return {"logger": self, "error_cb": self.on_error}

    @property
    def problem(self) -> Problem | None:
        """The latest problem seen (authentication, TLS, authorization or transport), if any; an
        authentication or TLS failure of the last minute wins over what followed from it."""
        return self.access_problem() or self._problem

    def access_problem(self) -> Problem | None:
        """An authentication or TLS failure of the last minute: retrying cannot fix it."""
        with self._lock:
            access = self._access
        if access is None or time.monotonic() - access[1] > _ACCESS_MEMORY_SECONDS:
            return None
        return access[0]

    def answered(self) -> None:
        """The cluster answered with these settings: its listeners speak what they ask for."""
        self._answered = True

    def explain(self, text: str, code: int | None = None) -> str:
        """`text` (a failed call's error), led by the cause when one is known: a timeout or a
        transport failure that an authentication or TLS failure explains says so."""
        own = classify(text, code, self._subject)
        if own is not None and own.kind != TRANSPORT:
            return own.summary
        access = self.access_problem()
        return f"{access.summary}; {text}" if access is not None else text

    # --- librdkafka callbacks (served by poll) ------------------------------------------------

    def log(self, level: int, msg: str, *args: object) -> None:
        """The `logger` interface confluent-kafka calls for each librdkafka log line."""
        # librdkafka retries what it logs as an error (a refused connection, a failed handshake);
        # the component logs one ERROR line itself when it gives up, with the cause named.
        self._librdkafka.log(logging.WARNING if level == logging.ERROR else level, msg, *args)
        if level >= logging.WARNING:
            text = msg % args if args else msg
            self._note(classify(text, None, self._subject), text)

    def on_error(self, error: Any) -> None:
        self._librdkafka.debug("error event: %s", error.str())
        self._note(classify(error.str(), error.code(), self._subject), error.str())

    def _note(self, problem: Problem | None, text: str) -> None:
        if problem is None:
            return
        if problem.kind == TLS and _UNVERIFIED in problem.summary:
            problem = self._refined(problem, text)
        if self._answered and NOT_A_TLS_LISTENER in problem.summary:
            # Once TLS has worked, a handshake cut short is a broker stopping or restarting.
            problem = Problem(
                TRANSPORT,
                f"a broker closed the connection during the TLS handshake "
                f"(stopping or restarting?): {text}",
            )
        with self._lock:
            self._problem = problem
            if problem.kind in ACCESS_KINDS:
                self._access = (problem, time.monotonic())
            new = problem.kind != TRANSPORT and problem.summary not in self._reported
            if new:
                if len(self._reported) > 100:
                    self._reported.clear()
                self._reported.add(problem.summary)
        if new:
            self._log.error("Kafka: %s", problem.summary)

    def _refined(self, problem: Problem, text: str) -> Problem:
        """Which certificate check failed, asked of Python's ssl once per broker address."""
        found = _BROKER.search(text)
        if found is None:
            return problem
        address = (found.group(1), int(found.group(2)))
        with self._lock:
            if address in self._tls_checked:
                known = self._access[0] if self._access is not None else None
                return known if known is not None and known.kind == TLS else problem
            self._tls_checked.add(address)
        verdict = tls_verdict(*address, self._ca_file, self._check_hostname)
        refined = classify(f"certificate verify failed: {verdict}") if verdict else None
        return refined if refined is not None and _UNVERIFIED not in refined.summary else problem


def tls_verdict(
    host: str, port: int, ca_file: str | None, check_hostname: bool = True
) -> str | None:
    """Python's reason for rejecting the server's certificate ("unable to get local issuer
    certificate", "Hostname mismatch, …"), or None when it accepts it or cannot tell."""
    context = ssl.create_default_context(cafile=ca_file or None)
    context.check_hostname = check_hostname
    try:
        with (
            socket.create_connection((host, port), timeout=_TLS_CHECK_SECONDS) as sock,
            context.wrap_socket(sock, server_hostname=host),
        ):
            return None
    except ssl.SSLCertVerificationError as exc:
        return str(exc.verify_message)
    except (OSError, ValueError):
        return None


def wait_for_metadata(
    client: _Client, diagnostics: KafkaDiagnostics, timeout: float, topic: str | None = None
) -> Any:
    """Cluster metadata (all topics, or `topic`), asked in slices with the callbacks served in
    between. Raises `KafkaUnavailable` after `timeout`, or as soon as an authentication or TLS
    problem is reported."""
    give_up = time.monotonic() + timeout
    # Slices double: a slow cluster whose answer takes longer than a slice still gets one in time
    # (a call that times out drops the answer of its request).
    slice_limit = _SLICE_SECONDS
    while True:
        started = time.monotonic()
        slice_seconds = max(0.05, min(slice_limit, give_up - started))
        slice_limit *= 2
        try:
            metadata = client.list_topics(topic, timeout=slice_seconds)
        except Exception as exc:  # KafkaException
            last_exception = exc
        else:
            diagnostics.answered()
            return metadata
        client.poll(0)
        access = diagnostics.access_problem()
        if access is not None:
            raise KafkaUnavailable(access.summary, access, timed_out=False)
        # Only a call that used up its slice is asked again: one that failed sooner was answered.
        answered = time.monotonic() - started < slice_seconds * 0.9
        if answered or time.monotonic() >= give_up:
            error: Any = last_exception.args[0] if last_exception.args else last_exception
            text = str(error.str()) if hasattr(error, "str") else str(error)
            problem = diagnostics.problem
            cause = problem.summary if problem is not None else text
            raise KafkaUnavailable(cause, problem, timed_out=True, error=last_exception)


def wait_for_topic(
    client: _Client,
    diagnostics: KafkaDiagnostics,
    timeout: float,
    topic: str,
    ask_by_name: bool = False,
) -> Any | None:
    """The metadata of `topic` once the cluster has it, or None if it did not within `timeout`.

    A topic created a moment ago is not yet in every broker's metadata: whichever broker answers
    may not know it, so it is asked again (twice a second) until `timeout`, and one INFO line says
    that it waits. `ask_by_name` asks for the topic alone, which creates it where the cluster
    auto-creates topics. Raises `KafkaUnavailable` as `wait_for_metadata` does."""
    give_up = time.monotonic() + timeout
    said = False
    while True:
        remaining = max(0.05, give_up - time.monotonic())
        metadata = wait_for_metadata(client, diagnostics, remaining, topic if ask_by_name else None)
        found = metadata.topics.get(topic)
        if found is not None and found.error is None and found.partitions:
            return found
        if time.monotonic() + _TOPIC_RETRY_SECONDS > give_up:
            return None
        if not said:
            _log.info(
                "topic %r not in the cluster's metadata yet: waiting up to %.0f s for it",
                topic,
                give_up - time.monotonic(),
            )
            said = True
        time.sleep(_TOPIC_RETRY_SECONDS)
