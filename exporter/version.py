"""The installed package version, for vigia_exporter_build_info and the landing page."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("vigia")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "unknown"
