"""What every object kind the scheduler-side models read shares: where an object is (file, document, list
item) for its error messages, and the checks of its header and of its quantities. Split from
:mod:`kubeletemu.scheduler.objects` so that :mod:`kubeletemu.scheduler.reservation_object` takes them from
below, not back from the module that imports it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeletemu.config import fields
from kubeletemu.golang import go_quote
from kubeletemu.quantity import Quantity, QuantityError


class ObjectError(ValueError):
    """An input object that is not what it claims: ``source: Kind "name" (document N): field: why``."""


@dataclass
class Where:
    source: str
    document: int
    kind: str = ""
    name: str | None = None
    item: int | None = None

    def error(self, path: str, problem: str) -> ObjectError:
        place = f"document {self.document}" + (f", items[{self.item}]" if self.item is not None else "")
        what = f"{self.kind} {go_quote(self.name)}" if self.name else (self.kind or "object")
        return ObjectError(f"{self.source}: {what} ({place}): {path + ': ' if path else ''}{problem}")


def metadata(where: Where, obj: Mapping[str, Any], kind: str) -> tuple[str, dict[str, str], dict[str, str]]:
    where.kind = kind
    metadata = fields.mapping(where, "metadata", obj.get("metadata"))
    name = metadata.get("name")
    if name in (None, ""):
        raise where.error("metadata.name", "Required value")
    where.name = fields.scalar_text(where, "metadata.name", name)
    labels = fields.string_map(where, "metadata.labels", metadata.get("labels"))
    annotations = fields.string_map(where, "metadata.annotations", metadata.get("annotations"))
    return where.name, labels, annotations


def go_quoted(value: Any) -> str:
    return go_quote(str(value))


def header(
    where: Where,
    obj: Mapping[str, Any],
    kind: str,
    api_version: str,
    quote: Callable[[Any], str] = go_quoted,
) -> tuple[str, dict[str, str], dict[str, str]]:
    """:func:`metadata`, with ``apiVersion`` checked to be ``api_version`` (the values in the error
    quoted by ``quote``)."""
    name, labels, annotations = metadata(where, obj, kind)
    version = obj.get("apiVersion")
    if version != api_version:
        raise where.error(
            "apiVersion", f"Unsupported value: {quote(version)}: supported values: {quote(api_version)}"
        )
    return name, labels, annotations


def quantity(where: Where, path: str, value: Any) -> Quantity:
    if value is None:
        return Quantity(0)
    try:
        return Quantity.parse(fields.scalar_text(where, path, value))
    except QuantityError as err:
        raise where.error(path, str(err)) from None
