"""Admission refusals that follow ``kubeletVersion`` (``data/behaviours/errors.json``): the pod-features
admit handler's ``PodLevelResourcesNotSupported``, which a 1.34+ kubelet returns for a pod with
``spec.resources`` while ``PodLevelResources`` is off and a 1.33 kubelet (no such handler: v1.33.13 source)
never returns, admitting the pod with ``spec.resources`` ignored. Both sides through ``NodeEmulator``
admission and once through the real daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostprobe.sample import write_sample_tree
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.config import parse_config
from kubeletemu.config.errors import ConfigError
from kubeletemu.emulator import (
    HANDLER_POD_FEATURES,
    HANDLER_PREDICATE,
    HANDLER_RESOURCE_ALLOCATOR,
    NodeEmulator,
)
from kubeletemu.lifecycle.pod_features import (
    POD_FEATURES_HANDLER,
    POD_LEVEL_RESOURCES_DISABLED_MESSAGE,
    POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON,
    PodFeaturesAdmitHandler,
    is_pod_level_resources_set,
)
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.versions import SUPPORTED, FeatureGateError, validate_feature_gates
from kubeletemu.versions.behaviours import behaviours, in_effect
from kubeletemu.versions.gates import effective_gates
from tests.daemon.daemon_process import DaemonProcess
from tests.versions.helpers import pod_manifest, versioned_config

KEY = POD_FEATURES_HANDLER
REASON = "PodLevelResourcesNotSupported"
MESSAGE = "PodLevelResources feature gate is disabled"

PLAIN_POD = pod_manifest("plain", 'cpu: "2", memory: 256Mi')


def node(
    machine: Machine, version: str, gates: dict[str, bool] | None = None, policy: str = "best-effort"
) -> NodeEmulator:
    """On two_nodes (node n holds CPUs 4n .. 4n+3 and 4n+8 .. 4n+11)."""
    return NodeEmulator(parse_config(versioned_config(version, policy, gates=gates)), machine)


# From 1.36 the kubelet refuses PodLevelResources off while InPlacePodLevelResourcesVerticalScaling (beta,
# on) depends on it, so turning the gate off needs both.
GATE_OFF = {
    "1.33": {"PodLevelResources": False},
    "1.34": {"PodLevelResources": False},
    "1.35": {"PodLevelResources": False},
    "1.36": {"PodLevelResources": False, "InPlacePodLevelResourcesVerticalScaling": False},
}
# 1.37 (k8s.io/kubernetes v1.37.2) adds two more gates on by default that depend on PodLevelResources: a
# kubelet refuses to start with PodLevelResources off unless they are off too.
GATE_OFF["1.37"] = GATE_OFF["master"] = {
    **GATE_OFF["1.36"],
    "PodLevelResourcesFixDefaulting": False,
    "PodLevelResourcesFixKubeletQOSClass": False,
}


def pod_level_manifest(
    name: str = "plr", resources: str = 'cpu: "2", memory: 256Mi', field: str = "limits", cpu: str = "2"
) -> str:
    """Guaranteed in its container (2 CPUs: exclusive under the static policy) and at pod level."""
    return pod_manifest(name, f'cpu: "{cpu}", memory: 256Mi', f"{field}: {{{resources}}}")


def pod_level_pod(
    name: str = "plr", resources: str = 'cpu: "2", memory: 256Mi', field: str = "limits", cpu: str = "2"
) -> Pod:
    (parsed,) = parse_pods(pod_level_manifest(name, resources, field, cpu))
    return parsed


def plain_pod() -> Pod:
    (parsed,) = parse_pods(PLAIN_POD)
    return parsed


# ---- the registry row: the handler arrives in 1.34, with the gate's promotion ----------------------------


def test_row_registered_with_the_handlers_pr() -> None:
    row = behaviours()[KEY]
    assert KEY == "admission.pod-features-handler"
    assert [(c.since, c.ref) for c in row.changes] == [("1.34", "kubernetes#133046")]
    assert REASON in row.changes[0].summary and MESSAGE in row.changes[0].summary
    assert "no pod-features admit handler" in row.before and REASON not in row.before


@pytest.mark.parametrize("version", SUPPORTED)
def test_handler_and_gate_default_both_arrive_in_134(version: str) -> None:
    """kubernetes#133046 (the handler) and #132999 (the gate beta, on) are both 1.34: a 1.33 kubelet at its
    defaults and a later one at theirs admit the same pod, for different reasons."""
    assert in_effect(KEY, version) == (version != "1.33")
    assert effective_gates(version, {})["PodLevelResources"] == (version != "1.33")
    gates = effective_gates(version, GATE_OFF[version])
    assert PodFeaturesAdmitHandler(gates, version).registered == (version != "1.33")


def test_handler_texts_and_inputs() -> None:
    assert (POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON, POD_LEVEL_RESOURCES_DISABLED_MESSAGE) == (
        REASON,
        MESSAGE,
    )
    with pytest.raises(ValueError, match="no PodLevelResources entry"):
        PodFeaturesAdmitHandler({}, "1.34")
    off = PodFeaturesAdmitHandler({"PodLevelResources": False}, "1.34")
    # IsPodLevelResourcesSet: requests or limits naming cpu, memory or hugepages-*.
    assert is_pod_level_resources_set(pod_level_pod(field="requests", resources="memory: 1Gi"))
    assert is_pod_level_resources_set(pod_level_pod(resources="hugepages-2Mi: 4Mi"))
    assert not is_pod_level_resources_set(plain_pod())
    assert not off.admit(pod_level_pod(resources="hugepages-1Gi: 1Gi")).admit
    assert off.admit(plain_pod()).admit
    # The 1.33 kubelet has no handler: the same gates admit.
    assert PodFeaturesAdmitHandler({"PodLevelResources": False}, "1.33").admit(pod_level_pod()).admit


# ---- 1.33: no handler; the gate off ignores spec.resources ----------------------------------------------


def test_133_admits_pod_level_resources_with_the_containers_allocation(two_nodes: Machine) -> None:
    """Guaranteed in its container: the static policy pins 2 CPUs, as for any such pod; the pod-level
    limits change nothing (QoS, fit and managers read the containers with the gate off)."""
    emulator = node(two_nodes, "1.33")
    report = emulator.admit(pod_level_pod())
    assert (report.admitted, report.reason, report.decided_by) == (True, "", "")
    assert len(report.containers[0].cpu_ids) == 2
    assert [p.uid for p, _ in emulator.pods()] == ["uid-plr"]


@pytest.mark.parametrize("gates", [None, {"PodLevelResources": False}])
def test_133_ignores_pod_level_requests_in_the_node_fit(
    two_nodes: Machine, gates: dict[str, bool] | None
) -> None:
    """100 CPUs at pod level, 1 in the container: 1.33 with the gate off (default or explicit) fits the
    container's request and admits; the same kubelet with the gate on counts the 100 and refuses."""
    big = pod_level_pod(field="requests", resources='cpu: "100"', cpu="1")
    assert node(two_nodes, "1.33", gates).would_admit(big).admitted
    on = node(two_nodes, "1.33", {"PodLevelResources": True}).would_admit(big)
    assert (on.admitted, on.reason, on.decided_by) == (False, "OutOfcpu", HANDLER_PREDICATE)


