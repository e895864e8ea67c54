"""Error classification on recorded librdkafka, broker, kafka-python and Python ssl messages.

Sources: the messages quoted in issue 15 (a Kafka 4.0 SASL_SSL listener, SCRAM-SHA-512, private CA),
librdkafka's format strings (src/rdkafka_ssl.c "SSL handshake failed: %s%s" with its hints,
rdkafka_broker.c's ApiVersion hint, rdkafka_sasl.c), lines recorded from librdkafka 2.x users, and
librdkafka 2.16's mock cluster (which has no SASL: "SASL Handshake not supported by broker").
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from vigia.common.kafka_errors import (
    AUTHENTICATION,
    AUTHORIZATION,
    TLS,
    TRANSPORT,
    authentication_subject,
    classify,
    kind_of,
)

SCRAM = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "vigia",
    "sasl.password": "hunter2-secret",
}

WRONG_PASSWORD_LOG = (
    "FAIL [rdkafka#producer-1] [thrd:sasl_ssl://127.0.0.1:19093/bootstrap]: "
    "sasl_ssl://127.0.0.1:19093/bootstrap: SASL authentication error: Authentication failed "
    "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 "
    "(after 312ms in state AUTH_REQ, 4 identical error(s) suppressed)"
)
UNKNOWN_CA = (
    "ssl://kafka-1.example.net:9093/bootstrap: SSL handshake failed: error:0A000086:SSL "
    "routines::certificate verify failed: broker certificate could not be verified, verify that "
    "ssl.ca.location is correctly configured or root CA certificates are installed (install "
    "ca-certificates package) (after 19ms in state SSL_HANDSHAKE)"
)


def test_wrong_password_names_user_and_mechanism_and_no_secret() -> None:
    problem = classify(WRONG_PASSWORD_LOG, None, SCRAM)
    assert problem is not None and problem.kind == AUTHENTICATION
    assert problem.summary == (
        "authentication failed for user vigia with mechanism SCRAM-SHA-512 (SASL authentication "
        "error: Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-512)"
    )
    assert "hunter2" not in problem.summary


@pytest.mark.parametrize(
    ("code", "text"),
    [
        # librdkafka's error event for the same failure (rd_kafka_broker_fail, _AUTHENTICATION).
        (
            KafkaError._AUTHENTICATION,
            "sasl_ssl://127.0.0.1:19093/bootstrap: SASL authentication error: Authentication "
            "failed during authentication due to invalid credentials with SASL mechanism "
            "SCRAM-SHA-512 (after 312ms in state AUTH_REQ)",
        ),
        # SASL/PLAIN on Kafka's PlainServerCallbackHandler.
        (
            KafkaError._AUTHENTICATION,
            "sasl_plaintext://b1:9092/1: SASL authentication error: Authentication failed: "
            "Invalid username or password (after 5ms in state AUTH_REQ)",
        ),
        # A mechanism the listener does not enable (rdkafka_sasl.c).
        (
            KafkaError._AUTHENTICATION,
            "sasl_ssl://b1:9093/bootstrap: SASL handshake failed (start (-4)): SASL PLAIN "
            "mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's supported "
            "mechanisms: SCRAM-SHA-512",
        ),
        # librdkafka 2.16's mock cluster, which has no SASL at all.
        (
            KafkaError._AUTHENTICATION,
            "sasl_plaintext://127.0.0.1:38313/bootstrap: Failed to initialize SASL "
            "authentication: SASL Handshake not supported by broker (required by mechanism "
            "SCRAM-SHA-512) (after 0ms in state AUTH_LEGACY)",
        ),
        (KafkaError.SASL_AUTHENTICATION_FAILED, "Broker: SASL Authentication failed"),
        # kafka-python 3 (the exporter's log dirs and quorum).
        (None, "SaslAuthenticationFailedError: [58] Authentication failed during authentication"),
    ],
)
def test_authentication_failures(code: int | None, text: str) -> None:
    problem = classify(text, code, SCRAM)
    assert problem is not None and problem.kind == AUTHENTICATION, problem
    assert problem.summary.startswith(
        "authentication failed for user vigia with mechanism SCRAM-SHA-512 ("
    )
    assert "(after " not in problem.summary and "sasl_ssl://" not in problem.summary


def test_mechanism_comes_from_the_message_when_not_configured() -> None:
    assert authentication_subject({}, WRONG_PASSWORD_LOG) == (
        "authentication failed for user (no sasl.username) with mechanism SCRAM-SHA-512"
    )
    assert authentication_subject({"sasl.mechanisms": "PLAIN", "sasl.username": "u"}) == (
        "authentication failed for user u with mechanism PLAIN"
    )


@pytest.mark.parametrize(
    ("code", "text", "reason"),
    [
        (KafkaError._SSL, UNKNOWN_CA, "the broker's certificate could not be verified"),
        # OpenSSL 1.1 wording of the same librdkafka message.
        (
            KafkaError._SSL,
            "ssl://xyz:9093/bootstrap: SSL handshake failed: error:1416F086:SSL routines:"
            "tls_process_server_certificate:certificate verify failed: broker certificate could "
            "not be verified, verify that ssl.ca.location is correctly configured or root CA "
            "certificates are installed (brew install openssl) (after 9ms in state SSL_HANDSHAKE)",
            "the broker's certificate could not be verified",
        ),
        # librdkafka's post-handshake check (X509_verify_cert_error_string).
        (
            KafkaError._SSL,
            "ssl://b1:9093/1: Failed to verify broker certificate: Hostname mismatch",
            "hostname mismatch",
        ),
        (
            KafkaError._SSL,
            "ssl://b1:9093/1: Failed to verify broker certificate: unable to get local issuer "
            "certificate",
            "unknown CA",
        ),
        # Python's ssl module through kafka-python.
        (
            None,
            "KafkaConnectionError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
            "unable to get local issuer certificate (_ssl.c:1006)",
            "unknown CA",
        ),
        (
            None,
            "KafkaConnectionError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
            "IP address mismatch, certificate is not valid for '127.0.0.1'. (_ssl.c:1006)",
            "hostname mismatch",
        ),
        (
            None,
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired",
            "expired",
        ),
        # librdkafka's hints for security.protocol mismatches (rdkafka_ssl.c, rdkafka_broker.c).
        (
            KafkaError._TRANSPORT,
            "ssl://127.0.0.1:35153/bootstrap: SSL handshake failed: Disconnected: connection "
            "reset by peer: connecting to a PLAINTEXT broker listener? (after 0ms in state "
            "SSL_HANDSHAKE)",
            "does not speak TLS",
        ),
        (
            KafkaError._TRANSPORT,
            "192.168.205.13:8080/bootstrap: Disconnected while requesting ApiVersion: might be "
            "caused by incorrect security.protocol configuration (connecting to a SSL listener?) "
            "or broker version is < 0.10 (see api.version.request) (after 5ms in state "
            "APIVERSION_QUERY)",
            "the listener speaks TLS",
        ),
        (
            KafkaError._SSL,
            "ssl://b1:9093/bootstrap: SSL handshake failed: error:0A000412:SSL routines::sslv3 "
            "alert bad certificate: client SSL authentication might be required (see "
            "ssl.key.location and ssl.certificate.location and consult the broker logs for more "
            "information) (after 3ms in state SSL_HANDSHAKE)",
            "client certificate",
        ),
    ],
)
def test_tls_failures(code: int | None, text: str, reason: str) -> None:
    problem = classify(text, code, SCRAM)
    assert problem is not None and problem.kind == TLS, problem
    assert problem.summary.startswith("TLS handshake failed, ")
    assert reason in problem.summary


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (KafkaError.GROUP_AUTHORIZATION_FAILED, "Broker: Group authorization failed"),
        (
            KafkaError.GROUP_AUTHORIZATION_FAILED,
            "FindCoordinator response error: Group authorization failed.",
        ),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed"),
        (KafkaError.CLUSTER_AUTHORIZATION_FAILED, "Broker: Cluster authorization failed"),
        (None, "KafkaError GROUP_AUTHORIZATION_FAILED: Broker: Group authorization failed"),
        (None, "ClusterAuthorizationFailedError: [31] Cluster authorization failed."),
    ],
)
def test_authorization_failures(code: int | None, text: str) -> None:
    problem = classify(text, code, SCRAM)
    assert problem is not None and problem.kind == AUTHORIZATION
    assert problem.summary.startswith("not authorized by the cluster's ACLs (")


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (KafkaError._TRANSPORT, "Failed to get metadata: Local: Broker transport failure"),
        (
            KafkaError._TRANSPORT,
            "sasl_ssl://127.0.0.1:19093/bootstrap: Connect to ipv4#127.0.0.1:19093 failed: "
            "Connection refused (after 0ms in state CONNECT)",
        ),
        (KafkaError._ALL_BROKERS_DOWN, "3/3 brokers are down"),
        (KafkaError._RESOLVE, "kafka-9:9092/bootstrap: Failed to resolve 'kafka-9:9092'"),
        (None, "KafkaError _TRANSPORT: Failed to get metadata: Local: Broker transport failure"),
        (None, "NoBrokersAvailable: NoBrokersAvailable"),
    ],
)
def test_transport_failures_even_on_sasl_listeners(code: int | None, text: str) -> None:
    problem = classify(text, code, SCRAM)
    assert problem is not None and problem.kind == TRANSPORT, problem
    assert problem.summary.startswith("cannot reach the broker (")


@pytest.mark.parametrize(
    "text",
    [
        "Broker: Unknown topic or partition",
        "KafkaError NOT_LEADER_OR_FOLLOWER: Broker: Not leader for partition",
        "UnknownBrokerIdError: 2",
    ],
)
def test_other_errors_are_not_connection_problems(text: str) -> None:
    assert classify(text, None, SCRAM) is None
    assert kind_of(text) is None


def test_kind_of_a_phase_error_text() -> None:
    assert kind_of(WRONG_PASSWORD_LOG) == AUTHENTICATION
    assert kind_of(UNKNOWN_CA) == TLS
