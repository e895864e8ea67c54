"""TLS failures named by kind, with librdkafka's real handshake against a loopback TLS server.

No broker is needed to fail a TLS handshake: a Python TLS server presenting a certificate signed
by a test CA (made with the openssl command) is enough. librdkafka reports an unknown CA and a
hostname mismatch with the same words ("broker certificate could not be verified"); the
diagnostics repeat the handshake with Python's ssl module to tell them apart.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from vigia.common.kafka_diagnostics import KafkaDiagnostics, KafkaUnavailable, wait_for_metadata

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command to make test certificates"
)


@dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path
    cert: Path
    key: Path


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """Two CAs; a server certificate from the first one for kafka-1.vigia.invalid only."""
    d = tmp_path_factory.mktemp("pki")
    for ca in ("ca", "other-ca"):
        openssl(
            *("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
            *("-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-subj", f"/CN=vigia test {ca}"),
            cwd=d,
        )
    openssl(
        *("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr"),
        *("-subj", "/CN=kafka-1.vigia.invalid"),
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=DNS:kafka-1.vigia.invalid\n")
    openssl(
        *("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key"),
        *("-CAcreateserial", "-days", "2", "-out", "server.pem", "-extfile", "san.ext"),
        cwd=d,
    )
    return Pki(d / "ca.pem", d / "other-ca.pem", d / "server.pem", d / "server.key")


@pytest.fixture
def tls_server(pki: Pki) -> Iterator[int]:
    """Completes TLS handshakes on 127.0.0.1 and closes; speaks no Kafka."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert, pki.key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            try:
                conn.settimeout(2)
                with context.wrap_socket(conn, server_side=True):
                    pass
            except OSError:
                pass  # the client rejected our certificate: that is the point
            finally:
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join(5)
    listener.close()


def fail_metadata(port: int, ca: Path) -> tuple[str, float]:
    options = {"security.protocol": "SSL", "ssl.ca.location": str(ca)}
    diagnostics = KafkaDiagnostics(options, "test.tls.librdkafka")
    client = AdminClient(
        {"bootstrap.servers": f"127.0.0.1:{port}", **options, **diagnostics.client_config()}
    )
    began = time.monotonic()
    with pytest.raises(KafkaUnavailable) as raised:
        wait_for_metadata(client, diagnostics, timeout=30)
    assert not raised.value.timed_out
    return raised.value.cause, time.monotonic() - began


def test_unknown_ca(pki: Pki, tls_server: int) -> None:
    cause, seconds = fail_metadata(tls_server, pki.other_ca)
    assert cause.startswith("TLS handshake failed, unknown CA: "), cause
    assert seconds < 10


def test_hostname_mismatch(pki: Pki, tls_server: int) -> None:
    # The right CA, but the certificate names kafka-1.vigia.invalid, not 127.0.0.1.
    cause, seconds = fail_metadata(tls_server, pki.ca)
    assert cause.startswith("TLS handshake failed, hostname mismatch: "), cause
    assert seconds < 10
