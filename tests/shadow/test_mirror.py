"""The mirror holds the kubelet's state: same assignments, same podresources answers, same what-if answers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kubeletemu.containermanager import ContainerAllocation
from kubeletemu.emulator import NodeEmulator
from kubeletemu.manifest import parse_pods
from kubeletemu.podresources import nrt, view
from kubeletemu.podresources.fingerprint import METHOD_ALL, METHOD_WITH_EXCLUSIVE_RESOURCES
from kubeletemu.shadow import KubeletPaths, SourceInvalidError, build_mirror, take_snapshot
from kubeletemu.shadow.reconstruct import UID_DERIVED, UID_FROM_CHECKPOINT
from tests.shadow.conftest import DirectSource, machine_of, mirror_of, own_config
from tests.shadow.kubelet_double import FakeKubelet, write_like_kubelet

PROBES = """\
apiVersion: v1
kind: Pod
metadata: {name: probe-small, namespace: t, uid: probe-1}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "2", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: probe-nic, namespace: t, uid: probe-2}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "1", memory: 512Mi, example.com/nic: 2}}
---
apiVersion: v1
kind: Pod
metadata: {name: probe-big, namespace: t, uid: probe-3}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "6", memory: 4Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: probe-huge, namespace: t, uid: probe-4}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "8", memory: 20Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: probe-gpu, namespace: t, uid: probe-5}
spec:
  containers:
  - name: c
    resources: {limits: {example.com/gpu: 1}}
