"""The Prometheus exporter web configuration file (`--web.config.file`), parsed and validated.

The format is the one every official Prometheus exporter accepts (prometheus/exporter-toolkit,
docs/web-configuration.md): ``tls_server_config`` (the server's certificate, client-certificate
authentication, TLS versions), ``http_server_config`` (response headers) and
``basic_auth_users`` (user: bcrypt hash). Pure: `parse` takes the file's text and directory and
returns a `WebConfig` or raises `WebConfigError` with one line naming the offending key. Relative
file names are taken from the file's directory, as the toolkit does. Whether the named files exist
and hold a certificate is the adapter's question (vigia.common.web_tls).

Keys the toolkit has and Vigía does not implement (inline ``cert``/``key``, ``cipher_suites``,
``curve_preferences``, ``client_allowed_sans``, ``rate_limit``) are refused by name rather than
ignored: a security setting silently dropped is worse than a server that does not start.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

import bcrypt
import yaml

FLAG: Final = "--web.config.file"
ENV: Final = "VIGIA_WEB_CONFIG_FILE"


class WebConfigError(ValueError):
    """A web configuration file that cannot be used, described in one line."""


class ClientAuth(Enum):
    """Go's tls.ClientAuthType names, as the file spells them."""

    NO_CLIENT_CERT = "NoClientCert"
    REQUEST_CLIENT_CERT = "RequestClientCert"
    REQUIRE_ANY_CLIENT_CERT = "RequireAnyClientCert"
    VERIFY_CLIENT_CERT_IF_GIVEN = "VerifyClientCertIfGiven"
    REQUIRE_AND_VERIFY_CLIENT_CERT = "RequireAndVerifyClientCert"


# Python's ssl verifies any certificate it is given against the CA: the two policies that accept
# an unverified certificate cannot be honoured, so they are refused rather than tightened quietly.
_UNSUPPORTED_AUTH: Final = (ClientAuth.REQUEST_CLIENT_CERT, ClientAuth.REQUIRE_ANY_CLIENT_CERT)
TLS_VERSIONS: Final = ("TLS10", "TLS11", "TLS12", "TLS13")
# The headers http_server_config may set, and the values the toolkit accepts for two of them.
_HEADERS: Final = (
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "X-XSS-Protection",
    "Strict-Transport-Security",
)
_HEADER_VALUES: Final = {
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-Content-Type-Options": ("nosniff",),
}
_TLS_KEYS: Final = (
    "cert_file",
    "key_file",
    "client_auth_type",
    "client_ca_file",
    "client_ca",
    "min_version",
    "max_version",
    "prefer_server_cipher_suites",
)
_TLS_UNSUPPORTED: Final = {
    "cert": "give the certificate as cert_file",
    "key": "give the key as key_file",
    "cipher_suites": "Python's ssl uses OpenSSL's cipher names; leave the default suites",
    "curve_preferences": "leave OpenSSL's default curves",
    "client_allowed_sans": "restrict clients with the CA that signs their certificates",
}
_TOP_KEYS: Final = ("tls_server_config", "http_server_config", "basic_auth_users")
_TOP_UNSUPPORTED: Final = {"rate_limit": "limit scrapes in front of Vigía, not in it"}


@dataclass(frozen=True, slots=True)
class TlsSettings:
    cert_file: str
    key_file: str
    client_auth: ClientAuth = ClientAuth.NO_CLIENT_CERT
    client_ca_file: str | None = None
    client_ca: str | None = None  # PEM text given inline
    min_version: str = "TLS12"
    max_version: str = "TLS13"
    prefer_server_cipher_suites: bool = True


