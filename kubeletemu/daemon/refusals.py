"""The mark on an ``UNAVAILABLE`` the daemon gives itself (its state directory cannot be written, see
:mod:`kubeletemu.daemon.state_disk`), so that a client tells a daemon that answered from one it could
not reach: both are ``UNAVAILABLE`` to gRPC, and a retry may succeed after either."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Trailing metadata key and value of such an answer.
REFUSAL_KEY = "kubeletemu-refusal"
STATE_NOT_WRITABLE = "state-directory-not-writable"
STATE_NOT_WRITABLE_METADATA = ((REFUSAL_KEY, STATE_NOT_WRITABLE),)


def is_state_refusal(trailing_metadata: Iterable[Any] | None) -> bool:
    """Whether a call's trailing metadata (pairs, or objects with ``key``/``value``) carries the mark."""
    for item in trailing_metadata or ():
        key, value = (item.key, item.value) if hasattr(item, "key") else item
        if key == REFUSAL_KEY and value == STATE_NOT_WRITABLE:
            return True
    return False
