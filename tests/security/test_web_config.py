"""The web configuration file's parser: exporter-toolkit's format, one clear line a mistake."""

from __future__ import annotations

import pytest

from tests.security.certs import password_hash
from vigia.common.web_config import ClientAuth, WebConfig, WebConfigError, parse

TLS = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"


def error(text: str) -> str:
    with pytest.raises(WebConfigError) as caught:
        parse(text, "/etc/vigia")
    return str(caught.value)


def test_no_content_is_plain_http_without_users() -> None:
    assert parse("", "/etc/vigia") == WebConfig()
    assert parse("tls_server_config: {}\n", "/etc/vigia").tls is None


def test_relative_files_are_taken_from_the_files_directory() -> None:
    tls = parse(TLS + "  client_ca_file: ../ca/clients.pem\n", "/etc/vigia").tls
    assert tls is not None
    assert (tls.cert_file, tls.key_file) == ("/etc/vigia/server.crt", "/etc/vigia/server.key")
    assert tls.client_ca_file == "/etc/ca/clients.pem"
    assert parse(TLS.replace("server.crt", "/srv/c.pem"), "/x").tls.cert_file == "/srv/c.pem"  # type: ignore[union-attr]


def test_defaults_follow_the_toolkit() -> None:
    tls = parse(TLS, "/etc/vigia").tls
    assert tls is not None
    assert (tls.min_version, tls.max_version) == ("TLS12", "TLS13")
    assert tls.client_auth is ClientAuth.NO_CLIENT_CERT
    # A CA without a policy verifies the clients: what a CA is given for.
    with_ca = parse(TLS + "  client_ca_file: ca.pem\n", "/etc/vigia").tls
    assert with_ca is not None
    assert with_ca.client_auth is ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT


def test_users_keep_their_bcrypt_hashes() -> None:
    hashed = password_hash("pw")
    config = parse(f"basic_auth_users:\n  alice: '{hashed}'\n", "/")
    assert config.users == {"alice": hashed.encode()}
    assert config.tls is None


def test_htpasswds_2y_hashes_are_accepted() -> None:
    hashed = "$2y$" + password_hash("pw")[4:]
    assert parse(f"basic_auth_users:\n  bob: '{hashed}'\n", "/").users["bob"] == hashed.encode()


def test_headers_are_kept_and_blank_ones_unset() -> None:
    config = parse(
        "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
        "    Content-Security-Policy: ''\n",
        "/",
    )
    assert config.headers == {"X-Frame-Options": "deny"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tls_server_config:\n  key_file: k\n", "tls_server_config: missing cert_file"),
        ("tls_server_config:\n  cert_file: c\n", "tls_server_config: missing key_file"),
        (TLS + "  cert_fil: x\n", "unknown key tls_server_config.cert_fil"),
        ("basic_auth_user:\n  a: b\n", "unknown key basic_auth_user"),
        ("basic_auth_users:\n  alice: hunter2\n", "basic_auth_users.alice: not a bcrypt hash"),
        ("basic_auth_users:\n  alice: '$2y$10$short'\n", "basic_auth_users.alice: not a bcrypt"),
        (TLS + "  client_auth_type: Always\n", "client_auth_type: 'Always' is not one of"),
        (
            TLS + "  client_auth_type: RequireAndVerifyClientCert\n",
            "RequireAndVerifyClientCert needs client_ca_file",
        ),
        (
            TLS + "  client_auth_type: NoClientCert\n  client_ca_file: ca.pem\n",
            "client_ca_file is set but client_auth_type is NoClientCert",
        ),
        (TLS + "  client_auth_type: RequireAnyClientCert\n", "is not supported"),
        (TLS + "  min_version: TLS14\n", "min_version: 'TLS14' is not one of"),
        (TLS + "  min_version: TLS13\n  max_version: TLS12\n", "above max_version"),
        (TLS + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "cipher_suites is not supported"),
        (TLS + "  cert: '-----BEGIN'\n", "tls_server_config.cert is not supported"),
        ("rate_limit:\n  interval: 1s\n", "rate_limit is not supported"),
        (
            "http_server_config:\n  headers:\n    X-Frame-Options: always\n",
            "X-Frame-Options: 'always' is not one of deny, sameorigin",
        ),
        ("http_server_config:\n  headers:\n    Server: x\n", "unknown key"),
        ("http_server_config:\n  http2: maybe\n", "http2: expected true or false"),
        ("- a\n- b\n", "the file: expected a mapping"),
        ("tls_server_config: [\n", "not YAML"),
    ],
)
def test_each_mistake_is_named(text: str, message: str) -> None:
    assert message in error(text)
