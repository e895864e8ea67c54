"""Certificates for loopback TLS tests, made with the openssl command: a CA, a server certificate
for 127.0.0.1 and localhost, a client certificate the CA signed, and one signed by another CA."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import bcrypt

PASSWORD = "s3cret-scrape"
USER = "prometheus"


@dataclass(frozen=True)
class Certs:
    directory: Path
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path  # signed by a CA the server does not trust
    rogue_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
    )  # fmt: skip
    return cert, key


def _signed(
    directory: Path, name: str, ca: tuple[Path, Path], extensions: str
) -> tuple[Path, Path]:
    cert, key, csr = (directory / f"{name}.{ext}" for ext in ("crt", "key", "csr"))
    ext_file = directory / f"{name}.ext"
    ext_file.write_text(extensions + "\n")
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", f"/CN={name}",
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", ext_file,
    )  # fmt: skip
    return cert, key


def make_certs(directory: Path) -> Certs:
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "vigia-test-ca")
    rogue_ca = _ca(directory, "rogue-ca")
    server = _signed(
        directory,
        "server",
        ca,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth",
    )
    client = _signed(directory, "client", ca, "extendedKeyUsage=clientAuth")
    rogue = _signed(directory, "rogue", rogue_ca, "extendedKeyUsage=clientAuth")
    return Certs(directory, ca[0], *server, *client, *rogue)


def password_hash(password: str = PASSWORD) -> str:
    # Cost 4, bcrypt's least: the tests check hashes, not how slow they are.
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


def web_config(certs: Certs, *, client_certs: bool = True, users: bool = True) -> str:
    """A web configuration file's text (file names relative to the certificates' directory)."""
    lines = ["tls_server_config:", "  cert_file: server.crt", "  key_file: server.key"]
    if client_certs:
        lines += [
            "  client_auth_type: RequireAndVerifyClientCert",
            "  client_ca_file: vigia-test-ca.crt",
        ]
    if users:
        lines += ["basic_auth_users:", f"  {USER}: '{password_hash()}'"]
    return "\n".join(lines) + "\n"
