"""What went wrong talking to Kafka, in one sentence an operator can act on. Pure, no I/O.

`classify(text, code, options)` reads a librdkafka error (its code and `str()`), a librdkafka log
line, or a kafka-python exception's text, and returns a `Problem` of one of these kinds:
- `authentication`: SASL failed (wrong password, unknown user, mechanism the listener does not
  offer): "authentication failed for user X with mechanism Y (<what the broker said>)";
- `tls`: the TLS handshake failed: unknown CA, hostname mismatch, expired certificate, client
  certificate required, or TLS on one side only (security.protocol does not match the listener);
- `authorization`: authenticated, but an ACL denies the operation (topic, group, cluster);
- `transport`: the broker cannot be reached or does not answer (refused, reset, timed out, DNS).
Anything else is None: not a connection problem.

The user and mechanism come from the client's own settings (`sasl.username`, `sasl.mechanism`),
never from the broker, and no setting's value other than those two is ever quoted: passwords stay
out of logs and metrics. librdkafka's own messages carry no secrets.

Recorded formats (librdkafka 2.x, src/rdkafka_sasl*.c, rdkafka_ssl.c, rdkafka_broker.c; Kafka 4.0
brokers; kafka-python 3 and Python's ssl module) are in tests/common_kafka/test_kafka_errors.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

AUTHENTICATION: Final = "authentication"
TLS: Final = "tls"
AUTHORIZATION: Final = "authorization"
TRANSPORT: Final = "transport"
KINDS: Final = (AUTHENTICATION, TLS, AUTHORIZATION, TRANSPORT)
ACCESS_KINDS: Final = frozenset({AUTHENTICATION, TLS})
"""Kinds that retrying cannot fix: the configuration or the credentials must change."""

# librdkafka error codes (rdkafka.h): local ones are negative, broker ones are Kafka's.
_CODES: Final[dict[int, str]] = {
    -169: AUTHENTICATION,  # _AUTHENTICATION
    33: AUTHENTICATION,  # UNSUPPORTED_SASL_MECHANISM
    34: AUTHENTICATION,  # ILLEGAL_SASL_STATE
    58: AUTHENTICATION,  # SASL_AUTHENTICATION_FAILED
    -181: TLS,  # _SSL
    29: AUTHORIZATION,  # TOPIC_AUTHORIZATION_FAILED
    30: AUTHORIZATION,  # GROUP_AUTHORIZATION_FAILED
    31: AUTHORIZATION,  # CLUSTER_AUTHORIZATION_FAILED
    53: AUTHORIZATION,  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    65: AUTHORIZATION,  # DELEGATION_TOKEN_AUTHORIZATION_FAILED
    -195: TRANSPORT,  # _TRANSPORT
    -187: TRANSPORT,  # _ALL_BROKERS_DOWN
    -193: TRANSPORT,  # _RESOLVE
    -185: TRANSPORT,  # _TIMED_OUT
}

# librdkafka's guess for a connection closed during the TLS handshake: what a PLAINTEXT listener
# does, and also what a broker that is stopping does (common/kafka_diagnostics.py tells them apart).
NOT_A_TLS_LISTENER: Final = "the listener does not speak TLS: security.protocol asks for it"
# Most specific first: a TLS failure is also a "transport failure" for librdkafka.
_TLS_REASONS: Final = (
    (
        re.compile(r"hostname mismatch|ip address mismatch|doesn't match|does not match", re.I),
        "hostname mismatch: the broker's certificate does not name the host it was reached at "
        "(the address in bootstrap.servers / the broker's advertised listener)",
    ),
    (
        re.compile(
            r"unable to get local issuer|self[- ]signed certificate|unable to get issuer|"
            r"unknown ca|tlsv1 alert unknown ca",
            re.I,
        ),
        "unknown CA: the broker's certificate is not signed by a CA in ssl.ca.location",
    ),
    (
        re.compile(r"certificate has expired|certificate is not yet valid", re.I),
        "the broker's certificate has expired or is not valid yet",
    ),
    (
        re.compile(r"broker certificate could not be verified|certificate verify failed", re.I),
        "the broker's certificate could not be verified: unknown CA (ssl.ca.location) or "
        "hostname mismatch (ssl.endpoint.identification.algorithm)",
    ),
    (
        re.compile(r"client (ssl )?authentication might be required|alert bad certificate", re.I),
        "the broker requires a client certificate (ssl.certificate.location, ssl.key.location)",
    ),
    (re.compile(r"connecting to a plaintext broker listener", re.I), NOT_A_TLS_LISTENER),
    (
        re.compile(r"connecting to a ssl listener|wrong version number", re.I),
        "the listener speaks TLS: security.protocol does not (SSL or SASL_SSL)",
    ),
)
_TLS: Final = re.compile(r"\bssl\b|\btls\b|certificate", re.I)
_AUTHENTICATION: Final = re.compile(
    r"sasl|authentication failed|invalid credentials|authenticationfailed", re.I
)
_AUTHORIZATION: Final = re.compile(
    r"authorization ?failed|not authorized|authorizationfailed", re.I
)
_TRANSPORT: Final = re.compile(
    r"transport failure|connection refused|connect to ipv|disconnected|brokers are down|"
    r"failed to resolve|timed out|nobrokersavailable|kafkaconnectionerror|connection reset",
    re.I,
)
_MECHANISM_IN_TEXT: Final = re.compile(r"with SASL mechanism ([A-Z0-9-]+)")
# librdkafka's log line prefixes: "FAIL [rdkafka#producer-1] [thrd:sasl_ssl://h:9093/bootstrap]: "
# and the broker name, "sasl_ssl://h:9093/bootstrap: " (its scheme would read as SASL or TLS).
_PREFIXES: Final = re.compile(
    r"^(?:[A-Z]+ \[[^\]]*\] )?(?:\[thrd:[^\]]*\]: )?"
    r"(?:[a-z_]+://)?(?:[^\s/]+:\d+/(?:bootstrap|\d+): )?"
)
_AFTER: Final = re.compile(
    r"\s*\(after \d+ms in state [A-Z_]+(?:, \d+ identical error\(s\) suppressed)?\)"
)


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str
    summary: str
    """One line naming the cause first, then what the client or broker said."""


def classify(
    text: str, code: int | None = None, options: Mapping[str, str] | None = None
) -> Problem | None:
    detail = _detail(text)
    kind = _kind(detail, code)
    if kind is None:
        return None
    if kind == AUTHENTICATION:
        return Problem(kind, f"{authentication_subject(options or {}, text)} ({detail})")
    if kind == TLS:
        return Problem(kind, f"TLS handshake failed, {_tls_reason(text)} ({detail})")
    if kind == AUTHORIZATION:
        return Problem(kind, f"not authorized by the cluster's ACLs ({detail})")
    return Problem(kind, f"cannot reach the broker ({detail})")


def kind_of(text: str) -> str | None:
    """The kind of an error already turned into text (an exporter phase error, say)."""
    return _kind(_detail(text), None)


def authentication_subject(options: Mapping[str, str], text: str = "") -> str:
    user = options.get("sasl.username") or "(no sasl.username)"
    found = _MECHANISM_IN_TEXT.search(text)
    mechanism = (
        options.get("sasl.mechanism")
        or options.get("sasl.mechanisms")
        or (found.group(1) if found else "GSSAPI")  # librdkafka's default
    )
    return f"authentication failed for user {user} with mechanism {mechanism}"


def _kind(text: str, code: int | None) -> str | None:
    # The text decides first: librdkafka reports a TLS failure during SASL as _AUTHENTICATION and
    # a TLS handshake that was reset as _TRANSPORT.
    if any(pattern.search(text) for pattern, _ in _TLS_REASONS):
        return TLS
    if _AUTHORIZATION.search(text):
        return AUTHORIZATION
    if _AUTHENTICATION.search(text):
        return AUTHENTICATION
    if code is not None and code in _CODES:
        return _CODES[code]
    if _TLS.search(text) and "handshake" in text.lower():
        return TLS
    if _TRANSPORT.search(text):
        return TRANSPORT
    return None


def _tls_reason(text: str) -> str:
    for pattern, reason in _TLS_REASONS:
        if pattern.search(text):
            return reason
    return "check security.protocol, ssl.ca.location and the broker's certificate"


def _detail(text: str) -> str:
    """The message without librdkafka's prefixes and state suffix, on one line."""
    line = " ".join(text.split())
    line = _AFTER.sub("", _PREFIXES.sub("", line, count=1))
    return line.strip() or "no detail"
