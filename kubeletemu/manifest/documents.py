"""Text to documents, within the bounds of :mod:`kubeletemu.manifest.limits`: the one decoder every
manifest (and every other YAML or JSON text a request carries) goes through, on the daemon, in the CLI
and in the fleet.

The bounds are checked before the costly step each protects:

1. the size of the text, before any parsing;
2. for YAML, a scan of the parser's events (libyaml, a few µs each) before PyYAML builds any value (~10 µs a
   node): nodes, counting each repetition of an alias (go-yaml's alias ratio, and the node bound), nesting,
   and integers too long to convert; the scan stops at the first node past a bound, so a billion-laughs
   document costs a few thousand events, not gigabytes;
3. for JSON, the nesting before decoding (Python's decoder recurses) and integers as they are read;
4. then a walk of the values read (:func:`check_values`, which the pod reader applies to a decoded object
   given to it too): the node bound for JSON, and text that is not Unicode scalar values (a lone
   surrogate, from a ``\\ud800`` escape).

Errors are :class:`ManifestError`, naming the source, the document and the field:
``request: document 1: metadata.uid: Invalid value: "\\xed\\xa0\\x80abc": a lone UTF-16 surrogate ...``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kubeletemu.golang import go_quote
from kubeletemu.manifest.limits import (
    FILE,
    MAX_DEPTH,
    MAX_INTEGER_CHARS,
    Limits,
    clip,
    excessive_aliasing,
)

# libyaml's parser when PyYAML was built with it: ~10x faster, same safe constructors.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_INT_TAG = "tag:yaml.org,2002:int"
_SURROGATE = re.compile("[\ud800-\udfff]")
_BRACKETS_AND_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)


class ManifestError(ValueError):
    """A manifest that is not a valid pod: ``[source: ]pod "<name>" (document N[, items[i]]): field: why``."""


class YAMLSyntaxError(ValueError):
    """Text that is not YAML; ``str()`` is the parser's problem and its ``(line, column)``."""


class _LongInteger(str):
    """A JSON integer longer than :data:`MAX_INTEGER_CHARS`, kept as its text for the walk to refuse."""


@dataclass(frozen=True)
class _Place:
    """A node's place, as a chain to its parent: the path is spelled only for a refusal."""

    parent: _Place | None
    key: str | int

    def path(self) -> str:
        parts: list[str] = []
        place: _Place | None = self
        while place is not None:
            key = place.key
            parts.append(f"[{key}]" if isinstance(key, int) else f".{clip(key)}")
            place = place.parent
        return "".join(reversed(parts)).lstrip(".")


def _at(source: str | None, document: int, place: _Place | None, problem: str) -> ManifestError:
    where = f"{source}: document {document}" if source else f"document {document}"
    path = place.path() if place is not None else ""
    return ManifestError(f"{where}: {path}: {problem}" if path else f"{where}: {problem}")


def decode_documents(text: str, source: str | None = None, limits: Limits = FILE) -> list[Any]:
    """Every document of ``text`` (YAML, or JSON as ``kubectl -o json`` prints it), within ``limits``;
    empty documents are ``None``. Raises :class:`ManifestError` (a bound, or invalid text) and
    :class:`YAMLSyntaxError`."""
    if limits.max_chars is not None and len(text) > limits.max_chars:
        where = f"{source}: " if source else ""
        raise ManifestError(
            f"{where}the text is {len(text):,} characters long, more than the {limits.max_chars:,} a request "
            "may carry (the API server's request body limit)"
        )
    documents = _json_document(text, source, limits)
    if documents is None:
        _scan_yaml(text, source, limits)
        documents = _yaml_documents(text)
    for index, document in enumerate(documents, start=1):
        check_values(document, source, index, limits)
    return documents


def yaml_documents(text: str, limits: Limits = FILE) -> list[Any]:
    """Every document of a YAML stream (JSON is YAML too), within ``limits``; empty documents are ``None``.
    A bound or invalid text is a :class:`YAMLSyntaxError` too, for readers that report only those."""
    try:
        _scan_yaml(text, None, limits)
    except ManifestError as err:
        raise YAMLSyntaxError(str(err)) from None
    documents = _yaml_documents(text)
    for index, document in enumerate(documents, start=1):
        try:
            check_values(document, None, index, limits)
        except ManifestError as err:
            raise YAMLSyntaxError(str(err)) from None
    return documents


# --- JSON --------------------------------------------------------------------------------------------------


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


def _integer(text: str) -> int | str:
    return _LongInteger(text) if len(text) > MAX_INTEGER_CHARS else int(text)


# A run of digits long enough to be such an integer (or to sit in a string): only then is each integer
# read through :func:`_integer`, a Python call per number the C decoder otherwise avoids.
_LONG_DIGITS = re.compile(rf"\d{{{MAX_INTEGER_CHARS + 1}}}")


