"""Secrets read from a file (a DSN with its password, ...): a flag shows in every user's process
list, a file readable only by the service's user does not."""

from __future__ import annotations


class SecretFileError(ValueError):
    """A secret file that cannot be read, or is empty, in one line."""


def read_secret(path: str) -> str:
    """The file's text without surrounding whitespace (the trailing newline editors add)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
    except OSError as exc:
        raise SecretFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text:
        raise SecretFileError(f"{path} is empty")
    return text
