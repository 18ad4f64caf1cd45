"""The golden cases of the extender's wire: for each verb, the scheduler's side of a call (the description
``wire encode-request`` builds the request from, tests/extender/wire/description.go) and a reply an
extender sends, including the null and empty ones. tests/extender/golden.py turns each into
``golden/<version>/<verb>-<case>.{request,reply,reads}.json`` with the Go program of each pinned version.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

# What an extender opts its pods in with (any extended resource does: the wire does not look at it).
OPT_IN = "kubeletemu.io/exact-numa"


def pod_object(name: str, uid: str, *, cpus: str | None = "4", memory: str = "2Gi") -> dict[str, Any]:
    """A pending pod as kube-scheduler holds it from its informer: the API server's defaults filled in, and a
    first attempt's PodScheduled condition. Guaranteed with ``cpus`` (and the opt-in resource); best effort
    with ``cpus=None``."""
    container: dict[str, Any] = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    if cpus is not None:
        resources = {"cpu": cpus, "memory": memory, OPT_IN: "1"}
        container["resources"] = {"limits": resources, "requests": resources}
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": "4711",
            "creationTimestamp": "2026-12-02T08:00:00Z",
            "labels": {"app": "numa-bound"},
        },
        "spec": {
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-12-02T08:00:01Z",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient cpu.",
                }
            ],
            "qosClass": "Guaranteed" if cpus is not None else "BestEffort",
        },
    }


POD = pod_object("numa-0", "6f1c0f9e-0000-4000-8000-000000000001")
BEST_EFFORT_POD = pod_object("plain-0", "6f1c0f9e-0000-4000-8000-000000000002", cpus=None)
NODES = ["node-a", "node-b", "node-c"]
VICTIM_1 = "0a0a0a0a-0000-4000-8000-0000000000a1"
VICTIM_2 = "0a0a0a0a-0000-4000-8000-0000000000a2"
VICTIM_3 = "0b0b0b0b-0000-4000-8000-0000000000b1"
BYSTANDER = "0a0a0a0a-0000-4000-8000-0000000000a3"  # on node-a too, not a victim the scheduler chose


def _victim(uid: str) -> dict[str, Any]:
    """A victim pod as Victims holds it; the wire carries its UID alone in node-cache mode."""
    return pod_object(f"low-{uid[-2:]}", uid, cpus="2", memory="1Gi")


@dataclass(frozen=True)
class Case:
    verb: str  # filter, prioritize, preempt, bind
    name: str
    description: dict[str, Any]  # the scheduler's side (description.go)
    reply: Any  # the reply body's JSON value, keys as the v1 field names
    why: str

    @property
    def stem(self) -> str:
        return f"{self.verb}-{self.name}"


def _filter(name: str, reply: Any, why: str, **description: Any) -> Case:
    return Case("filter", name, {"pod": POD, "nodes": NODES} | description, reply, why)


def _filter_reply(
    names: list[str] | None, failed: Any = None, unresolvable: Any = None, error: str = ""
) -> Any:
    return {
        "Nodes": None,
        "NodeNames": names,
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": error,
    }


TAE = "Resources cannot be allocated with Topology locality"  # the kubelet's TopologyAffinityError text
INSUFFICIENT = "Insufficient exclusive CPUs on NUMA node 1: 2 free, 4 requested"

FILTER_CASES = [
    _filter(
        "some-fit",
        _filter_reply(["node-a"], {"node-b": INSUFFICIENT}, {"node-c": TAE}),
        "one node fits, one may after preemption, one never",
    ),
    _filter(
        "all-fit",
        _filter_reply(list(NODES), {}, {}),
        "every node fits; empty failed maps",
    ),
    _filter(
        "none-fit-null",
        _filter_reply(None, {"node-a": INSUFFICIENT}, {"node-b": TAE, "node-c": TAE}),
        "NodeNames null: no node fits (the same as [])",
    ),
    _filter(
        "none-fit-empty",
        _filter_reply([], {"node-a": INSUFFICIENT}, {"node-b": TAE, "node-c": TAE}),
        "NodeNames []: no node fits",
    ),
    _filter(
        "all-unresolvable",
        _filter_reply([], None, {name: TAE for name in NODES}),
        "every node failed for good: preemption will not try them",
    ),
    _filter(
        "failed-in-both",
        _filter_reply(["node-a"], {"node-b": INSUFFICIENT, "node-c": "x"}, {"node-b": TAE}),
        "a node in both maps: FailedAndUnresolvableNodes wins",
    ),
    _filter(
        "unnamed",
        _filter_reply(["node-a"]),
        "nodes dropped without a reason: the absent-node status, UnschedulableAndUnresolvable",
    ),
    _filter(
        "error",
        _filter_reply(None, error="node-b: no state from its agent for 30 s"),
        "Error set: the pod's attempt fails (or the extender is skipped if ignorable)",
    ),
    _filter(
        "error-with-names",
        _filter_reply(["node-a"], {}, {}, error="mirror lagging"),
        "Error wins over NodeNames",
    ),
    _filter(
        "unknown-node",
        _filter_reply(["node-a", "node-z"]),
        "a name not in the request: Filter fails",
    ),
    _filter(
        "reason-escapes",
        _filter_reply(
            ["node-a"],
            {"node-b": 'cpu "4" <> 2 & mémoire\n\u2028\t\x01'},
            {"node-c": "<script>"},
        ),
        "reasons with the characters Go's encoder escapes (HTML, U+2028, controls) and UTF-8",
    ),
    _filter(
        "one-node",
        _filter_reply(["node-b"], {}, {}),
        "the nominated node alone (evaluateNominatedNode)",
        nodes=["node-b"],
    ),
    _filter(
        "best-effort",
        _filter_reply(list(NODES), None, None),
        "a pod with no exclusive resources passes untouched",
        pod=BEST_EFFORT_POD,
    ),
    _filter(
        "node-list",
        _filter_reply(["node-a"], {}, {}),
        "a scheduler not configured nodeCacheCapable sends Nodes and reads only Nodes: no node fits",
        nodeCacheCapable=False,
    ),
]


def _prioritize(name: str, reply: Any, why: str, **description: Any) -> Case:
    return Case("prioritize", name, {"pod": POD, "nodes": NODES} | description, reply, why)


def _priorities(*scores: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"Host": host, "Score": score} for host, score in scores]


# (name, reply, why, description's changes)
_PRIORITIZE: list[tuple[str, Any, str, dict[str, Any]]] = [
    ("scores", _priorities(("node-a", 10), ("node-b", 3), ("node-c", 0)), "score x weight x 10", {}),
    ("weight-5", _priorities(("node-a", 10), ("node-b", 3)), "weight 5; node-c unscored", {"weight": 5}),
    ("empty", [], "[]: no scores", {}),
    ("null", None, "null: no scores, the same as []", {}),
    ("out-of-range", _priorities(("node-a", 11), ("node-b", -1)), "outside 0..10: unclamped", {}),
    ("unknown-and-twice", _priorities(("node-z", 5), ("node-a", 2), ("node-a", 3)), "dropped; summed", {}),
    # The fewest nodes Prioritize is called with: one feasible node skips it.
    ("two-nodes", _priorities(("node-b", 7), ("node-c", 7)), "two nodes", {"nodes": ["node-b", "node-c"]}),
]
PRIORITIZE_CASES = [_prioritize(name, reply, why, **changes) for name, reply, why, changes in _PRIORITIZE]


PREEMPT_DESCRIPTION: dict[str, Any] = {
    "pod": POD,
    "nodeNameToVictims": {
        "node-a": {"Pods": [_victim(VICTIM_1), _victim(VICTIM_2)], "NumPDBViolations": 1},
        "node-b": {"Pods": [_victim(VICTIM_3)], "NumPDBViolations": 0},
    },
    "nodePods": {"node-a": [BYSTANDER]},
}


def _preempt(name: str, reply: Any, why: str, **description: Any) -> Case:
    return Case("preempt", name, copy.deepcopy(PREEMPT_DESCRIPTION) | description, reply, why)


def _meta(*uids: str | None, pdb: int = 0, pods_null: bool = False) -> dict[str, Any]:
    pods = None if pods_null else [None if uid is None else {"UID": uid} for uid in uids]
    return {"Pods": pods, "NumPDBViolations": pdb}


PREEMPT_CASES = [
    _preempt(
        "accept-all",
        {"NodeNameToMetaVictims": {"node-a": _meta(VICTIM_1, VICTIM_2, pdb=1), "node-b": _meta(VICTIM_3)}},
        "the candidates as the scheduler chose them",
    ),
    _preempt(
        "subset",
        {"NodeNameToMetaVictims": {"node-b": _meta(VICTIM_3)}},
        "node-a dropped: preemption goes on with node-b alone",
    ),
    _preempt(
        "other-victims",
        {"NodeNameToMetaVictims": {"node-a": _meta(BYSTANDER)}},
        "another pod of the node as the victim: accepted when the scheduler's snapshot has it there",
    ),
    _preempt("none-empty", {"NodeNameToMetaVictims": {}}, "{}: no node can be preempted on"),
    _preempt("none-null", {"NodeNameToMetaVictims": None}, "null: the same as {}"),
    _preempt(
        "no-victims",
        {"NodeNameToMetaVictims": {"node-a": _meta()}},
        "a node with Pods []: preemption fails (at least one victim per node)",
    ),
    _preempt(
        "pods-null",
        {"NodeNameToMetaVictims": {"node-a": _meta(pods_null=True)}},
        "a node with Pods null: the same error",
    ),
    _preempt(
        "nil-victims",
        {"NodeNameToMetaVictims": {"node-a": None}},
        "a node mapped to null: convertToVictims dereferences it (kube-scheduler panics)",
    ),
    _preempt(
        "unknown-pod",
        {"NodeNameToMetaVictims": {"node-b": _meta(VICTIM_1)}},
        "a victim not on that node: preemption fails",
    ),
    _preempt(
        "unknown-node",
        {"NodeNameToMetaVictims": {"node-z": _meta(VICTIM_1)}},
        "a node the scheduler does not have: preemption fails",
    ),
    _preempt(
        "node-list",
        {"NodeNameToMetaVictims": {"node-b": _meta(VICTIM_3)}},
        "a scheduler not configured nodeCacheCapable sends whole victim pods (NodeNameToVictims)",
        nodeCacheCapable=False,
    ),
]

BIND_CASES = [
    Case("bind", "bound", {"pod": POD, "node": "node-a"}, {"Error": ""}, "bound"),
    Case(
        "bind",
        "error",
        {"pod": POD, "node": "node-a"},
        {"Error": "node-a refused the pod: TopologyAffinityError"},
        "a Bind error: the scheduler unreserves and requeues the pod (unless ignorable)",
    ),
]

CASES = [*FILTER_CASES, *PRIORITIZE_CASES, *PREEMPT_CASES, *BIND_CASES]
