"""Every bound on what a manifest (or any text a request carries) can make the emulator read, echo or store,
so that one request cannot stall or break the node. They are checked by :mod:`kubeletemu.manifest.documents`
before anything is built from the text, and by the pod reader before anything is reserved.

Each was found by a fault campaign (issue 40: a 682-byte YAML alias bomb took 2.7 GiB and the event loop;
a 4 MB manifest took 25.7 s; ``1e1000000`` broke an admission half-way; a lone UTF-16 surrogate in a UID
made every later ListPods fail) or an earlier one (a 300-character UID made every later write fail; a
16,000-character name came back twice in a refusal bigger than gRPC's 16 KiB metadata limit; a JSON
manifest nested 1,000 levels deep raised ``RecursionError`` out of the handler).

* **Size** of a request's manifest: :data:`REQUEST.max_chars`, the API server's request body limit
  (``MaxRequestBodyBytes``, 3 MiB). Files given to the CLI or the fleet are the user's own: unbounded.
* **Nodes**: a request's document holds at most :data:`REQUEST.max_nodes` values, lists and mappings,
  counting each time an alias repeats one; a pod as ``kubectl get pod -o yaml`` prints it has about a
  thousand. Reading YAML costs ~10 µs a node in PyYAML, so the bound keeps a request under a second.
* **Alias expansion**: go-yaml's rule (``allowedAliasRatio``), which ``sigs.k8s.io/yaml`` and thus the API
  server and ``kubectl`` apply: past 100 aliased nodes and 1,000 nodes in all, at most 99% of the nodes
  may come from aliases, falling linearly to 10% between 400,000 and 4,000,000 nodes ("document contains
  excessive aliasing"). Files too.
* **Nesting** is bounded at :data:`MAX_DEPTH` levels: Python's JSON decoder and PyYAML's constructor
  recurse, and the depth where they give up depends on the caller's stack.
* **Numbers**: an integer is at most :data:`MAX_INTEGER_CHARS` characters (Python refuses to convert more
  than 4,300 digits, and no Kubernetes field holds more than an int64's 19); a quantity's number at most
  ``kubeletemu.quantity.MAX_QUANTITY_CHARS`` characters and its value at most 2^63-1 in magnitude, as
  apimachinery's ``Quantity`` documents (checked by ``Quantity.parse``, which every reader of a quantity
  uses, before the amount is computed).
* **Text** must be Unicode scalar values: a lone UTF-16 surrogate (``"\\ud800"`` in JSON or YAML) cannot be
  encoded as UTF-8, so it could be neither written to the state directory nor sent back over gRPC.
* **UIDs** are at most :data:`MAX_UID_CHARS` characters: the API server's are 36 (a UUID), and a pod's
  UID names its file in the state directory.
* **Echoed input** is clipped: a message quotes at most :data:`ECHO_CHARS` characters of a value the client
  sent, then says how much was left out, so refusals stay one readable line of a few hundred characters.
* **Messages** sent back as a gRPC status are capped at :data:`MESSAGE_CHARS` (the details travel as a
  trailer, and a client refuses trailers over 16 KiB).
"""

from __future__ import annotations

from dataclasses import dataclass

ECHO_CHARS = 64
MESSAGE_CHARS = 1024
MAX_DEPTH = 512
MAX_UID_CHARS = 128
MAX_INTEGER_CHARS = 64

# go-yaml (yaml.v2 decode.go): the alias ratio rule's thresholds.
ALIAS_MIN_ALIASED = 100
ALIAS_MIN_NODES = 1000
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000


@dataclass(frozen=True)
class Limits:
    """What one decoding may read: ``None`` is no bound (the alias rule, nesting and numbers always hold)."""

    max_chars: int | None
    max_nodes: int | None


# A request to the daemon: its manifests, and every other text a request carries.
REQUEST = Limits(max_chars=3 * 1024 * 1024, max_nodes=50_000)
# A file the user names (``kubeletemu admit -f``, a fleet's trace): as big as they make it.
FILE = Limits(max_chars=None, max_nodes=None)


def allowed_alias_ratio(nodes: int) -> float:
    """go-yaml's ``allowedAliasRatio``: the share of ``nodes`` that may come from aliases."""
    if nodes <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if nodes >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - ALIAS_RATIO_RANGE_LOW) / (ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW)


def excessive_aliasing(nodes: int, aliased: int) -> bool:
    """go-yaml's check, made after each node: ``aliased`` of ``nodes`` came from aliases."""
    return (
        aliased > ALIAS_MIN_ALIASED
        and nodes > ALIAS_MIN_NODES
        and aliased / nodes > allowed_alias_ratio(nodes)
    )


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
