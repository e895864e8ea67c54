"""A CA and a broker certificate for the run's SASL_SSL listener, made with openssl."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BrokerTls:
    ca_pem: Path
    keystore: Path  # PKCS12: the broker's key and certificate, signed by the CA
    password: str


def make_broker_tls(directory: Path, password: str) -> BrokerTls:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_pem = directory / "ca.key", directory / "ca.pem"
    key, csr, pem = directory / "broker.key", directory / "broker.csr", directory / "broker.pem"
    keystore, ext = directory / "broker.p12", directory / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for command in (
        f"req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=vigia-test-ca -keyout {ca_key}"
        f" -out {ca_pem}",
        f"req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout {key} -out {csr}",
        f"x509 -req -in {csr} -CA {ca_pem} -CAkey {ca_key} -CAcreateserial -days 2"
        f" -extfile {ext} -out {pem}",
        f"pkcs12 -export -in {pem} -inkey {key} -name broker -out {keystore}"
        f" -passout pass:{password}",
    ):
        argv = ["openssl", *shlex.split(command)]
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return BrokerTls(ca_pem=ca_pem, keystore=keystore, password=password)
