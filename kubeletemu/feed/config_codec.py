"""The node's configuration (:class:`~kubeletemu.config.Config`) as plain JSON values and back, exactly.

A mirror must run the node's kubelet with the node's settings as the node holds them after its own
defaulting and command-line overrides, so the feed sends the parsed dataclasses rather than the files they
came from. The codec walks the dataclasses by their type hints: scalars as themselves, tuples and sets as
lists, mappings as objects (int keys as their decimal text), nested dataclasses as objects keyed by field
name; a :class:`~kubeletemu.quantity.Quantity` keeps both its exact amount and the text it was written as,
a :class:`~kubeletemu.cpumanager.cpuset.CPUSet` is its ``"0-3,8"`` form. ``decode_config(encode_config(c))
== c`` for every configuration the loader builds (``tests/feed/test_state.py``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from fractions import Fraction
from functools import cache
from typing import Any, TypeVar

from kubeletemu.config.loader import Config
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.quantity import Quantity

T = TypeVar("T")


class ConfigCodecError(ValueError):
    """A document that is not an encoded configuration: ``path: problem``."""


def encode_config(config: Config) -> dict[str, Any]:
    """``config`` as JSON values (see the module docstring)."""
    encoded = _encode(config)
    assert isinstance(encoded, dict)
    return encoded


def decode_config(doc: Any) -> Config:
    """The configuration :func:`encode_config` encoded as ``doc``; :class:`ConfigCodecError` otherwise."""
    decoded = _decode(Config, doc, "config")
    assert isinstance(decoded, Config)
    return decoded


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Quantity):
        return {"amount": str(value.amount), "text": value.text}
    if isinstance(value, CPUSet):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, frozenset | set):
        return sorted(_encode(v) for v in value)
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    raise TypeError(f"cannot encode {type(value).__name__} in a configuration")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(kind: Any, doc: Any, path: str) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if doc is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:
            raise TypeError(f"{path}: unions of several types are not encoded")
        return _decode(options[0], doc, path)
    if kind is Any:
        return doc
    if kind is bool:
        return _check(doc, bool, path)
    if kind is int:
        if isinstance(doc, bool):
            raise ConfigCodecError(f"{path}: expected an integer, got {doc!r}")
        return _check(doc, int, path)
    if kind is float:
        if isinstance(doc, bool) or not isinstance(doc, int | float):
            raise ConfigCodecError(f"{path}: expected a number, got {doc!r}")
        return float(doc)
    if kind is str:
        return _check(doc, str, path)
    if kind is Quantity:
        body = _check(doc, Mapping, path)
        try:
            return Quantity(Fraction(_check(body.get("amount"), str, f"{path}.amount")), body.get("text"))
        except ValueError as err:
            raise ConfigCodecError(f"{path}.amount: {err}") from None
    if kind is CPUSet:
        try:
            return CPUSet.parse(_check(doc, str, path))
        except ValueError as err:
            raise ConfigCodecError(f"{path}: {err}") from None
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        body = _check(doc, Mapping, path)
        hints = _hints(kind)
        values = {}
        for f in dataclasses.fields(kind):
            if f.name not in body:
                raise ConfigCodecError(f"{path}.{f.name}: missing")
            values[f.name] = _decode(hints[f.name], body[f.name], f"{path}.{f.name}")
        return kind(**values)
    if origin in (tuple,):
        items = _check(doc, list, path)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, f"{path}[{i}]") for i, v in enumerate(items))
        if len(items) != len(args):
            raise ConfigCodecError(f"{path}: expected {len(args)} items, got {len(items)}")
        return tuple(_decode(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, items, strict=True)))
    if origin in (frozenset, set):
        items = _check(doc, list, path)
        return frozenset(_decode(args[0], v, f"{path}[{i}]") for i, v in enumerate(items))
    if origin in (Mapping, dict, typing.Mapping, types.MappingProxyType) or kind is Mapping:
        body = _check(doc, Mapping, path)
        key_kind, value_kind = args or (str, Any)
        out = {}
        for key, value in body.items():
            decoded_key = int(key) if key_kind is int else key
            out[decoded_key] = _decode(value_kind, value, f"{path}.{key}")
        # The loader freezes its mappings; a read-only view compares equal to a dict, so either does.
        return types.MappingProxyType(out)
    raise TypeError(f"{path}: no decoding for {kind!r}")


def _check(doc: Any, kind: type[T] | Any, path: str) -> Any:
    if not isinstance(doc, kind):
        name = getattr(kind, "__name__", str(kind))
        raise ConfigCodecError(f"{path}: expected {name}, got {type(doc).__name__}")
    return doc
