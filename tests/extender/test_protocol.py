"""The extender's wire as Go's encoding/json reads and writes the extender/v1 types: field names as keys,
nil as null and empty as [] or {}, Go's string escapes, case-insensitive keys, and a ProtocolError naming the
field for anything else (size, nesting, types, the pod)."""

from __future__ import annotations

import json

import pytest

from kubeletemu.manifest.limits import Limits
from kubeletemu.scheduler.extender.gojson import go_string, marshal
from kubeletemu.scheduler.extender.protocol import (
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionResult,
    HostPriority,
    MetaPod,
    MetaVictims,
    ProtocolError,
    encode_binding_result,
    encode_filter_result,
    encode_preemption_result,
    encode_priority_list,
    parse_args,
    parse_binding_args,
    parse_preemption_args,
)
from tests.extender.conftest import args_body, pod_manifest


def test_filter_result_nil_and_empty_as_go_marshals_them() -> None:
    assert encode_filter_result(ExtenderFilterResult()) == (
        b'{"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":""}'
    )
    assert encode_filter_result(ExtenderFilterResult([], {}, {})) == (
        b'{"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}'
    )
    # Map keys sorted, slices in order.
    result = ExtenderFilterResult(["n2", "n1"], {"z": "b", "a": "c"}, {"m": "TopologyAffinityError: x"})
    assert json.loads(encode_filter_result(result)) == {
        "Nodes": None,
        "NodeNames": ["n2", "n1"],
        "FailedNodes": {"a": "c", "z": "b"},
        "FailedAndUnresolvableNodes": {"m": "TopologyAffinityError: x"},
        "Error": "",
    }
    assert b'"FailedNodes":{"a":"c","z":"b"}' in encode_filter_result(result)


def test_priority_list_nil_empty_and_items() -> None:
    assert encode_priority_list(None) == b"null"
    assert encode_priority_list([]) == b"[]"
    assert encode_priority_list([HostPriority("a", 10), HostPriority("b", 0)]) == (
        b'[{"Host":"a","Score":10},{"Host":"b","Score":0}]'
    )


def test_binding_and_preemption_results() -> None:
    assert encode_binding_result(ExtenderBindingResult()) == b'{"Error":""}'
    assert encode_preemption_result(ExtenderPreemptionResult()) == b'{"NodeNameToMetaVictims":null}'
    assert encode_preemption_result(ExtenderPreemptionResult({})) == b'{"NodeNameToMetaVictims":{}}'
    victims = {
        "b": MetaVictims([MetaPod("u1"), None], 2),
        "a": MetaVictims(None, 0),
        "c": MetaVictims([], 0),
        "d": None,
    }
    assert encode_preemption_result(ExtenderPreemptionResult(victims)) == (
        b'{"NodeNameToMetaVictims":{"a":{"Pods":null,"NumPDBViolations":0},'
        b'"b":{"Pods":[{"UID":"u1"},null],"NumPDBViolations":2},'
        b'"c":{"Pods":[],"NumPDBViolations":0},"d":null}}'
    )


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("<&>", '"\\u003c\\u0026\\u003e"'),
        ("\b\f\n\r\t\x01\x1f\x7f", '"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f"'),
        ("\u2028\u2029é☃", '"\\u2028\\u2029é☃"'),
        ("\ud800x", '"\\ufffdx"'),
    ],
)
def test_strings_escaped_as_go_escapes_them(text: str, quoted: str) -> None:
    assert go_string(text) == quoted
    assert marshal(text) == quoted.encode()


def test_args_in_node_cache_mode() -> None:
    args = parse_args(args_body(pod_manifest("p"), ["n1", "n2"]))
    assert args.pod.uid == "uid-p"
    assert args.node_names == ("n1", "n2")
    assert args.nodes is None
    # null and [] both read; null strings in a []string are "" as in Go.
    assert parse_args(args_body(pod_manifest("p"), None)).node_names is None
    assert parse_args(args_body(pod_manifest("p"), [])).node_names == ()
    body = json.dumps({"Pod": pod_manifest("p"), "NodeNames": ["a", None]}).encode()
    assert parse_args(body).node_names == ("a", "")


def test_args_keys_match_case_insensitively_and_unknown_keys_are_ignored() -> None:
    body = json.dumps({"pod": pod_manifest("p"), "nodenames": ["x"], "Extra": 1}).encode()
    args = parse_args(body)
    assert args.node_names == ("x",)
    # The Kelvin sign folds to k as in bytes.EqualFold... no field has a k; the long s folds to s.
    body = json.dumps({"Pod": pod_manifest("p"), "NodeName\u017f": ["y"]}).encode()
    assert parse_args(body).node_names == ("y",)


