"""Admission refusals that follow ``kubeletVersion`` (``data/behaviours/errors.json``): the pod-features
admit handler's ``PodLevelResourcesNotSupported``, shown on both sides through ``NodeEmulator`` admission
and once through the real daemon."""

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
    POD_LEVEL_RESOURCES_DISABLED_MESSAGE,
    POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON,
    PodFeaturesAdmitHandler,
    is_pod_level_resources_set,
)
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.versions import SUPPORTED
from kubeletemu.versions.behaviours import behaviours, in_effect
from kubeletemu.versions.gates import effective_gates
from tests.daemon.daemon_process import DaemonProcess
from tests.versions.helpers import pod_manifest, versioned_config

KEY = "admission.pod-level-resources-gate-default"
REASON = "PodLevelResourcesNotSupported"
MESSAGE = "PodLevelResources feature gate is disabled"

PLAIN_POD = pod_manifest("plain", 'cpu: "2", memory: 256Mi')


def node(
    machine: Machine, version: str, gates: dict[str, bool] | None = None, policy: str = "best-effort"
) -> NodeEmulator:
    """On two_nodes (node n holds CPUs 8n .. 8n+7)."""
    return NodeEmulator(parse_config(versioned_config(version, policy, gates=gates)), machine)


# From 1.36 the kubelet refuses PodLevelResources off while InPlacePodLevelResourcesVerticalScaling (beta,
# on) depends on it, so turning the gate off needs both.
GATE_OFF = {
    "1.34": {"PodLevelResources": False},
    "1.35": {"PodLevelResources": False},
    "1.36": {"PodLevelResources": False, "InPlacePodLevelResourcesVerticalScaling": False},
    "master": {"PodLevelResources": False, "InPlacePodLevelResourcesVerticalScaling": False},
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


# ---- the registry row follows the gate's default -----------------------------------------------------


def test_row_registered_with_the_gate_promotion() -> None:
    row = behaviours()[KEY]
    assert [(c.since, c.ref) for c in row.changes] == [("1.34", "kubernetes#132999")]
    assert REASON in row.before and MESSAGE in row.before


@pytest.mark.parametrize("version", SUPPORTED)
def test_row_equals_the_gate_default(version: str) -> None:
    """The handler reads the effective gate; the row documents its default: they must agree."""
    assert in_effect(KEY, version) == effective_gates(version, {})["PodLevelResources"]


def test_handler_texts_and_inputs() -> None:
    assert (POD_LEVEL_RESOURCES_NOT_ADMITTED_REASON, POD_LEVEL_RESOURCES_DISABLED_MESSAGE) == (
        REASON,
        MESSAGE,
    )
    with pytest.raises(ValueError, match="no PodLevelResources entry"):
        PodFeaturesAdmitHandler({})
    off = PodFeaturesAdmitHandler({"PodLevelResources": False})
    # IsPodLevelResourcesSet: requests or limits naming cpu, memory or hugepages-*.
    assert is_pod_level_resources_set(pod_level_pod(field="requests", resources="memory: 1Gi"))
    assert is_pod_level_resources_set(pod_level_pod(resources="hugepages-2Mi: 4Mi"))
    assert not is_pod_level_resources_set(plain_pod())
    assert not off.admit(pod_level_pod(resources="hugepages-1Gi: 1Gi")).admit
    assert off.admit(plain_pod()).admit


# ---- 1.33: refused at its default ----------------------------------------------------------------------


def test_133_refuses_pod_level_resources_after_the_allocator_and_releases(two_nodes: Machine) -> None:
    emulator = node(two_nodes, "1.33")
    free_before = sorted(emulator.topology().shared_pool_cpu_ids)
    report = emulator.admit(pod_level_pod())
    assert (report.admitted, report.reason, report.message, report.decided_by) == (
        False,
        REASON,
        MESSAGE,
        HANDLER_POD_FEATURES,
    )
    # The allocator ran first and gave the container 2 exclusive CPUs; the refusal released them.
    assert report.released and report.released[0].startswith("c: cpus ")
    assert sorted(emulator.topology().shared_pool_cpu_ids) == free_before
    assert emulator.pods() == []
    # A pod without spec.resources is not this handler's business.
    assert emulator.admit(plain_pod()).admitted


def test_133_hugepages_only_at_pod_level_is_refused(two_nodes: Machine) -> None:
    report = node(two_nodes, "1.33").would_admit(pod_level_pod(resources="hugepages-2Mi: 4Mi"))
    assert (report.admitted, report.reason) == (False, REASON)


def test_133_with_the_gate_on_admits(two_nodes: Machine) -> None:
    report = node(two_nodes, "1.33", {"PodLevelResources": True}).admit(pod_level_pod())
    assert report.admitted and report.reason == ""


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "master"])
def test_later_versions_admit_at_their_default(two_nodes: Machine, version: str) -> None:
    assert node(two_nodes, version).admit(pod_level_pod()).admitted


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "master"])
def test_later_versions_refuse_the_same_way_with_the_gate_off(two_nodes: Machine, version: str) -> None:
    report = node(two_nodes, version, GATE_OFF[version]).admit(pod_level_pod())
    assert (report.admitted, report.reason, report.message, report.decided_by) == (
        False,
        REASON,
        MESSAGE,
        HANDLER_POD_FEATURES,
    )


# ---- its place in the chain ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.36", "master"])
def test_gate_off_alone_is_refused_at_start_up_from_136(two_nodes: Machine, version: str) -> None:
    with pytest.raises(ConfigError, match=r"InPlacePodLevelResourcesVerticalScaling is enabled, but depends"):
        node(two_nodes, version, {"PodLevelResources": False})


def test_predicate_refusal_wins_over_pod_features(two_nodes: Machine) -> None:
    """The predicate handler runs first (with the gate off it sums the containers): 100.5 CPUs do not fit
    (a fraction, so the static policy pins none and the allocator admits)."""
    report = node(two_nodes, "1.33").admit(pod_level_pod(resources="memory: 256Mi", cpu="100.5"))
    assert (report.admitted, report.reason, report.decided_by) == (False, "OutOfcpu", HANDLER_PREDICATE)


def test_allocator_refusal_wins_over_pod_features(two_nodes: Machine) -> None:
    """single-numa-node cannot place 10 CPUs on one 8-CPU node: the allocator refuses first."""
    emulator = node(two_nodes, "1.33", policy="single-numa-node")
    report = emulator.admit(pod_level_pod(cpu="10", resources='cpu: "10", memory: 256Mi'))
    assert (report.admitted, report.reason, report.decided_by) == (
        False,
        "TopologyAffinityError",
        HANDLER_RESOURCE_ALLOCATOR,
    )


def test_would_admit_at_133_from_a_master_node(two_nodes: Machine) -> None:
    """An upgrade/downgrade what-if: the 1.33 kubelet (gate default off) refuses what master admits."""
    emulator = node(two_nodes, "master")
    assert emulator.would_admit(pod_level_pod()).admitted
    report = emulator.would_admit(pod_level_pod(), kubelet_version="1.33")
    assert (report.admitted, report.reason, report.decided_by) == (False, REASON, HANDLER_POD_FEATURES)


# ---- through the real daemon ---------------------------------------------------------------------------


def test_daemon_at_133_refuses_with_the_kubelets_reason(tmp_path: Path) -> None:
    tree = write_sample_tree(tmp_path / "sample")
    daemon = DaemonProcess.in_dir(tmp_path, versioned_config("1.33"), tree).start()
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
        plain = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=PLAIN_POD)), timeout=10)
        assert plain.admitted
    finally:
        daemon.stop()