def test_133_hugepages_only_at_pod_level_is_admitted(two_nodes: Machine) -> None:
    report = node(two_nodes, "1.33").would_admit(pod_level_pod(resources="hugepages-2Mi: 4Mi"))
    assert (report.admitted, report.reason) == (True, "")


def test_133_with_the_gate_on_admits(two_nodes: Machine) -> None:
    report = node(two_nodes, "1.33", {"PodLevelResources": True}).admit(pod_level_pod())
    assert report.admitted and report.reason == ""


# ---- 1.34 on: admitted at the default, refused with the gate off ------------------------------------------


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37", "master"])
def test_later_versions_admit_at_their_default(two_nodes: Machine, version: str) -> None:
    assert node(two_nodes, version).admit(pod_level_pod()).admitted


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37", "master"])
def test_later_versions_refuse_with_the_gate_off(two_nodes: Machine, version: str) -> None:
    emulator = node(two_nodes, version, GATE_OFF[version])
    free_before = sorted(emulator.topology().shared_pool_cpu_ids)
    report = emulator.admit(pod_level_pod())
    assert (report.admitted, report.reason, report.message, report.decided_by) == (
        False,
        REASON,
        MESSAGE,
        HANDLER_POD_FEATURES,
    )
    # Whatever the allocator gave, the refusal released it: the node is as before.
    assert sorted(emulator.topology().shared_pool_cpu_ids) == free_before
    assert emulator.pods() == []
    # A pod without spec.resources is not this handler's business.
    assert emulator.admit(plain_pod()).admitted