def decode_json(text: str, source: str | None = None, limits: Limits = FILE) -> Any:
    """The one JSON value of ``text`` (strictly JSON: no YAML, no ``NaN`` or ``Infinity``), within
    ``limits``, its values checked as :func:`decode_documents` checks a document's. Raises
    :class:`ManifestError` naming ``source``, for invalid JSON too (the decoder's message and place)."""
    where = f"{source}: " if source else ""
    if limits.max_chars is not None and len(text) > limits.max_chars:
        raise ManifestError(
            f"{where}the text is {len(text):,} characters long, more than the {limits.max_chars:,} allowed"
        )
    try:
        value = _load_json(text, source, limits, _refuse_constant)
    except ManifestError:
        raise
    except ValueError as err:  # the decoder's JSONDecodeError, or _refuse_constant's
        raise ManifestError(f"{where}invalid JSON: {err}") from None
    check_values(value, source, 1, limits)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _json_document(text: str, source: str | None, limits: Limits) -> list[Any] | None:
    """The one JSON value of ``text``, or None when it is not JSON (flow-style YAML, or broken JSON: the
    YAML parser reports it)."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return [_load_json(text, source, limits)]
    except json.JSONDecodeError:
        return None


def _load_json(text: str, source: str | None, limits: Limits, parse_constant: Any = None) -> Any:
    """``json.loads`` after the nesting and value-count bounds (:class:`ManifestError`); raises the
    decoder's ``JSONDecodeError``."""
    # Python's decoder holds the GIL until it is done (a second for a million values): it gets a text whose
    # values are counted first. Every value but a container's first follows a comma or a colon, so the
    # count of those (and of openings) bounds the count of values; only above the bound are they counted
    # exactly, token by token, which lets other threads run.
    # Nesting first: the value count below names where its bound was crossed, a path as deep as the text.
    # The scan runs only when the text has enough brackets to matter.
    if text.count("[") + text.count("{") > MAX_DEPTH and json_depth(text) > MAX_DEPTH:
        where = f"{source}: " if source else ""
        raise ManifestError(f"{where}invalid JSON: nested more than {MAX_DEPTH} levels deep")
    budget = limits.max_nodes
    if budget is not None and text.count(",") + text.count(":") + text.count("[") + text.count("{") > budget:
        _count_json_values(text, source, budget)
    parse_int = _integer if _LONG_DIGITS.search(text) else None
    return json.loads(text, parse_int=parse_int, parse_constant=parse_constant)


def _count_json_values(text: str, source: str | None, budget: int) -> None:
    """Refuse JSON text holding more than ``budget`` values, naming where the bound was crossed."""
    count = 0
    # Per open container: its place, whether it is an object, the index or key of its current value.
    stack: list[tuple[_Place | None, bool, list[str | int]]] = []
    expecting_key = False
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token[0] == '"':
            if expecting_key and stack:
                stack[-1][2][0] = token[1:-1]
                expecting_key = False
            continue
        if token in "[{":
            count += 1
            parent = stack[-1] if stack else None
            place = None if parent is None else _Place(parent[0], parent[2][0])
            stack.append((place, token == "{", [0 if token == "[" else "?"]))
            expecting_key = token == "{"
        elif token in "]}":
            if stack:
                stack.pop()
        elif token == ",":
            if stack and stack[-1][1]:
                expecting_key = True
            else:
                count += 1
                if stack:
                    current = stack[-1][2]
                    current[0] = int(current[0]) + 1
        else:  # ":"
            count += 1
        if count > budget:
            place = None if not stack else _Place(stack[-1][0], stack[-1][2][0])
            raise _at(source, 1, place, _too_many(budget))


# --- YAML --------------------------------------------------------------------------------------------------


def _yaml_documents(text: str) -> list[Any]:
    try:
        return list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as err:
        raise _syntax_error(err) from None


def _syntax_error(err: yaml.YAMLError) -> YAMLSyntaxError:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        return YAMLSyntaxError(f"{err.problem} (line {mark.line + 1}, column {mark.column + 1})")
    return YAMLSyntaxError(str(err).replace("\n", " "))


class _Frame:
    """An open mapping or sequence in the event stream: where it is, and where its next node goes."""

    __slots__ = ("anchor", "is_mapping", "key", "next", "place", "started")

    def __init__(self, place: _Place | None, is_mapping: bool, anchor: str | None, started: int) -> None:
        self.place = place
        self.is_mapping = is_mapping
        self.anchor = anchor
        self.started = started  # the node count when it opened: its size, for an anchor, at its end
        self.next = 0  # a sequence's next index; a mapping's count of keys and values seen
        self.key: str | int = "?"


