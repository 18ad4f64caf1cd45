"""kubeletemu's extender protocol (kubeletemu.scheduler.extender.protocol) against the Go types of
k8s.io/kube-scheduler/extender/v1 at each pinned version: every golden request (as kube-scheduler's
HTTPExtender marshals it) parses to the arguments it describes, and every golden reply, written by our
encoder, is byte for byte what Go's json.Marshal writes and decodes in Go to what the golden reads say."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubeletemu.manifest import pod_from_manifest
from kubeletemu.scheduler.extender.protocol import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
    MetaPod,
    MetaVictims,
    encode_binding_result,
    encode_filter_result,
    encode_preemption_result,
    encode_priority_list,
    parse_args,
    parse_binding_args,
    parse_preemption_args,
)
from tests.extender.golden import GOLDEN_DIR
from tests.extender.gowire import VERSIONS, built
from tests.extender.wire_cases import CASES, Case

CASE_IDS = [case.stem for case in CASES]


def _golden(version: str, case: Case, kind: str) -> bytes:
    return (GOLDEN_DIR / version / f"{case.stem}.{kind}.json").read_bytes()


def _victims(victims: dict[str, Any]) -> dict[str, MetaVictims | None]:
    """The scheduler's victims as the parser keeps them: by UID (whole victim pods too)."""
    return {
        node: MetaVictims([MetaPod(pod["metadata"]["uid"]) for pod in v["Pods"] or ()], v["NumPDBViolations"])
        for node, v in victims.items()
    }


def expected_args(case: Case) -> object:
    """The arguments a case's request carries, from its description (description.go)."""
    desc = case.description
    cache = desc.get("nodeCacheCapable", True)
    pod = desc["pod"]
    if case.verb in ("filter", "prioritize"):
        names = tuple(desc["nodes"])
        return ExtenderArgs(pod_from_manifest(pod), names if cache else None, None if cache else names)
    if case.verb == "preempt":
        victims = _victims(desc["nodeNameToVictims"])
        return ExtenderPreemptionArgs(
            pod_from_manifest(pod), victims if cache else None, None if cache else victims
        )
    meta = pod["metadata"]
    return ExtenderBindingArgs(meta["name"], meta["namespace"], meta["uid"], desc["node"])


PARSERS = {
    "filter": parse_args,
    "prioritize": parse_args,
    "preempt": parse_preemption_args,
    "bind": parse_binding_args,
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_golden_request_parses_to_its_arguments(version: str, case: Case) -> None:
    assert PARSERS[case.verb](_golden(version, case, "request")) == expected_args(case)


def _meta_victims(value: Any) -> MetaVictims | None:
    if value is None:
        return None
    pods = value["Pods"]
    return MetaVictims(
        None if pods is None else [None if p is None else MetaPod(p["UID"]) for p in pods],
        value["NumPDBViolations"],
    )


def encode_reply(verb: str, reply: Any) -> bytes:
    """Our encoder's body for the reply value ``reply`` (keys as the v1 field names)."""
    if verb == "filter":
        assert reply["Nodes"] is None  # a node-cache extender never sends Nodes
        return encode_filter_result(
            ExtenderFilterResult(
                reply["NodeNames"], reply["FailedNodes"], reply["FailedAndUnresolvableNodes"], reply["Error"]
            )
        )
    if verb == "prioritize":
        return encode_priority_list(
            None if reply is None else [HostPriority(e["Host"], e["Score"]) for e in reply]
        )
    if verb == "preempt":
        victims = reply["NodeNameToMetaVictims"]
        return encode_preemption_result(
            ExtenderPreemptionResult(
                None if victims is None else {n: _meta_victims(v) for n, v in victims.items()}
            )
        )
    return encode_binding_result(ExtenderBindingResult(reply["Error"]))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_our_reply_is_what_go_marshals_and_reads_the_same(version: str, case: Case) -> None:
    golden_reply = _golden(version, case, "reply")
    ours = encode_reply(case.verb, json.loads(golden_reply))
    assert ours == golden_reply
    decoded = built(version).decode_reply(case.verb, case.description, ours)
    assert decoded.canonical == ours
    assert decoded.reads == json.loads(_golden(version, case, "reads"))