def test_134_gate_off_refuses_hugepages_only_at_pod_level(two_nodes: Machine) -> None:
    report = node(two_nodes, "1.34", GATE_OFF["1.34"]).would_admit(
        pod_level_pod(resources="hugepages-2Mi: 4Mi")
    )
    assert (report.admitted, report.reason) == (False, REASON)


# ---- its place in the chain ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
def test_gate_off_alone_is_refused_at_start_up_from_136(two_nodes: Machine, version: str) -> None:
    with pytest.raises(ConfigError, match=r"InPlacePodLevelResourcesVerticalScaling is enabled, but depends"):
        node(two_nodes, version, {"PodLevelResources": False})


def test_predicate_refusal_wins_over_pod_features(two_nodes: Machine) -> None:
    """The predicate handler runs first (with the gate off it sums the containers): 100.5 CPUs do not fit
    (a fraction, so the static policy pins none and the allocator admits)."""
    emulator = node(two_nodes, "1.34", GATE_OFF["1.34"])
    report = emulator.admit(pod_level_pod(resources="memory: 256Mi", cpu="100.5"))
    assert (report.admitted, report.reason, report.decided_by) == (False, "OutOfcpu", HANDLER_PREDICATE)


def test_allocator_refusal_wins_over_pod_features(two_nodes: Machine) -> None:
    """Two ``example.com/dev`` devices asked of a node with one: the Device Manager (in the allocator)
    refuses before the pod-features handler is reached."""
    config = versioned_config("1.34", gates=GATE_OFF["1.34"], device_numa=0)
    emulator = NodeEmulator(parse_config(config), two_nodes)
    manifest = pod_manifest("dev", 'cpu: "1", memory: 256Mi, example.com/dev: "2"', 'limits: {cpu: "1"}')
    (pod,) = parse_pods(manifest)
    report = emulator.admit(pod)
    assert (report.admitted, report.decided_by) == (False, HANDLER_RESOURCE_ALLOCATOR)
    assert report.reason == "UnexpectedAdmissionError"
    assert "example.com/dev" in report.message


def test_would_admit_at_133_from_a_master_node(two_nodes: Machine) -> None:
    """A downgrade what-if: master counts the pod-level 100 CPUs and refuses; the 1.33 kubelet (gate off,
    no pod-features handler) fits the container's 1 CPU and admits."""
    emulator = node(two_nodes, "master")
    big = pod_level_pod(field="requests", resources='cpu: "100"', cpu="1")
    now = emulator.would_admit(big)
    assert (now.admitted, now.reason) == (False, "OutOfcpu")
    older = emulator.would_admit(big, kubelet_version="1.33")
    assert (older.admitted, older.reason) == (True, "")
    assert emulator.pods() == []


# ---- through the real daemon ---------------------------------------------------------------------------


def test_daemon_at_134_gate_off_refuses_with_the_kubelets_reason(tmp_path: Path) -> None:
    tree = write_sample_tree(tmp_path / "sample")
    config = versioned_config("1.34", gates=GATE_OFF["1.34"])
    daemon = DaemonProcess.in_dir(tmp_path, config, tree).start()
    try:
        manifest = pod_level_manifest()
        reply = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
        assert (reply.admitted, reply.reason, reply.message, reply.decided_by) == (
            False,
            REASON,
            MESSAGE,
            HANDLER_POD_FEATURES,
        )
        assert daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods == []
        # The same pod asked of the 1.33 kubelet on this node: admitted.
        what_if = daemon.stub().WouldAdmit(
            pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest), kubelet_version="1.33"), timeout=10
        )
        assert (what_if.admitted, what_if.reason) == (True, "")
        plain = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=PLAIN_POD)), timeout=10)
        assert plain.admitted
    finally:
        daemon.stop()


def test_137_refuses_to_start_with_pod_level_resources_off_alone() -> None:
    """v1.37.2's dependencies: PodLevelResourcesFixDefaulting and PodLevelResourcesFixKubeletQOSClass (beta,
    on) need PodLevelResources, so turning only that off is refused at start-up, as component-base does."""
    with pytest.raises(FeatureGateError) as err:
        validate_feature_gates("1.37", GATE_OFF["1.36"])
    assert str(err.value) == (
        "[PodLevelResourcesFixDefaulting is enabled, but depends on features that are disabled: "
        "[PodLevelResources], PodLevelResourcesFixKubeletQOSClass is enabled, but depends on features that "
        "are disabled: [PodLevelResources]]"
    )
    validate_feature_gates("1.36", GATE_OFF["1.36"])