def _events(text: str) -> Iterator[yaml.Event]:
    try:
        yield from yaml.parse(text, Loader=_LOADER)
    except yaml.YAMLError as err:
        raise _syntax_error(err) from None


def _scan_yaml(text: str, source: str | None, limits: Limits) -> None:
    """Refuse, before PyYAML builds anything, a stream whose documents break a bound of ``limits``."""
    resolver = yaml.resolver.Resolver()
    document = 0
    nodes = aliased = 0
    anchors: dict[str, int] = {}  # anchor -> the nodes it stands for, its aliases' own included
    stack: list[_Frame] = []
    for event in _events(text):
        if isinstance(event, yaml.DocumentStartEvent):
            document += 1
            nodes = aliased = 0
            anchors.clear()
            continue
        if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            frame = stack.pop()
            if frame.anchor is not None:
                anchors[frame.anchor] = nodes - frame.started
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        place, is_key = _next_place(stack)
        if is_key:
            stack[-1].key = event.value if isinstance(event, yaml.ScalarEvent) else "?"
        if isinstance(event, yaml.AliasEvent):
            if any(frame.anchor == event.anchor for frame in stack):
                # PyYAML would build a list that holds itself, which no walk of it ends (go-yaml's text).
                raise _at(source, document, place, f"anchor {event.anchor!r} value contains itself")
            size = anchors.get(event.anchor or "", 1)
            nodes += size
            aliased += size
        else:
            nodes += 1
        if limits.max_nodes is not None and nodes > limits.max_nodes:
            raise _at(source, document, place, _too_many(limits.max_nodes))
        if excessive_aliasing(nodes, aliased):
            raise _at(source, document, place, "document contains excessive aliasing")
        if isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                anchors[event.anchor] = 1
            if len(event.value) > MAX_INTEGER_CHARS and _is_integer(resolver, event):
                raise _at(source, document, place, _long_integer(event.value))
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise _at(source, document, place, f"nested more than {MAX_DEPTH} levels deep")
            stack.append(_Frame(place, isinstance(event, yaml.MappingStartEvent), event.anchor, nodes - 1))


def _next_place(stack: list[_Frame]) -> tuple[_Place | None, bool]:
    """The place of the node the next event starts, and whether it is a mapping's key (which stands at its
    mapping's place)."""
    if not stack:
        return None, False
    frame = stack[-1]
    frame.next += 1
    if frame.is_mapping:
        if frame.next % 2 == 1:
            return frame.place, True
        return _Place(frame.place, frame.key), False
    return _Place(frame.place, frame.next - 1), False


def _is_integer(resolver: yaml.resolver.Resolver, event: yaml.ScalarEvent) -> bool:
    tag = event.tag
    if tag in (None, "!"):
        tag = resolver.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
    return tag == _INT_TAG


def _long_integer(text: str) -> str:
    return (
        f"Invalid value: {go_quote(clip(text))}: an integer may have at most {MAX_INTEGER_CHARS} characters"
    )


# --- the values read ---------------------------------------------------------------------------------------


def check_values(document: Any, source: str | None, index: int = 1, limits: Limits = FILE) -> None:
    """Refuse what no reader should meet: text that is not Unicode scalar values, an integer too long to
    convert, more nodes than ``limits`` allow (counted as a list or mapping is opened, before its items are
    looked at). Iterative: the depth is bounded, the stack need not be."""
    budget = limits.max_nodes
    pending: list[tuple[Any, _Place | None]] = [(document, None)]
    count = 1
    while pending:
        value, place = pending.pop()
        if isinstance(value, _LongInteger):
            raise _at(source, index, place, _long_integer(value))
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise _at(source, index, place, _not_text(value))
            continue
        if not isinstance(value, Mapping | list):
            continue
        count += len(value)
        if budget is not None and count > budget:
            raise _at(source, index, place, _too_many(budget))
        if isinstance(value, list):
            pending.extend((item, _Place(place, i)) for i, item in enumerate(value))
            continue
        for key, item in value.items():
            if isinstance(key, str) and _SURROGATE.search(key):
                raise _at(source, index, place, _not_text(key))
            pending.append((item, _Place(place, key if isinstance(key, str) else repr(key))))


def _too_many(budget: int) -> str:
    return (
        f"more than {budget:,} values, lists and mappings (counting each repetition by an alias): the most "
        "a request's document may hold"
    )


def _not_text(value: str) -> str:
    match = _SURROGATE.search(value)
    assert match is not None
    return (
        f"Invalid value: {go_quote(clip(value))}: a lone UTF-16 surrogate (U+{ord(match.group()):04X} at "
        f"character {match.start()}) is not a Unicode character, and cannot be written as UTF-8"
    )
