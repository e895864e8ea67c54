"""Basic authentication against bcrypt hashes: who gets in, and what is remembered."""

from __future__ import annotations

import base64

import bcrypt
import pytest

from tests.security.certs import password_hash
from vigia.common.basic_auth import BasicAuth


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def auth() -> BasicAuth:
    return BasicAuth({"prometheus": password_hash("right").encode()})


def test_the_right_password_gets_in(auth: BasicAuth) -> None:
    assert auth.allows("/metrics", header("prometheus", "right"))


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        header("prometheus", "wrong"),
        header("nobody", "right"),
        "Bearer abc",
        "Basic not-base64!",
        "Basic " + base64.b64encode(b"no-colon").decode(),
    ],
)
def test_anything_else_is_refused(auth: BasicAuth, authorization: str | None) -> None:
    assert not auth.allows("/metrics", authorization)


def test_probes_need_no_credentials(auth: BasicAuth) -> None:
    assert auth.allows("/healthz", None)
    assert auth.allows("/readyz", None)
    assert not auth.allows("/api/v1/cluster", None)


def test_no_users_means_no_authentication() -> None:
    assert BasicAuth({}).allows("/metrics", None)
    assert not BasicAuth({}).enabled


def test_a_success_is_remembered_a_failure_is_not(
    auth: BasicAuth, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert auth.allows("/metrics", header("prometheus", "right"))
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", counting)
    assert auth.allows("/metrics", header("prometheus", "right"))
    assert calls == []  # served from the cache
    assert not auth.allows("/metrics", header("prometheus", "wrong"))
    assert not auth.allows("/metrics", header("prometheus", "wrong"))
    assert calls == [b"wrong", b"wrong"]  # every guess pays bcrypt
    assert not auth.allows("/metrics", header("ghost", "x"))
    assert calls[-1] == b"x"  # an unknown user costs a check too
