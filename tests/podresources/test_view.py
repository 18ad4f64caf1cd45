"""The kubelet's podresources semantics, computed from an emulated node (no gRPC here).

Host: 2 NUMA nodes, CPUs 0-3,8-11 on node 0 and 4-7,12-15 on node 1 (8 and 0 are siblings), CPU 0
reserved; static CPU and memory managers; devices with one, two and no NUMA nodes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources import view
from kubeletemu.podresources.fingerprint import (
    METHOD_ALL,
    METHOD_EXCLUDE_TERMINAL,
    METHOD_WITH_EXCLUSIVE_RESOURCES,
    UnsupportedMethodError,
    compute,
    has_exclusive_resources,
)
from tests.podresources.nodes import (
    GENERAL_HOST,
    admit_all,
    container,
    general_config,
    make_emulator,
    pod_manifest,
)

GU = pod_manifest(
    "gu",
    "ns1",
    init_containers=container("side", 'cpu: "1", memory: 100Mi', restart_policy="Always")
    + container("init", 'cpu: "1", memory: 100Mi'),
    containers=container(
        "app",
        'cpu: "2", memory: 1Gi, example.com/nic: "1", example.com/gpu: "1", example.com/fpga: "1"',
    ),
)
FRACTIONAL = pod_manifest("frac", "ns1", containers=container("app", "cpu: 500m, memory: 256Mi"))
BURSTABLE = pod_manifest("bu", "ns2", containers=container("a", requests="cpu: 100m") + container("b"))
SUCCEEDED = pod_manifest(
    "done", "ns2", containers=container("a", 'cpu: "1", memory: 100Mi'), phase="Succeeded"
)
ALL_PODS = GU + FRACTIONAL + BURSTABLE + SUCCEEDED

Devices = Counter[tuple[str, str, tuple[int, ...] | None]]


def devices(entries: list[v1.ContainerDevices]) -> Devices:
    """Entries as a multiset (the kubelet emits them in Go map order); None = no topology field."""
    out: Devices = Counter()
    for d in entries:
        assert len(d.device_ids) == 1  # always one id per entry
        topology = tuple(n.ID for n in d.topology.nodes) if d.HasField("topology") else None
        out[(d.resource_name, d.device_ids[0], topology)] += 1
    return out


def memory(entries: list[v1.ContainerMemory]) -> list[tuple[str, int, tuple[int, ...]]]:
    assert all(m.HasField("topology") for m in entries)  # always set, even with no nodes
    return [(m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in entries]


@pytest.fixture
def node(tmp_path: Path) -> NodeEmulator:
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    admit_all(emulator, ALL_PODS)
    return emulator


def by_name(response: v1.ListPodResourcesResponse) -> dict[str, v1.PodResources]:
    return {f"{p.namespace}/{p.name}": p for p in response.pod_resources}


def test_list_reports_active_pods_sidecars_and_exclusive_cpus_only(node: NodeEmulator) -> None:
    listed = by_name(view.list_pods(node).response)
    # The Succeeded pod is not active; the order is the pod manager's (ours: admission order).
    assert list(listed) == ["ns1/gu", "ns1/frac", "ns2/bu"]
    gu = listed["ns1/gu"]
    # The sidecar first, then the app container; the ordinary init container never.
    assert [c.name for c in gu.containers] == ["side", "app"]
    side, app = gu.containers
    assert list(side.cpu_ids) == [8]
    assert sorted(app.cpu_ids) == [1, 9]
    assert memory(list(side.memory)) == [("memory", 100 << 20, (0,))]
    assert memory(list(app.memory)) == [("memory", 1 << 30, (0,))]
    # One entry per (device, NUMA node): the two-node GPU twice, the FPGA once without topology.
    assert devices(list(app.devices)) == Counter(
        {
            ("example.com/nic", "nic0", (0,)): 1,
            ("example.com/gpu", "gpu-both", (0,)): 1,
            ("example.com/gpu", "gpu-both", (1,)): 1,
            ("example.com/fpga", "fpga0", None): 1,
        }
    )
    assert not side.devices and not gu.cpu_ids and not gu.memory
    # Guaranteed with a fractional CPU runs in the shared pool: no cpu_ids, but its memory block.
    [frac] = listed["ns1/frac"].containers
    assert list(frac.cpu_ids) == []
    assert memory(list(frac.memory)) == [("memory", 256 << 20, (0,))]
    # Burstable: the containers are listed by name with nothing else.
    bu = listed["ns2/bu"]
    assert [c.name for c in bu.containers] == ["a", "b"]
    assert all(c.ByteSize() == len(c.name) + 2 for c in bu.containers)


def test_list_uses_all_pods_when_the_active_pods_gate_is_off(tmp_path: Path) -> None:
    emulator = make_emulator(
        tmp_path, GENERAL_HOST, general_config(feature_gates={view.GATE_LIST_USE_ACTIVE_PODS: False})
    )
    admit_all(emulator, ALL_PODS)
    listed = by_name(view.list_pods(emulator).response)
    assert list(listed) == ["ns1/gu", "ns1/frac", "ns2/bu", "ns2/done"]
    assert list(listed["ns2/done"].containers[0].cpu_ids) == [2]


def test_no_pods_is_an_empty_response(tmp_path: Path) -> None:
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    response = view.list_pods(emulator).response
    assert response.ByteSize() == 0 and not response.pod_resources


def test_get_finds_any_known_pod_by_namespace_and_name(node: NodeEmulator) -> None:
    gu = view.get_pod_resources(node, "ns1", "gu").pod_resources
    assert gu == by_name(view.list_pods(node).response)["ns1/gu"]
    # Get is not filtered by the active-pods gate.
    done = view.get_pod_resources(node, "ns2", "done").pod_resources
    assert (done.namespace, done.name, [c.name for c in done.containers]) == ("ns2", "done", ["a"])


@pytest.mark.parametrize(
    ("namespace", "name", "message"),
    [
        ("ns1", "nope", "pod nope in namespace ns1 not found"),
        ("ns2", "gu", "pod gu in namespace ns2 not found"),
        ("", "", "pod  in namespace  not found"),
    ],
    ids=["missing", "other_namespace", "empty"],
)
def test_get_not_found_text(node: NodeEmulator, namespace: str, name: str, message: str) -> None:
    with pytest.raises(view.PodResourcesNotFoundError) as err:
        view.get_pod_resources(node, namespace, name)
    assert str(err.value) == message


def test_get_disabled_by_its_gate(tmp_path: Path) -> None:
    # KubeletPodResourcesGet is GA and locked on from 1.36 (master refuses turning it off): a 1.35 kubelet.
    config = general_config(feature_gates={view.GATE_GET: False}, kubelet_version="1.35")
    emulator = make_emulator(tmp_path, GENERAL_HOST, config)
    with pytest.raises(view.GetDisabledError, match=r"^PodResources API Get method disabled$"):
        view.get_pod_resources(emulator, "ns1", "gu")


def test_get_disabled_by_default_on_a_1_33_kubelet(tmp_path: Path) -> None:
    # KubeletPodResourcesGet: alpha (off) in 1.33, beta (on) from 1.34 (#132940).
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config(kubelet_version="1.33"))
    with pytest.raises(view.GetDisabledError):
        view.get_pod_resources(emulator, "ns1", "gu")
    on = make_emulator(tmp_path / "1.34", GENERAL_HOST, general_config(kubelet_version="1.34"))
    with pytest.raises(view.PodResourcesNotFoundError):
        view.get_pod_resources(on, "ns1", "missing")


def test_allocatable_is_all_minus_reserved_memory_per_node_and_healthy_devices(node: NodeEmulator) -> None:
    allocatable = view.allocatable_resources(node)
    # All CPUs but the reserved one, however many are assigned.
    assert sorted(allocatable.cpu_ids) == list(range(1, 16))
    # Per node and type: MemTotal - hugepages - reserved on node 0, MemTotal - hugepages on node 1.
    assert sorted(memory(list(allocatable.memory))) == [
        ("hugepages-2Mi", 1 << 30, (0,)),
        ("hugepages-2Mi", 1 << 30, (1,)),
        ("memory", (16 - 1 - 1) << 30, (0,)),
        ("memory", (16 - 1) << 30, (1,)),
    ]
    assert devices(list(allocatable.devices)) == Counter(
        {
            ("example.com/nic", "nic0", (0,)): 1,
            ("example.com/nic", "nic1", (1,)): 1,
            ("example.com/gpu", "gpu-both", (0,)): 1,
            ("example.com/gpu", "gpu-both", (1,)): 1,
            ("example.com/fpga", "fpga0", None): 1,
        }
    )
    node.cm.devices.set_device_health("example.com/nic", "nic1", False)
    assert ("example.com/nic", "nic1", (1,)) not in devices(list(view.allocatable_resources(node).devices))


def test_none_policies_report_no_cpus_and_no_memory(tmp_path: Path) -> None:
    emulator = make_emulator(
        tmp_path, GENERAL_HOST, general_config(cpu_policy="none", memory_policy="None", policy="none")
    )
    admit_all(emulator, GU)
    allocatable = view.allocatable_resources(emulator)
    assert list(allocatable.cpu_ids) == [] and list(allocatable.memory) == []
    assert len(allocatable.devices) == 5
    side, app = view.list_pods(emulator).pods[0].resources.containers
    assert [list(side.cpu_ids), list(app.cpu_ids), list(app.memory)] == [[], [], []]
    assert len(app.devices) == 4


def test_v1alpha1_lists_all_pods_app_containers_and_device_ids(node: NodeEmulator) -> None:
    response = view.list_v1alpha1(node)
    pods = {f"{p.namespace}/{p.name}": p for p in response.pod_resources}
    assert list(pods) == ["ns1/gu", "ns1/frac", "ns2/bu", "ns2/done"]
    [app] = pods["ns1/gu"].containers  # no sidecar in v1alpha1
    assert app.name == "app"
    assert Counter((d.resource_name, tuple(d.device_ids)) for d in app.devices) == Counter(
        {
            ("example.com/nic", ("nic0",)): 1,
            ("example.com/gpu", ("gpu-both",)): 2,  # once per NUMA node, as the v1 entries
            ("example.com/fpga", ("fpga0",)): 1,
        }
    )


def test_released_pod_disappears(node: NodeEmulator) -> None:
    node.remove("uid-gu")
    listed = by_name(view.list_pods(node).response)
    assert list(listed) == ["ns1/frac", "ns2/bu"]
    with pytest.raises(view.PodResourcesNotFoundError):
        view.get_pod_resources(node, "ns1", "gu")


@pytest.mark.parametrize(
    ("method", "pods"),
    [
        (METHOD_WITH_EXCLUSIVE_RESOURCES, [("ns1", "gu"), ("ns1", "frac")]),
        (METHOD_ALL, [("ns1", "gu"), ("ns1", "frac"), ("ns2", "bu")]),
        # List holds active pods only, so excluding terminal pods changes nothing.
        (METHOD_EXCLUDE_TERMINAL, [("ns1", "gu"), ("ns1", "frac"), ("ns2", "bu")]),
    ],
)
def test_node_fingerprint_per_method(node: NodeEmulator, method: str, pods: list[tuple[str, str]]) -> None:
    sign, status = view.node_fingerprint(node, method)
    assert sign == compute(pods)
    assert [(p.namespace, p.name) for p in status.pods] == pods
    assert status.node_name == "node-a" and status.fingerprint_computed == sign


def test_exclude_terminal_matters_when_list_shows_all_pods(tmp_path: Path) -> None:
    emulator = make_emulator(
        tmp_path, GENERAL_HOST, general_config(feature_gates={view.GATE_LIST_USE_ACTIVE_PODS: False})
    )
    admit_all(emulator, BURSTABLE + SUCCEEDED)
    assert view.node_fingerprint(emulator, METHOD_ALL)[0] == compute([("ns2", "bu"), ("ns2", "done")])
    assert view.node_fingerprint(emulator, METHOD_EXCLUDE_TERMINAL)[0] == compute([("ns2", "bu")])
    assert view.node_fingerprint(emulator, METHOD_WITH_EXCLUSIVE_RESOURCES)[0] == compute([("ns2", "done")])


def test_listed_exclusivity_is_rtes_numalocality(node: NodeEmulator) -> None:
    """The exclusivity recorded while listing equals RTE's ``numalocality.Verify`` of the entry itself."""
    listed = view.list_pods(node).pods
    assert [p.info.exclusive for p in listed] == [True, True, False]
    assert all(p.info.exclusive is has_exclusive_resources(p.resources) for p in listed)
    assert [(p.info.namespace, p.info.name, p.info.phase) for p in listed] == [
        (p.pod.namespace, p.pod.name, p.pod.phase) for p in listed
    ]


def test_node_fingerprint_rejects_unknown_methods(node: NodeEmulator) -> None:
    with pytest.raises(UnsupportedMethodError, match='unsupported method  "newest"'):
        view.node_fingerprint(node, "newest")


def test_node_name_defaults_to_the_host_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = general_config().replace("nodeName: node-a\n", "")
    emulator = make_emulator(tmp_path, GENERAL_HOST, text)
    monkeypatch.setattr(view.socket, "gethostname", lambda: " Worker-7.Example.COM\n")
    assert view.node_name(emulator.config) == "worker-7.example.com"
