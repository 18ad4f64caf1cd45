"""The PEM files both ends of the feed read (the agent's server identity, the extender's client one)."""

from __future__ import annotations

from pathlib import Path


class TLSFileError(ValueError):
    """A certificate, key or CA file that cannot be read: ``<setting> <path>: cannot read: <why>``."""


def read_tls_file(path: str, setting: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise TLSFileError(f"{setting} {path}: cannot read: {err.strerror or err}") from None
