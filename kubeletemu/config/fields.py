"""Typed reads from a YAML document (decoded by :mod:`kubeletemu.manifest.documents`); each failure is the
reporter's exception (a :class:`ConfigError` for config files) naming the file and the field.

Scalars bound for string fields are converted the way ``sigs.k8s.io/yaml`` converts them for the kubelet
(``cpu: 1`` is the string ``"1"``, ``true`` is ``"true"``), so a real kubelet config file reads the same.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kubeletemu.config.errors import ConfigError

E = TypeVar("E", bound=Exception)


class Reporter(Protocol):
    """Turns a field path and a problem into the exception to raise."""

    def error(self, path: str, problem: str) -> Exception: ...


@dataclass(frozen=True)
class SourceReporter(Generic[E]):
    """The document being read (``file`` or ``file (document 2)``), whose problems raise ``kind``:
    ``source: path: problem``."""

    source: str
    kind: Callable[[str], E]

    def error(self, path: str, problem: str) -> E:
        return self.kind(f"{self.source}: {path}: {problem}" if path else f"{self.source}: {problem}")


@dataclass(frozen=True)
class Where(SourceReporter[ConfigError]):
    """A config file being read: its problems are :class:`ConfigError`."""

    kind: Callable[[str], ConfigError] = ConfigError


def known_fields(where: Reporter, path: str, doc: Mapping[str, Any], keys: Collection[str]) -> None:
    """Refuses the first unknown key of ``doc`` (a mapping at ``path``; ``""`` for the top level), naming
    the keys it takes in ``keys``' order, as strict decoding does in the kubelet's config readers."""
    unknown = sorted(set(doc) - set(keys))
    if unknown:
        field = f"{path}.{unknown[0]}" if path else unknown[0]
        raise where.error(field, f"unknown field: expected one of {', '.join(keys)}")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list"}.get(
        type(value), "a mapping" if isinstance(value, Mapping) else type(value).__name__
    )


def mapping(where: Reporter, path: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error(path, f"expected a mapping, got {_type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise where.error(path, f"keys must be strings, got {key!r}")
    return value


def sequence(where: Reporter, path: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(path, f"expected a list, got {_type_name(value)}")
    return value


def string(where: Reporter, path: str, value: Any) -> str:
    if not isinstance(value, str):
        raise where.error(path, f"expected a string, got {_type_name(value)}")
    return value


def integer(where: Reporter, path: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.error(path, f"expected an integer, got {_type_name(value)}")
    return value


def boolean(where: Reporter, path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise where.error(path, f"expected true or false, got {_type_name(value)}")
    return value


def scalar_text(where: Reporter, path: str, value: Any) -> str:
    """A YAML scalar into a Go ``string`` field: numbers and booleans become their text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return string(where, path, value)


def string_map(where: Reporter, path: str, value: Any) -> dict[str, str]:
    """``map[string]string``."""
    return {
        key: scalar_text(where, f"{path}[{key}]", item) for key, item in mapping(where, path, value).items()
    }


def bool_map(where: Reporter, path: str, value: Any) -> dict[str, bool]:
    """``map[string]bool`` (``featureGates``)."""
    return {key: boolean(where, f"{path}[{key}]", item) for key, item in mapping(where, path, value).items()}
