"""Errors of shadow mode. Each ``str()`` is one readable line naming the file or socket at fault."""

from __future__ import annotations

from kubeletemu.emulator import EmulatorError

# Admit and RemovePod in shadow mode: the node's pods are the real kubelet's business.
READ_ONLY_MESSAGE = (
    "shadow mode: this daemon mirrors the real kubelet of this node and never admits or removes pods; "
    "ask WouldAdmit instead, or run kubeletemu without shadow mode to emulate a node of its own"
)


class ShadowError(Exception):
    """The real kubelet's state cannot be mirrored."""


class SourceUnreadableError(ShadowError):
    """A file or socket of the kubelet that this process cannot read (missing, or no permission)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class SourceInvalidError(ShadowError):
    """A file or answer of the kubelet that was read but cannot be used as it is."""


class ShadowReadOnlyError(EmulatorError):
    """A state-changing request in shadow mode."""

    def __init__(self) -> None:
        super().__init__(READ_ONLY_MESSAGE)