def test_args_with_a_node_list() -> None:
    nodes = {"metadata": {}, "items": [{"metadata": {"name": "w1"}}, {"metadata": {"name": "w2"}}]}
    args = parse_args(json.dumps({"Pod": pod_manifest("p"), "Nodes": nodes}).encode())
    assert args.nodes == ("w1", "w2")
    assert args.node_names is None


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        (b"", "", "invalid JSON"),
        (b"[1]", "", "expected an object, got array"),
        (b'{"Pod": null, "NodeNames": []}', "Pod", "Required value"),
        (b'{"NodeNames": []}', "Pod", "Required value"),
        (b'{"Pod": 3}', "Pod", "expected an object, got number"),
        (b'{"Pod": {"metadata": {"name": "p"}, "spec": {}}}', "Pod", "spec.containers: Required value"),
        (b"\xff\xfe", "", "not UTF-8"),
        (b'{"Pod": {}, "NodeNames": NaN}', "", "NaN is not a JSON value"),
        (b'{"Pod": {}, "NodeNames": "n1"}', "Pod", ""),
        (b'{"Pod": {}, "Pod": {}, "pod": {}}', "pod", ""),
    ],
)
def test_malformed_args_name_the_field(body: bytes, field: str, fragment: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_args(body)
    if field == "pod":  # two keys for one field, in different cases
        assert caught.value.field == "Pod"
        assert "given twice" in caught.value.message
        return
    assert caught.value.field == field
    assert fragment in caught.value.message


def test_node_names_of_the_wrong_type() -> None:
    body = json.dumps({"Pod": pod_manifest("p"), "NodeNames": "n1"}).encode()
    with pytest.raises(ProtocolError, match=r"^NodeNames: expected an array, got string$"):
        parse_args(body)
    body = json.dumps({"Pod": pod_manifest("p"), "NodeNames": ["a", 5]}).encode()
    with pytest.raises(ProtocolError, match=r"^NodeNames\[1\]: expected a string, got number$"):
        parse_args(body)


def test_bounds_on_size_values_and_nesting() -> None:
    small = Limits(max_chars=2048, max_nodes=100)
    with pytest.raises(ProtocolError, match="more than the 2,048 allowed"):
        parse_args(args_body(pod_manifest("p"), ["n" * 10] * 300), small)
    with pytest.raises(ProtocolError, match="more than 100 values"):
        parse_args(
            json.dumps({"Pod": pod_manifest("p"), "NodeNames": ["n"] * 150}).encode(), Limits(None, 100)
        )
    deep = b'{"Pod": ' + b"[" * 600 + b"]" * 600 + b"}"
    with pytest.raises(ProtocolError, match="nested more than 512 levels"):
        parse_args(deep)


def test_preemption_args_both_forms() -> None:
    meta = {"n1": {"Pods": [{"UID": "v1"}, {"UID": "v2"}], "NumPDBViolations": 1}, "n2": None}
    args = parse_preemption_args(
        json.dumps({"Pod": pod_manifest("p"), "NodeNameToMetaVictims": meta}).encode()
    )
    assert args.node_name_to_victims is None
    victims = args.victims()
    assert victims["n1"] is not None and victims["n1"].uids() == ["v1", "v2"]
    assert victims["n1"].num_pdb_violations == 1
    assert victims["n2"] is None
    whole = {"n3": {"Pods": [pod_manifest("v3")], "NumPDBViolations": 0}}
    args = parse_preemption_args(json.dumps({"Pod": pod_manifest("p"), "NodeNameToVictims": whole}).encode())
    assert args.victims()["n3"] == MetaVictims([MetaPod("uid-v3")], 0)
    bad = {"n1": {"Pods": [], "NumPDBViolations": 1.5}}
    with pytest.raises(
        ProtocolError, match=r"^NodeNameToMetaVictims\[n1\]\.NumPDBViolations: expected an integer"
    ):
        parse_preemption_args(json.dumps({"Pod": pod_manifest("p"), "NodeNameToMetaVictims": bad}).encode())
    huge = {"n1": {"Pods": [], "NumPDBViolations": 2**63}}
    with pytest.raises(ProtocolError, match="overflows int64"):
        parse_preemption_args(json.dumps({"Pod": pod_manifest("p"), "NodeNameToMetaVictims": huge}).encode())


def test_binding_args() -> None:
    body = b'{"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n1"}'
    args = parse_binding_args(body)
    assert (args.pod_name, args.pod_namespace, args.pod_uid, args.node) == ("p", "ns", "u", "n1")
    with pytest.raises(ProtocolError, match=r"^Node: Required value$"):
        parse_binding_args(b'{"PodName":"p","PodNamespace":"ns","PodUID":"u"}')
    with pytest.raises(ProtocolError, match=r"^PodUID: expected a string, got number$"):
        parse_binding_args(b'{"PodName":"p","PodUID":1,"Node":"n"}')
