"""The web configuration's I/O: reading the file, and an `ssl.SSLContext` from its TLS settings.

Every file it names is read here, at start: a missing or unreadable certificate, a key that does
not match it, a CA file without a certificate is a `WebConfigError` naming the file, and the server
does not start. Unlike exporter-toolkit, the file is read once: restart the service to apply a
change (a renewed certificate included).
"""

from __future__ import annotations

import os
import ssl
from typing import Final

from vigia.common.web_config import ClientAuth, TlsSettings, WebConfig, WebConfigError, parse

TIMEOUT_SECONDS: Final = 10.0
"""How long a client may take to finish its TLS handshake or send its request."""
TLS_HANDSHAKE_RECORD: Final = b"\x16"
"""The first byte of every TLS connection; anything else is plain HTTP (or noise)."""
PLAIN_HTTP_ANSWER: Final = (
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
)
"""Go's answer to plain HTTP on an HTTPS port, the one Prometheus's own exporters give."""

_VERSIONS: Final = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}


def load(path: str | None) -> WebConfig:
    """The configuration in `path`; no path (flag and variable unset) is plain HTTP."""
    if not path:
        return WebConfig()
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise WebConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        config = parse(text, os.path.dirname(os.path.abspath(path)))
    except WebConfigError as exc:
        raise WebConfigError(f"{path}: {exc}") from None
    if config.tls is not None:
        server_context(config.tls)  # every named file is checked now, not at the first client
    return config


def server_context(tls: TlsSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _VERSIONS[tls.min_version]
    context.maximum_version = _VERSIONS[tls.max_version]
    if tls.prefer_server_cipher_suites:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    _readable(tls.cert_file, "cert_file")
    _readable(tls.key_file, "key_file")
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except ssl.SSLError as exc:
        raise WebConfigError(
            f"tls_server_config: {tls.cert_file} and {tls.key_file} are not a PEM certificate "
            f"and its key ({exc.reason or exc})"
        ) from None
    if tls.client_auth is not ClientAuth.NO_CLIENT_CERT:
        if tls.client_ca_file:
            _readable(tls.client_ca_file, "client_ca_file")
        try:
            context.load_verify_locations(cafile=tls.client_ca_file, cadata=tls.client_ca)
        except ssl.SSLError as exc:
            where = tls.client_ca_file or "client_ca"
            raise WebConfigError(
                f"tls_server_config: {where} holds no PEM CA certificate ({exc.reason or exc})"
            ) from None
        context.verify_mode = (
            ssl.CERT_REQUIRED
            if tls.client_auth is ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT
            else ssl.CERT_OPTIONAL
        )
    return context


def _readable(path: str, key: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise WebConfigError(
            f"tls_server_config.{key}: cannot read {path}: {exc.strerror or exc}"
        ) from None
