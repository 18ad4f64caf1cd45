"""The bounded decoder (kubeletemu.manifest.documents) and the quantity bounds, in process: each bound is
refused naming the document and the field, before the costly step it protects."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from kubeletemu.manifest import ManifestError, parse_pods, pod_from_manifest
from kubeletemu.manifest.documents import YAMLSyntaxError, decode_documents, yaml_documents
from kubeletemu.manifest.limits import FILE, REQUEST, Limits, excessive_aliasing
from kubeletemu.quantity import Quantity, QuantityError, QuantityRangeError


def laughs(levels: int, width: int = 9) -> str:
    lines = ["l1: &l1 [" + ", ".join(['"lol"'] * width) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]" for n in range(2, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("limits", [REQUEST, FILE], ids=["request", "file"])
def test_an_alias_bomb_is_refused_in_milliseconds_naming_where(limits: Limits) -> None:
    started = time.monotonic()
    with pytest.raises(
        ManifestError, match=r"^f: document 1: l\d+\[\d+\]: document contains excessive aliasing$"
    ):
        decode_documents(laughs(9), "f", limits)
    assert time.monotonic() - started < 1


def test_a_few_aliases_are_read_as_go_yaml_reads_them() -> None:
    assert decode_documents(laughs(3, 3))[0]["l3"] == [[["lol"] * 3] * 3] * 3
    assert not excessive_aliasing(1000, 990) and excessive_aliasing(1001, 992)
    assert excessive_aliasing(4_000_000, 400_001) and not excessive_aliasing(4_000_000, 400_000)


@pytest.mark.parametrize("text", ["a: &a [*a]", "a: &a {b: [*a]}"])
def test_an_alias_inside_its_own_anchor_is_refused(text: str) -> None:
    with pytest.raises(ManifestError, match="anchor 'a' value contains itself"):
        decode_documents(text, "f")


@pytest.mark.parametrize("form", ["yaml", "json"])
def test_a_request_holds_at_most_50000_nodes(form: str) -> None:
    items = ",".join(["0"] * 60_000)
    text = f'{{"big": [{items}]}}' if form == "json" else f"big: [{items}]\n"
    with pytest.raises(ManifestError, match=r"document 1: big(\[\d+\])?: more than 50,000 values"):
        decode_documents(text, "request", REQUEST)
    if form == "json":  # a file is not bounded (YAML would take seconds to build here)
        assert len(decode_documents(text, "file", FILE)[0]["big"]) == 60_000


def test_a_request_holds_at_most_3_mib() -> None:
    with pytest.raises(ManifestError, match=r"^request: the text is 3,145,729 characters long"):
        decode_documents(" " * (3 * 1024 * 1024 + 1), "request", REQUEST)


@pytest.mark.parametrize("text", ["spec: {priority: 1$}", '{"spec": {"priority": 1$}}'], ids=["yaml", "json"])
def test_an_integer_of_thousands_of_digits_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(ManifestError, match=r"document 1: spec\.priority: .*at most 64 characters"):
        decode_documents(text.replace("1$", "1" * 5000), "f")
    assert decode_documents(text.replace("1$", "1" * 64), "f")[0]["spec"]["priority"] == int("1" * 64)


def test_yaml_nested_past_512_levels_is_refused() -> None:
    with pytest.raises(ManifestError, match="nested more than 512 levels deep"):
        decode_documents("a: " + "[" * 600 + "]" * 600, "f")


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"metadata": {"uid": "\\ud800abc"}}', "metadata.uid"),
        ('{"metadata": {"annotations": {"\\udfff": "v"}}}', "metadata.annotations"),
        ('{"spec": {"containers": [{"name": "x\\udbff"}]}}', r"spec.containers\[0\].name"),
    ],
)
def test_a_lone_surrogate_is_refused_naming_the_field(text: str, path: str) -> None:
    with pytest.raises(ManifestError, match=rf"document 1: {path}: Invalid value: .*lone UTF-16 surrogate"):
        decode_documents(text, "request")


def test_an_object_decoded_elsewhere_is_checked_too() -> None:
    pod = {"metadata": {"name": "p", "uid": "\ud800"}, "spec": {"containers": [{"name": "c"}]}}
    with pytest.raises(ManifestError, match=r"metadata\.uid"):
        pod_from_manifest(pod)


def test_config_readers_get_the_same_bounds_as_yaml_errors() -> None:
    with pytest.raises(YAMLSyntaxError, match="excessive aliasing"):
        yaml_documents(laughs(9))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1e1000000", "2^63-1"),
        ("-1e1000000", "2^63-1"),
        ("9223372036854775808", "2^63-1"),
        ("8Ei", "2^63-1"),
        ("9.3E18", "2^63-1"),
        ("1e" + "9" * 5000, "2^63-1"),
        ("1" * 65, "at most 64 characters"),
    ],
)
def test_a_quantity_past_what_kubernetes_represents_is_refused_before_it_is_computed(
    text: str, why: str
) -> None:
    started = time.monotonic()
    with pytest.raises(QuantityRangeError, match=why.replace("^", r"\^")):
        Quantity.parse(text)
    with pytest.raises(QuantityRangeError):
        Quantity.parse(10**5000)
    assert time.monotonic() - started < 0.1


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("9223372036854775807", Fraction(2**63 - 1)),
        ("7Ei", Fraction(7 * 2**60)),
        ("1E", Fraction(10**18)),
        ("0e99999999999", Fraction(0)),
        ("1e-1000000", Fraction(1, 10**9)),  # rounded up to a nano unit, as ParseQuantity does
    ],
)
def test_quantities_at_the_bounds_are_read(text: str, amount: Fraction) -> None:
    assert Quantity.parse(text).amount == amount


def test_a_manifest_quotes_the_bound_naming_the_field() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  overhead: {cpu: 1e1000000}\n"
        "  containers: [{name: c}]\n"
    )
    with pytest.raises(ManifestError) as raised:
        parse_pods(text, "f")
    assert str(raised.value) == (
        'f: pod "p" (document 1): spec.overhead.cpu: invalid quantity "1e1000000": '
        "quantities may be no greater than 2^63-1 (9223372036854775807) in magnitude"
    )
    assert not isinstance(QuantityError("x"), QuantityRangeError)