---
apiVersion: v1
kind: Pod
metadata: {name: probe-burstable, namespace: t, uid: probe-6}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: 250m}}
"""


def _held(containers: tuple[ContainerAllocation, ...]) -> list[tuple[object, ...]]:
    return [(c.name, c.cpu_ids if c.exclusive_cpus else (), c.memory, dict(c.devices)) for c in containers]


def test_states_are_the_kubelets(kubelet: FakeKubelet) -> None:
    mirror = mirror_of(kubelet)
    ours, theirs = mirror.emulator.cm, kubelet.emulator.cm
    assert ours.cpus.get_default_cpu_set() == theirs.cpus.get_default_cpu_set()
    assert ours.cpus.get_assignments() == theirs.cpus.get_assignments()
    assert ours.memory.state.get_machine_state() == theirs.memory.state.get_machine_state()
    assert ours.memory.state.get_memory_assignments() == theirs.memory.state.get_memory_assignments()
    assert ours.devices.allocated_devices == theirs.devices.allocated_devices
    assert ours.devices.get_allocatable_devices() == theirs.devices.get_allocatable_devices()
    assert mirror.warnings == []


def test_every_listed_pod_is_mirrored_with_its_checkpoint_uid(kubelet: FakeKubelet) -> None:
    mirror = mirror_of(kubelet)
    by_name = {p.key: p for p in mirror.reconstruction.pods}
    assert list(by_name) == [f"{p.namespace}/{p.name}" for p in kubelet.listing.pod_resources]
    for entry in kubelet.emulator.registry:
        mirrored = by_name[f"{entry.pod.namespace}/{entry.pod.name}"]
        if mirrored.uid_source == UID_FROM_CHECKPOINT:
            assert mirrored.pod.uid == entry.pod.uid
    sources = {key: p.uid_source for key, p in by_name.items()}
    assert sources == {
        "prod/gu-a": UID_FROM_CHECKPOINT,
        "prod/gu-b": UID_FROM_CHECKPOINT,
        "default/be": UID_DERIVED,
        "default/bu": UID_DERIVED,
        "batch/gu-c": UID_FROM_CHECKPOINT,
        "ml/gpu": UID_FROM_CHECKPOINT,
    }
    assert mirror.reconstruction.stale_uids == ()


def test_podresources_fingerprint_and_nrt_describe_the_real_node(kubelet: FakeKubelet) -> None:
    mirror = mirror_of(kubelet)
    assert view.list_pods(mirror.emulator).response == kubelet.listing
    assert view.allocatable_resources(mirror.emulator) == kubelet.allocatable
    for method in (METHOD_ALL, METHOD_WITH_EXCLUSIVE_RESOURCES):
        assert view.node_fingerprint(mirror.emulator, method) == view.node_fingerprint(
            kubelet.emulator, method
        )
    assert nrt.node_resource_topology(mirror.emulator) == nrt.node_resource_topology(kubelet.emulator)


def test_would_admit_answers_as_the_kubelet_would(kubelet: FakeKubelet) -> None:
    mirror = mirror_of(kubelet)
    answers = []
    for pod in parse_pods(PROBES, "probes"):
        ours = mirror.emulator.would_admit(pod)
        theirs = kubelet.emulator.would_admit(pod)
        assert (ours.admitted, ours.reason, ours.message) == (theirs.admitted, theirs.reason, theirs.message)
        assert _held(ours.containers) == _held(theirs.containers)
        answers.append(ours.admitted)
    # The probes cover both answers: the node is not trivially empty or full.
    assert True in answers and False in answers


def test_unlisted_checkpoint_entries_are_dropped_as_the_kubelet_does(kubelet: FakeKubelet) -> None:
    gone = "11111111-0000-0000-0000-00000000000b"
    # The kubelet stopped listing gu-b but has not swept its checkpoint entries yet.
    kubelet.listing = type(kubelet.listing)(
        pod_resources=[p for p in kubelet.listing.pod_resources if p.name != "gu-b"]
    )
    mirror = mirror_of(kubelet)
    assert mirror.reconstruction.stale_uids == (gone,)
    assert gone not in mirror.emulator.cm.cpus.get_assignments()
    assert gone not in mirror.emulator.cm.memory.state.get_memory_assignments()
    kubelet.emulator.remove(gone)
    assert mirror.emulator.cm.cpus.get_default_cpu_set() == kubelet.emulator.cm.cpus.get_default_cpu_set()


def test_an_empty_node(empty_kubelet: FakeKubelet) -> None:
    mirror = mirror_of(empty_kubelet)
    assert mirror.reconstruction.pods == ()
    assert len(mirror.emulator.registry) == 0


def test_the_checkpoints_must_fit_the_configuration(kubelet: FakeKubelet) -> None:
    # A kubelet that reserves CPU 1 too cannot have written this defaultCpuSet.
    config = kubelet.root / "config.yaml"
    write_like_kubelet(
        config, config.read_bytes().replace(b'reservedSystemCPUs: "0"', b'reservedSystemCPUs: "0,1"')
    )
    with pytest.raises(SourceInvalidError, match=r"do not fit this node as kubeletemu sees it: .*reserved"):
        mirror_of(kubelet)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (b"cpuManagerPolicy: static", b"cpuManagerPolicy: none", "written by CPU manager policy 'static'"),
        (
            b"memoryManagerPolicy: Static",
            b"memoryManagerPolicy: None",
            "written by memory manager policy 'Static'",
        ),
    ],
)
def test_policy_mismatch_names_the_files(kubelet: FakeKubelet, old: bytes, new: bytes, message: str) -> None:
    config = kubelet.root / "config.yaml"
    write_like_kubelet(config, config.read_bytes().replace(old, new))
    with pytest.raises(SourceInvalidError) as err:
        mirror_of(kubelet)
    assert message in str(err.value)
    assert str(config) in str(err.value)


def test_allocatable_differences_are_warned(kubelet: FakeKubelet) -> None:
    snapshot = take_snapshot(KubeletPaths.resolve(kubelet.root), DirectSource(kubelet))
    allocatable = type(snapshot.allocatable)()
    allocatable.CopyFrom(snapshot.allocatable)
    allocatable.cpu_ids.remove(15)
    mirror = build_mirror(own_config(), machine_of(kubelet), replace(snapshot, allocatable=allocatable))
    assert any(w.startswith("allocatable CPUs differ") for w in mirror.warnings)


def test_mirror_is_independent_of_the_reference(tmp_path: Path, kubelet: FakeKubelet) -> None:
    """Admitting into the mirror (what-if) leaves it as it was: it is an in-memory emulator."""
    mirror = mirror_of(kubelet)
    assert isinstance(mirror.emulator, NodeEmulator)
    assert mirror.emulator.state_dir is None
    before = mirror.emulator.cm.cpus.get_default_cpu_set()
    for pod in parse_pods(PROBES, "probes"):
        mirror.emulator.would_admit(pod)
    assert mirror.emulator.cm.cpus.get_default_cpu_set() == before
