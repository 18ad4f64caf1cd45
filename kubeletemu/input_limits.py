"""Bounds on what a request can make the daemon read, echo or store, so that one bad request cannot stall
the node (issue: a 300-character UID made every later write fail; a 16,000-character name came back twice
in a refusal bigger than gRPC's 16 KiB metadata limit; a JSON manifest nested 1,000 levels deep raised
``RecursionError`` out of the handler).

* **Echoed input** is clipped: a message quotes at most :data:`ECHO_CHARS` characters of a value the client
  sent, then says how much was left out, so refusals stay one readable line of a few hundred characters.
* **Messages** sent back as a gRPC status are capped at :data:`MESSAGE_CHARS` (the details travel as a
  trailer, and a client refuses trailers over 16 KiB).
* **JSON nesting** is bounded at :data:`MAX_JSON_DEPTH` levels before decoding: Python's decoder recurses,
  and the depth where it gives up depends on the caller's stack. The YAML path has libyaml's own bound
  (1,000 levels, "exceeded maximum nesting depth").
* **UIDs** are at most :data:`MAX_UID_CHARS` characters: the API server's are 36 (a UUID), and a pod's
  UID names its file in the state directory.
"""

from __future__ import annotations

import json
import re
from typing import Any

ECHO_CHARS = 64
MESSAGE_CHARS = 1024
MAX_JSON_DEPTH = 512
MAX_UID_CHARS = 128

_BRACKETS_AND_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class NestingError(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH`."""


def clip(value: str, limit: int = ECHO_CHARS) -> str:
    """``value`` as a message may echo it: whole when short, else its start and how much was left out."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}…({len(value) - limit} more characters)"


def clip_message(message: str, limit: int = MESSAGE_CHARS) -> str:
    """A whole message capped for a gRPC status (a last resort: the messages clip what they echo)."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… (message cut at {limit} of {len(message)} characters)"


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON text (strings skipped; the text need not be
    valid: the decoder reports what else is wrong)."""
    depth = deepest = 0
    for match in _BRACKETS_AND_STRINGS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def loads_bounded(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that refuses nesting deeper than ``max_depth`` with :class:`NestingError` instead of
    recursing into ``RecursionError``. The scan runs only when the text has enough brackets to matter."""
    if text.count("[") + text.count("{") > max_depth and json_depth(text) > max_depth:
        raise NestingError(f"nested more than {max_depth} levels deep")
    return json.loads(text)
