"""The kubelet versions the emulator can be exact to, and reading a ``kubeletVersion`` setting.

Supported: the released minors whose sources were read (1.33 … 1.37; 1.37 at k8s.io/kubernetes v1.37.2) and
``master``, ordered after 1.37: what 1.37.2 does, plus the changes recorded only for master (read on
kubernetes master after v1.36.3 but absent from v1.37.2, and the emulator's KEP-6007 target), binary
version 1.37.
"""

from __future__ import annotations

import re

MASTER = "master"
SUPPORTED: tuple[str, ...] = ("1.33", "1.34", "1.35", "1.36", "1.37", MASTER)
DEFAULT_VERSION = MASTER

# "1.34", "v1.34", "1.34.2", "v1.34.2-eks-1234" (a build suffix after the patch, as `kubelet --version`
# prints for vendor builds).
_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?)?")


def supported_range() -> str:
    """``supported: 1.33, 1.34, 1.35, 1.36, 1.37, master``."""
    return "supported: " + ", ".join(SUPPORTED)


def parse_version(text: object) -> str:
    """``"1.34"``, ``"v1.34"`` and ``"1.34.2"`` → ``"1.34"``; ``"master"`` → ``"master"``.

    Anything else (an unknown minor, a malformed string, not a string) is a ``ValueError`` naming the
    supported range: ``kubeletVersion "1.29": supported: 1.33, 1.34, 1.35, 1.36, 1.37, master``.
    """
    if isinstance(text, str):
        stripped = text.strip()
        if stripped == MASTER:
            return MASTER
        match = _VERSION_RE.fullmatch(stripped)
        if match is not None:
            minor = f"{int(match.group(1))}.{int(match.group(2))}"
            if minor in SUPPORTED:
                return minor
    shown = f'"{text}"' if isinstance(text, str) else repr(text)
    raise ValueError(f"kubeletVersion {shown}: {supported_range()}")


def version_order(version: str) -> int:
    """Where ``version`` sits among :data:`SUPPORTED` (0 = 1.33; ``master`` last, after 1.37 although
    both are binary version 1.37). Raises ``ValueError`` for an unsupported version."""
    return SUPPORTED.index(parse_version(version))
