"""The Go side of the extender's wire on its own: the Go program of tests/extender/wire/ built at each pinned
kube-scheduler version, the golden files it writes (current, and each one Go's own encoding of its v1 type),
and what kube-scheduler reads from replies, checked value by value (docs/extender-wire.md tabulates it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.extender import golden
from tests.extender.gowire import VERSIONS, WIRE_PINS, WireError, built
from tests.extender.wire_cases import CASES, NODES, POD, PREEMPT_DESCRIPTION, VICTIM_1, VICTIM_3
from tests.upstream import exporters

FILTER = {"pod": POD, "nodes": NODES}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_binary_is_built_with_its_kube_scheduler_version(version: str) -> None:
    assert built(version).kube_scheduler_version() == version


@pytest.mark.parametrize("pin", WIRE_PINS, ids=VERSIONS)
def test_each_module_file_requires_the_types_at_its_version(pin: exporters.ExporterPin) -> None:
    modfile = (pin.module_dir / pin.modfile).read_text()
    for module in ("k8s.io/kube-scheduler", "k8s.io/api", "k8s.io/apimachinery"):
        assert f"\t{module} {pin.version}\n" in modfile
    assert (pin.module_dir / pin.modfile).with_suffix(".sum").stat().st_size > 0


@pytest.mark.parametrize("version", VERSIONS)
def test_golden_files_are_current(version: str) -> None:
    """`python -m tests.extender.golden` rewrites them; nothing is missing, stale or left over."""
    files = golden.version_files(built(version))
    assert len(files) == 3 * len(CASES)
    assert golden.stale(golden.GOLDEN_DIR / version, files) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_every_golden_body_is_gos_own_encoding_of_its_type(version: str) -> None:
    """Each request and reply decodes strictly (no unknown key, one value) into its v1 type and json.Marshal
    writes it back byte for byte."""
    wire = built(version)
    checked = 0
    for case in CASES:
        for kind in ("request", "reply"):
            wire.roundtrip(
                kind, case.verb, (golden.GOLDEN_DIR / version / f"{case.stem}.{kind}.json").read_bytes()
            )
            checked += 1
    assert checked == 2 * len(CASES)


def test_roundtrip_refuses_what_is_not_gos_form() -> None:
    wire = built(VERSIONS[0])
    for body in (
        b'{"nodenames":["a"]}',  # a key in another case
        b'{"Nodes":null,"NodeNames":["a"],"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":""}\n',
        b'{"NodeNames":["a"],"Extra":1}',
    ):
        with pytest.raises(WireError):
            wire.roundtrip("reply", "filter", body)


def _reads(stem: str, version: str = VERSIONS[0]) -> Any:
    return json.loads((golden.GOLDEN_DIR / version / f"{stem}.reads.json").read_text())


def _status(code: str, reason: str) -> dict[str, str]:
    return {"code": code, "reason": reason}


def test_filter_reads() -> None:
    some = _reads("filter-some-fit")
    assert some["feasible"] == ["node-a"]
    assert some["statuses"]["node-b"]["code"] == "Unschedulable"
    assert some["statuses"]["node-c"]["code"] == "UnschedulableAndUnresolvable"
    # NodeNames null and [] mean the same: no node fits.
    assert _reads("filter-none-fit-null") == _reads("filter-none-fit-empty")
    assert _reads("filter-none-fit-null")["feasible"] == []
    both = _reads("filter-failed-in-both")["statuses"]
    assert both["node-b"]["code"] == "UnschedulableAndUnresolvable"
    assert both["node-c"] == _status("Unschedulable", "x")
    unnamed = _reads("filter-unnamed")
    assert (unnamed["feasible"], unnamed["statuses"], unnamed["unnamed"]) == (
        ["node-a"],
        {},
        ["node-b", "node-c"],
    )
    assert _reads("filter-error") == {
        "error": "node-b: no state from its agent for 30 s",
        "feasible": None,
        "statuses": None,
        "unnamed": None,
    }
    assert _reads("filter-error-with-names")["error"] == "mirror lagging"
    assert 'claims a filtered node "node-z"' in _reads("filter-unknown-node")["error"]
    # Without nodeCacheCapable the scheduler reads Nodes only: NodeNames ["node-a"] passes no node.
    assert _reads("filter-node-list")["feasible"] == []


def test_prioritize_reads() -> None:
    """score * weight * 10, summed per node, unclamped; null, [] and hosts outside the request add nothing."""
    assert _reads("prioritize-scores")["scores"] == {"node-a": 100, "node-b": 30, "node-c": 0}
    assert _reads("prioritize-weight-5")["scores"] == {"node-a": 500, "node-b": 150}
    assert _reads("prioritize-out-of-range")["scores"] == {"node-a": 110, "node-b": -10}
    assert (
        _reads("prioritize-empty")
        == _reads("prioritize-null")
        == {"error": None, "scores": {}, "dropped": []}
    )
    twice = _reads("prioritize-unknown-and-twice")
    assert (twice["scores"], twice["dropped"]) == ({"node-a": 50}, ["node-z"])


def test_preempt_reads() -> None:
    assert _reads("preempt-accept-all")["candidates"] == {
        "node-a": {
            "pods": ["0a0a0a0a-0000-4000-8000-0000000000a1", "0a0a0a0a-0000-4000-8000-0000000000a2"],
            "numPDBViolations": 1,
        },
        "node-b": {"pods": [VICTIM_3], "numPDBViolations": 0},
    }
    assert list(_reads("preempt-subset")["candidates"]) == ["node-b"]
    assert _reads("preempt-none-empty") == _reads("preempt-none-null") == {"error": None, "candidates": {}}
    for stem in ("preempt-no-victims", "preempt-pods-null"):
        assert _reads(stem)["error"] == 'expected at least one victim pod on node "node-a"'
    assert "panics" in _reads("preempt-nil-victims")["error"]
    assert f"(UID: &{{{VICTIM_1}}}) on node: node-b" in _reads("preempt-unknown-pod")["error"]
    assert _reads("preempt-unknown-node")["error"] == 'nodeinfo not found for node name "node-z"'


def test_bind_reads() -> None:
    assert _reads("bind-bound") == {"error": None}
    assert _reads("bind-error") == {"error": "node-a refused the pod: TopologyAffinityError"}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("verb", "body", "reads"),
    [
        # Keys match case-insensitively; unknown keys are ignored; what follows the first value is not read.
        ("filter", b'{"nodenames":["node-a"],"failednodes":{"node-b":"x"}}', {"feasible": ["node-a"]}),
        ("filter", b'{"NodeNames":["node-a"],"Extra":{"a":1}}', {"feasible": ["node-a"]}),
        ("filter", b'{"NodeNames":["node-a"]} and then garbage', {"feasible": ["node-a"]}),
        # Missing keys are nil: no node fits.
        ("filter", b"{}", {"feasible": [], "unnamed": NODES}),
        ("filter", b"null", {"feasible": [], "unnamed": NODES}),
        ("filter", b"", {"error": "EOF"}),
        (
            "filter",
            b'{"NodeNames":"node-a"}',
            {"error": "json: cannot unmarshal string into Go struct field"},
        ),
        ("prioritize", b'[{"Host":"node-a","Score":5.0}]', {"error": "json: cannot unmarshal number 5.0"}),
        ("prioritize", b'{"Host":"node-a","Score":5}', {"error": "json: cannot unmarshal object"}),
        ("bind", b'{"error":"no"}', {"error": "no"}),
    ],
)
def test_replies_decode_as_the_schedulers_json_decoder_does(
    version: str, verb: str, body: bytes, reads: dict[str, Any]
) -> None:
    decoded = built(version).decode_reply(verb, FILTER if verb != "preempt" else PREEMPT_DESCRIPTION, body)
    for key, value in reads.items():
        if key == "error":
            assert decoded.reads["error"].startswith(value), decoded.reads
            if value != "no":
                assert decoded.canonical is None
        else:
            assert decoded.reads[key] == value, decoded.reads


@pytest.mark.parametrize("version", VERSIONS)
def test_requests_as_httpextender_builds_them(version: str) -> None:
    """Node-cache mode: Nodes null and NodeNames a list, [] (never null) for no node; preemption's victims by
    UID with Pods [] (never null) for none, NodeNameToVictims null; Bind's four fields."""
    wire = built(version)
    args = json.loads(wire.encode_request("filter", {"pod": POD, "nodes": []}))
    assert (list(args), args["Nodes"], args["NodeNames"]) == (["Pod", "Nodes", "NodeNames"], None, [])
    victims = {"node-a": {"Pods": None, "NumPDBViolations": 0}}
    args = json.loads(wire.encode_request("preempt", {"pod": POD, "nodeNameToVictims": victims}))
    assert args["NodeNameToVictims"] is None
    assert args["NodeNameToMetaVictims"] == {"node-a": {"Pods": [], "NumPDBViolations": 0}}
    args = json.loads(wire.encode_request("bind", {"pod": POD, "node": "node-a"}))
    assert args == {
        "PodName": "numa-0",
        "PodNamespace": "team-a",
        "PodUID": POD["metadata"]["uid"],
        "Node": "node-a",
    }


def test_the_program_refuses_bad_input_in_one_line() -> None:
    wire = built(VERSIONS[0])
    with pytest.raises(WireError, match=r'^wire: description: json: unknown field "nodez"$'):
        wire.encode_request("filter", {"pod": POD, "nodez": []})
    with pytest.raises(WireError, match=r'^wire: unknown verb "score"$'):
        wire.encode_request("score", FILTER)
