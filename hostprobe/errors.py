"""The one exception type the probe raises."""

from __future__ import annotations


class ProbeError(Exception):
    """A file the probe needs is unreadable or malformed.

    The message always starts with the path of the offending file (or root), so a caller can print it as
    one line without a traceback.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