@dataclass(frozen=True, slots=True)
class WebConfig:
    """What a server does with its listening socket and each request. The default (no file, or
    an empty one) is plain HTTP without authentication."""

    tls: TlsSettings | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    users: Mapping[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash
    http2: bool = True  # accepted for compatibility; Vigía's servers speak HTTP/1.1


def parse(text: str, directory: str = ".") -> WebConfig:
    """The file's `text`; relative file names are taken from `directory`."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WebConfigError(f"not YAML: {_first_line(exc)}") from None
    if document is None:
        return WebConfig()
    top = _mapping(document, "the file")
    _known(top, _TOP_KEYS, _TOP_UNSUPPORTED, "")
    http = _mapping(top.get("http_server_config") or {}, "http_server_config")
    _known(http, ("http2", "headers"), {}, "http_server_config.")
    return WebConfig(
        tls=_tls(top.get("tls_server_config"), directory),
        headers=_headers(http.get("headers")),
        users=_users(top.get("basic_auth_users")),
        http2=_bool(http.get("http2", True), "http_server_config.http2"),
    )


def _tls(raw: Any, directory: str) -> TlsSettings | None:
    if raw is None:
        return None
    tls = _mapping(raw, "tls_server_config")
    _known(tls, _TLS_KEYS, _TLS_UNSUPPORTED, "tls_server_config.")
    if not tls:
        return None
    cert = _string(tls.get("cert_file"), "tls_server_config.cert_file")
    key = _string(tls.get("key_file"), "tls_server_config.key_file")
    if not cert:
        raise WebConfigError("tls_server_config: missing cert_file")
    if not key:
        raise WebConfigError("tls_server_config: missing key_file")
    ca_file = _string(tls.get("client_ca_file"), "tls_server_config.client_ca_file")
    ca_inline = _string(tls.get("client_ca"), "tls_server_config.client_ca")
    if ca_file and ca_inline:
        raise WebConfigError("tls_server_config: give client_ca_file or client_ca, not both")
    has_ca = bool(ca_file or ca_inline)
    auth = _client_auth(tls.get("client_auth_type"), has_ca)
    if has_ca and auth is ClientAuth.NO_CLIENT_CERT:
        raise WebConfigError(
            "tls_server_config: client_ca_file is set but client_auth_type is NoClientCert"
        )
    if not has_ca and auth is not ClientAuth.NO_CLIENT_CERT:
        raise WebConfigError(
            f"tls_server_config: client_auth_type {auth.value} needs client_ca_file, the CA "
            "that signs the clients' certificates"
        )
    low = _version(tls.get("min_version", "TLS12"), "min_version")
    high = _version(tls.get("max_version", "TLS13"), "max_version")
    if TLS_VERSIONS.index(low) > TLS_VERSIONS.index(high):
        raise WebConfigError(f"tls_server_config: min_version {low} is above max_version {high}")
    return TlsSettings(
        cert_file=_path(cert, directory),
        key_file=_path(key, directory),
        client_auth=auth,
        client_ca_file=_path(ca_file, directory) if ca_file else None,
        client_ca=ca_inline or None,
        min_version=low,
        max_version=high,
        prefer_server_cipher_suites=_bool(
            tls.get("prefer_server_cipher_suites", True),
            "tls_server_config.prefer_server_cipher_suites",
        ),
    )


def _client_auth(raw: Any, has_ca: bool) -> ClientAuth:
    if raw is None or raw == "":
        # The toolkit's default; with a CA given it verifies, which is what a CA is given for.
        return ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT if has_ca else ClientAuth.NO_CLIENT_CERT
    try:
        auth = ClientAuth(raw)
    except ValueError:
        names = ", ".join(a.value for a in ClientAuth)
        raise WebConfigError(
            f"tls_server_config.client_auth_type: {raw!r} is not one of {names}"
        ) from None
    if auth in _UNSUPPORTED_AUTH:
        raise WebConfigError(
            f"tls_server_config.client_auth_type: {auth.value} (a certificate nobody verifies) "
            "is not supported: use RequireAndVerifyClientCert or VerifyClientCertIfGiven"
        )
    return auth


def _version(raw: Any, key: str) -> str:
    if raw not in TLS_VERSIONS:
        raise WebConfigError(
            f"tls_server_config.{key}: {raw!r} is not one of {', '.join(TLS_VERSIONS)}"
        )
    return str(raw)


def _headers(raw: Any) -> dict[str, str]:
    headers = _mapping(raw or {}, "http_server_config.headers")
    _known(headers, _HEADERS, {}, "http_server_config.headers.")
    chosen: dict[str, str] = {}
    for name, value in headers.items():
        text = _string(value, f"http_server_config.headers.{name}")
        allowed = _HEADER_VALUES.get(name)
        if text and allowed is not None and text.lower() not in allowed:
            raise WebConfigError(
                f"http_server_config.headers.{name}: {text!r} is not one of {', '.join(allowed)}"
            )
        if text:  # blank means unset
            chosen[name] = text
    return chosen


def _users(raw: Any) -> dict[str, bytes]:
    users: dict[str, bytes] = {}
    for user, hashed in _mapping(raw or {}, "basic_auth_users").items():
        if not isinstance(hashed, str) or not hashed:
            raise WebConfigError(f"basic_auth_users.{user}: not a bcrypt hash")
        encoded = hashed.encode("utf-8")
        if not _is_bcrypt(encoded):
            raise WebConfigError(
                f"basic_auth_users.{user}: not a bcrypt hash (like $2y$10$…; make one with "
                "htpasswd -nBC 10 \"\" | tr -d ':\\n'); a password in clear is never accepted"
            )
        users[str(user)] = encoded
    return users


def _is_bcrypt(hashed: bytes) -> bool:
    """A well-formed bcrypt hash: checking a throw-away password against it raises otherwise."""
    try:
        bcrypt.checkpw(b"", hashed)
    except ValueError:
        return False
    return True


def _known(
    mapping: Mapping[str, Any], keys: tuple[str, ...], unsupported: Mapping[str, str], prefix: str
) -> None:
    for key in mapping:
        if key in unsupported:
            raise WebConfigError(f"{prefix}{key} is not supported by Vigía: {unsupported[key]}")
        if key not in keys:
            raise WebConfigError(f"unknown key {prefix}{key} (known: {', '.join(keys)})")


def _mapping(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise WebConfigError(f"{where}: expected a mapping of keys, got {type(raw).__name__}")
    return {str(k): v for k, v in raw.items()}


def _string(raw: Any, key: str) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise WebConfigError(f"{key}: expected a string, got {raw!r}")
    return raw.strip()


def _bool(raw: Any, key: str) -> bool:
    if not isinstance(raw, bool):
        raise WebConfigError(f"{key}: expected true or false, got {raw!r}")
    return raw


def _path(name: str, directory: str) -> str:
    return posixpath.normpath(posixpath.join(directory, name))


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
