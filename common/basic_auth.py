"""HTTP basic authentication against the web configuration's bcrypt hashes.

A bcrypt check costs tens of milliseconds by design; Prometheus scrapes every 15 s with the same
credentials, so a successful check is remembered (under a SHA-256 of user, password and hash,
never the password itself), as exporter-toolkit does. Failures are never remembered: guessing stays
as slow as bcrypt makes it. An unknown user costs the same bcrypt check as a known one, so that
the answer's delay does not tell which users exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
from collections.abc import Mapping
from typing import Final

import bcrypt

CHALLENGE: Final = 'Basic realm="vigia", charset="UTF-8"'
"""The WWW-Authenticate value of a 401."""
OPEN_PATHS: Final = frozenset({"/healthz", "/readyz"})
"""Liveness and readiness answer without credentials: they tell nothing about the cluster, and
a supervisor's or kubelet's probe carries no password."""
_CACHE_SIZE: Final = 64
# A valid hash of a password nobody has, checked for unknown users.
_DECOY: Final = bcrypt.hashpw(b"vigia-unknown-user", bcrypt.gensalt(rounds=10))


class BasicAuth:
    def __init__(self, users: Mapping[str, bytes]) -> None:
        self._users = dict(users)
        self._lock = threading.Lock()
        self._verified: dict[bytes, None] = {}

    @property
    def enabled(self) -> bool:
        return bool(self._users)

    def allows(self, path: str, authorization: str | None) -> bool:
        """Whether a request for `path` with this Authorization header may proceed."""
        if not self._users or path in OPEN_PATHS:
            return True
        credentials = _credentials(authorization)
        if credentials is None:
            return False
        user, password = credentials
        hashed = self._users.get(user)
        if hashed is None:
            bcrypt.checkpw(password, _DECOY)
            return False
        key = hashlib.sha256(b"\0".join((user.encode("utf-8"), password, hashed))).digest()
        with self._lock:
            if key in self._verified:
                return True
        if not bcrypt.checkpw(password, hashed):
            return False
        with self._lock:
            self._verified[key] = None
            while len(self._verified) > _CACHE_SIZE:
                del self._verified[next(iter(self._verified))]
        return True


def _credentials(authorization: str | None) -> tuple[str, bytes] | None:
    if not authorization:
        return None
    scheme, _, encoded = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None
