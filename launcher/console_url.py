"""The address alerts link to: Prometheus' external label `vigia_console_url`.

Every alert's runbook_url and dashboard_url start with it, and they are opened by on-call on
another machine (a laptop, a phone), so it must name the Dash app as they reach it, never this
machine's loopback when the app listens on the network.

Without `--console-url` the address is derived from `--listen-address` and the Dash app's port:
- a specific address (127.0.0.1, 10.0.0.5, vigia.example.org) is used as it is: a loopback
  listen address can only be reached from this machine anyway;
- a wildcard (0.0.0.0, ::, empty) is replaced by this machine's name: its fully qualified name
  (socket.getfqdn()) or else its host name; when both are loopback names ("localhost") there is
  nothing a remote browser could use, and the launcher refuses to guess (--console-url says it).
Pure functions; the caller looks the names up.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

LABEL = "vigia_console_url"
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class ConsoleUrlError(ValueError):
    """An address alerts cannot link to; the message says why, in one line."""


def parse_console_url(text: str) -> str:
    """`text` as a console URL (http or https, a host, no query or fragment), without a
    trailing slash: the rules append `/runbooks/<alertname>` to it."""
    url = text.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as e:
        raise ConsoleUrlError(f"{text!r} is not a URL ({e})") from None
    if parts.scheme not in ("http", "https"):
        raise ConsoleUrlError(f"{text!r} is not an http:// or https:// URL")
    if not parts.hostname:
        raise ConsoleUrlError(f"{text!r} names no host")
    if parts.query or parts.fragment:
        raise ConsoleUrlError(f"{text!r} has a query or fragment; alerts append paths to it")
    return url.rstrip("/")


def derive_console_url(listen_address: str, port: int, fqdn: str, hostname: str) -> str:
    """The Dash app's address for on-call when no --console-url is given (see module doc)."""
    address = listen_address.strip()
    if address in WILDCARDS:
        names = [n for n in (fqdn.strip(), hostname.strip()) if n and not is_loopback(n)]
        if not names:
            raise ConsoleUrlError(
                f"--listen-address {address!r} listens on the network, but this machine's "
                f"name ({fqdn or hostname or 'none'}) is a loopback name that on-call cannot "
                "open: give --console-url (env VIGIA_CONSOLE_URL), e.g. https://vigia.example.org"
            )
        address = names[0]
    return f"http://{_host(address)}:{port}"


def is_loopback(host: str) -> bool:
    host = host.strip().strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host(address: str) -> str:
    """IPv6 literals in brackets, as URLs need them."""
    try:
        return f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    except ValueError:
        return address
