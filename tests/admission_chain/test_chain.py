"""The kubelet's admission chain: the resource allocator, then the predicate handler's node fit.

Node: the bundled sample topology (2 NUMA nodes x 8 CPUs, 32Gi; 1024 x 2Mi and 4 x 1Gi hugepages;
4 SR-IOV VFs, 2 per node), kubeReserved cpu 1 / memory 512Mi, default evictionHard (memory.available
100Mi, nodefs.available 10%). Allocatable, as the kubelet computes it:
  cpu     16 - 1                                   = 15 (15000m)
  memory  32Gi - 2Gi (2Mi pages) - 4Gi (1Gi pages) - 512Mi - 100Mi = 27275558912
  hugepages-1Gi 4Gi = 4294967296; intel.com/sriov_vf 4; pods = maxPods.
"""

from __future__ import annotations

from typing import Any

import pytest

import hostprobe
from hostprobe.sample import write_sample_tree
from kubeletemu.config import parse_config
from kubeletemu.emulator import (
    HANDLER_PREDICATE,
    HANDLER_RESOURCE_ALLOCATOR,
    REPAIR_DROPPED,
    REPAIR_RELEASED,
    NodeEmulator,
)
from kubeletemu.machine import Machine
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from tests.conftest import CaptureStore

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

GI = 1024**3
MEMORY_ALLOCATABLE = 32 * GI - 2 * GI - 4 * GI - 512 * 1024**2 - 100 * 1024**2
VF = "intel.com/sriov_vf"
NOT_ENOUGH = "Node didn't have enough resource: {}, requested: {}, used: {}, capacity: {}"

CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: {policy}
cpuManagerPolicy: static
memoryManagerPolicy: Static
kubeReserved: {{cpu: "1", memory: 512Mi}}
reservedMemory:
- numaNode: 0
  limits: {{memory: 612Mi}}
maxPods: {max_pods}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
devices:
- resourceName: intel.com/sriov_vf
  pciSelector: {{vendors: ["8086"], devices: ["154c"]}}
"""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    sys_root, proc_root = write_sample_tree(tmp_path_factory.mktemp("sample"))
    return Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))


def node(machine: Machine, policy: str = "single-numa-node", max_pods: int = 110) -> NodeEmulator:
    return NodeEmulator(parse_config(CONFIG.format(policy=policy, max_pods=max_pods)), machine)


def q(values: dict[str, Any]) -> dict[str, Quantity]:
    return {k: Quantity.parse(v) for k, v in values.items()}


def ctr(
    name: str,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    sidecar: bool = False,
) -> Container:
    return Container(name, q(requests or limits or {}), q(limits or {}), "Always" if sidecar else None)


def guaranteed(name: str, **res: Any) -> Container:
    values = {k.replace("_", "-").replace("sriov-vf", "sriov_vf"): v for k, v in res.items()}
    return ctr(name, values, values)


def pod(
    uid: str,
    *containers: Container,
    init: tuple[Container, ...] = (),
    overhead: dict[str, Any] | None = None,
) -> Pod:
    return Pod(
        name=uid,
        namespace="default",
        uid=uid,
        containers=containers,
        init_containers=init,
        overhead=q(overhead or {}),
    )


def vf(n: int) -> dict[str, str]:
    return {"cpu": "1", "memory": "1Gi", VF: str(n)}


# (pod, policy, expected (admitted, reason, message, decided_by))
TABLE = [
    pytest.param(pod("besteffort", ctr("a")), "single-numa-node", (True, "", "", ""), id="besteffort"),
    # Burstable: no exclusive CPUs, so the allocator has no say; the fit sees 20000m > 15000m.
    pytest.param(
        pod("burst-cpu", ctr("a", {"cpu": "20"})),
        "single-numa-node",
        (False, "OutOfcpu", NOT_ENOUGH.format("cpu", 20000, 0, 15000), HANDLER_PREDICATE),
        id="burstable-cpu",
    ),
    # Guaranteed 20 CPUs: no NUMA node (nor both, 15 allocatable) can hold them -> the CPU manager's hint
    # list is empty, single-numa-node refuses. The fit would refuse too; the allocator runs first.
    pytest.param(
        pod("guar-cpu", guaranteed("a", cpu="20", memory="1Gi")),
        "single-numa-node",
        (
            False,
            "TopologyAffinityError",
            "Resources cannot be allocated with Topology locality",
            HANDLER_RESOURCE_ALLOCATOR,
        ),
        id="both-fail-allocator-wins",
    ),
    # Init container: effective memory = max(init 30Gi, app 1Gi) = 30Gi = 32212254720.
    pytest.param(
        pod("init-mem", ctr("app", {"memory": "1Gi"}), init=(ctr("init", {"memory": "30Gi"}),)),
        "single-numa-node",
        (
            False,
            "OutOfmemory",
            NOT_ENOUGH.format("memory", 30 * GI, 0, MEMORY_ALLOCATABLE),
            HANDLER_PREDICATE,
        ),
        id="init-container-max",
    ),
    # Sidecar 10 + regular init 1 = 11 during init; after it, app 6 + sidecar 10 = 16 -> 16000m.
    pytest.param(
        pod(
            "sidecar",
            ctr("app", {"cpu": "6"}),
            init=(ctr("side", {"cpu": "10"}, sidecar=True), ctr("init", {"cpu": "1"})),
        ),
        "single-numa-node",
        (False, "OutOfcpu", NOT_ENOUGH.format("cpu", 16000, 0, 15000), HANDLER_PREDICATE),
        id="sidecar-sum",
    ),
    # RuntimeClass overhead adds to the request: 14500m + 1000m = 15500m.
    pytest.param(
        pod("overhead", ctr("app", {"cpu": "14500m"}), overhead={"cpu": "1"}),
        "single-numa-node",
        (False, "OutOfcpu", NOT_ENOUGH.format("cpu", 15500, 0, 15000), HANDLER_PREDICATE),
        id="pod-overhead",
    ),
    # An extended resource the node does not advertise is dropped before the fit (cluster-level resource).
    pytest.param(
        pod("foreign", ctr("app", {"cpu": "1", "example.com/foo": "3"}, {"example.com/foo": "3"})),
        "single-numa-node",
        (True, "", "", ""),
        id="unadvertised-extended",
    ),
    # Burstable hugepages beyond the 4Gi of 1Gi pages: the memory manager ignores non-Guaranteed pods.
    pytest.param(
        pod("hp", ctr("app", {"cpu": "1", "hugepages-1Gi": "5Gi"}, {"hugepages-1Gi": "5Gi"})),
        "single-numa-node",
        (
            False,
            "OutOfhugepages-1Gi",
            NOT_ENOUGH.format("hugepages-1Gi", 5 * GI, 0, 4 * GI),
            HANDLER_PREDICATE,
        ),
        id="hugepages",
    ),
    # 5 VFs of 4 under best-effort: the merge admits, the device manager's Allocate fails: unexpected.
    pytest.param(
        pod("vf5", guaranteed("a", **vf(5))),
        "best-effort",
        (
            False,
            "UnexpectedAdmissionError",
            f"Allocate failed due to requested number of devices unavailable for {VF}. Requested: 5, "
            "Available: 4, which is unexpected",
            HANDLER_RESOURCE_ALLOCATOR,
        ),
        id="device-allocate-fails",
    ),
    # The same under single-numa-node: 5 VFs fit on no single node (2 each): empty hint list.
    pytest.param(
        pod("vf5s", guaranteed("a", **vf(5))),
        "single-numa-node",
        (
            False,
            "TopologyAffinityError",
            "Resources cannot be allocated with Topology locality",
            HANDLER_RESOURCE_ALLOCATOR,
        ),
        id="device-topology",
    ),
]


@pytest.mark.parametrize(("the_pod", "policy", "expected"), TABLE)
def test_chain_table(
    machine: Machine, the_pod: Pod, policy: str, expected: tuple[bool, str, str, str]
) -> None:
    emulator = node(machine, policy)
    for ask in (emulator.would_admit, emulator.admit):
        report = ask(the_pod)
        assert (report.admitted, report.reason, report.message, report.decided_by) == expected
    assert ([p.uid for p, _ in emulator.pods()] == [the_pod.uid]) is expected[0]


def test_sequence_to_max_pods(machine: Machine) -> None:
    emulator = node(machine, max_pods=3)
    for i in range(3):
        assert emulator.admit(pod(f"p{i}", ctr("a"))).admitted
    report = emulator.admit(pod("p3", ctr("a")))
    assert (report.reason, report.message) == ("OutOfpods", NOT_ENOUGH.format("pods", 1, 3, 3))


def test_sequence_to_allocatable_memory(machine: Machine) -> None:
    emulator = node(machine)
    for i in range(2):  # 2 x 10Gi = 21474836480 <= 27275558912
        assert emulator.admit(pod(f"m{i}", ctr("a", {"memory": "10Gi"}))).admitted
    report = emulator.admit(pod("m2", ctr("a", {"memory": "10Gi"})))
    assert (report.reason, report.message) == (
        "OutOfmemory",
        NOT_ENOUGH.format("memory", 10 * GI, 20 * GI, MEMORY_ALLOCATABLE),
    )


def test_sequence_to_allocatable_cpus_burstable(machine: Machine) -> None:
    emulator = node(machine)
    for i in range(3):
        assert emulator.admit(pod(f"c{i}", ctr("a", {"cpu": "4"}))).admitted
    report = emulator.admit(pod("c3", ctr("a", {"cpu": "4"})))
    assert (report.reason, report.message) == ("OutOfcpu", NOT_ENOUGH.format("cpu", 4000, 12000, 15000))


def test_sequence_to_exclusive_cpus_reports_the_allocator(machine: Machine) -> None:
    """Guaranteed 4-CPU pods under best-effort: 15 allocatable CPUs, 3 pods take 12; the 4th gets through
    the merge (the CPU hint list is empty, best-effort admits {all nodes, not preferred}). The static
    policy's allocateCPUs first takes the aligned CPUs (all 3 left), then asks the rest of the node for
    the 1 still missing: that second take is the one that fails, hence requested=1, available=0."""
    emulator = node(machine, "best-effort")
    for i in range(3):
        assert emulator.admit(pod(f"g{i}", guaranteed("a", cpu="4", memory="1Gi"))).admitted
    report = emulator.admit(pod("g3", guaranteed("a", cpu="4", memory="1Gi")))
    assert report.reason == "UnexpectedAdmissionError"
    assert report.message == (
        "Allocate failed due to not enough cpus available to satisfy request: requested=1, available=0, "
        "which is unexpected"
    )
    assert report.decided_by == HANDLER_RESOURCE_ALLOCATOR


def test_rejected_pod_holds_nothing_afterwards_fit(machine: Machine) -> None:
    """A Burstable pod (QoS is pod-wide: no exclusive CPUs, no memory manager) whose first container gets
    a VF from the device manager; the fit refuses the pod (cpu 20). The VF is released."""
    emulator = node(machine)
    before = emulator.topology()
    the_pod = pod("two", guaranteed("first", **vf(1)), ctr("second", {"cpu": "20"}))
    report = emulator.admit(the_pod)
    assert (report.reason, report.decided_by) == ("OutOfcpu", HANDLER_PREDICATE)
    assert len(report.released) == 1 and report.released[0].startswith(f"first: {VF} 0000:")
    assert all(not c.exclusive_cpus and not c.memory and not c.devices for c in report.containers)
    assert emulator.pods() == []
    assert emulator.topology() == before
    assert emulator.cm.devices.allocated_devices.get(VF, set()) == set()


def test_rejected_pod_holds_nothing_afterwards_allocator(machine: Machine) -> None:
    """A Guaranteed pod: container "first" gets 2 CPUs, 1Gi and a VF on node 0; container "second" asks 9
    CPUs, more than any node has (8, one reserved on node 0): single-numa-node refuses it. The Topology
    Manager does not roll back; the emulator releases "first" at once, as the kubelet's stale-state
    removal eventually would."""
    emulator = node(machine)
    before = emulator.topology()
    the_pod = pod(
        "two",
        guaranteed("first", cpu="2", memory="1Gi", **{VF: "1"}),
        guaranteed("second", cpu="9", memory="1Gi"),
    )
    report = emulator.admit(the_pod)
    assert (report.reason, report.decided_by) == ("TopologyAffinityError", HANDLER_RESOURCE_ALLOCATOR)
    assert len(report.released) == 1
    assert report.released[0].startswith(
        "first: cpus 1,9; memory 1073741824 on NUMA [0]; intel.com/sriov_vf 0000:"
    )
    assert emulator.pods() == []
    assert emulator.topology() == before
    # The CPUs are really back: the same pod minus its impossible container lands on the same CPUs.
    again = emulator.admit(pod("one", guaranteed("first", cpu="2", memory="1Gi", **{VF: "1"})))
    assert again.containers[0].cpu_ids == (1, 9)


def test_what_if_reports_the_deciding_handler_without_changing_state(machine: Machine) -> None:
    emulator = node(machine)
    emulator.admit(pod("x", guaranteed("a", cpu="2", memory="1Gi")))
    before = (emulator.topology(), [p.uid for p, _ in emulator.pods()])
    report = emulator.would_admit(pod("y", ctr("a", {"cpu": "20"})))
    assert report.decided_by == HANDLER_PREDICATE and report.reason == "OutOfcpu"
    assert (emulator.topology(), [p.uid for p, _ in emulator.pods()]) == before


def test_capture_topology_node_fit(captures: CaptureStore) -> None:
    """On the OpenShift capture (2 sockets x 20 cores x 2 threads = 80 CPUs), kubeReserved cpu 2:
    allocatable 78000m; a Burstable pod asking 79 CPUs is refused by the fit."""
    capture = captures.get("ocp-worker-2s20c2t-cascadelake")
    machine = Machine.from_host(hostprobe.probe(str(capture.sys), str(capture.proc)))
    config = parse_config(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "topologyManagerPolicy: restricted\ncpuManagerPolicy: static\nkubeReserved: {cpu: '2'}\n"
    )
    emulator = NodeEmulator(config, machine)
    assert emulator.allocatable.allocatable["cpu"].amount == 78
    report = emulator.admit(pod("wide", ctr("a", {"cpu": "79"})))
    assert (report.reason, report.message) == ("OutOfcpu", NOT_ENOUGH.format("cpu", 79000, 0, 78000))
    # 40 CPUs fit NUMA node 1 exactly (node 0 lost 2 to the reservation): preferred, admitted there.
    report = emulator.admit(pod("g40", guaranteed("a", cpu="40", memory="1Gi")))
    assert report.admitted and set(report.containers[0].cpu_ids) <= set(machine.cpus_of([1]))
    # 39 more: 38 CPUs are left in all: the CPU manager has no hint, restricted refuses.
    report = emulator.admit(pod("g39", guaranteed("a", cpu="39", memory="1Gi")))
    assert (report.reason, report.decided_by) == ("TopologyAffinityError", HANDLER_RESOURCE_ALLOCATOR)


def test_cpu_pinning_counts_follow_the_static_policy(machine: Machine) -> None:
    """cpu_manager_pinning_requests/errors_total count the static policy's Allocate calls that need
    exclusive CPUs: 3 successes and the 4th pod's failure (see the sequence above); Burstable pods
    never pin."""
    emulator = node(machine, "best-effort")
    emulator.admit(pod("b", ctr("a", {"cpu": "1"})))
    for i in range(4):
        emulator.admit(pod(f"g{i}", guaranteed("a", cpu="4", memory="1Gi")))
    assert emulator.cm.cpus.pinning_counts() == (4, 1)


def test_restart_drops_a_registered_pod_whose_checkpoints_were_not_written(
    machine: Machine, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The registry file and the checkpoints of an admission are written together. Simulate a crash in
    which pod B's registry file reached the disk but the checkpoints did not: the restarted node drops B
    (it was never answered) and keeps A; B's CPUs are free again."""
    state = tmp_path_factory.mktemp("state")
    config = parse_config(CONFIG.format(policy="single-numa-node", max_pods=110))
    first = NodeEmulator(config, machine, state)
    a = first.admit(pod("a", guaranteed("c", cpu="2", memory="1Gi")))
    saved = {name: (state / name).read_bytes() for name in ("cpu_manager_state", "memory_manager_state")}
    b = first.admit(pod("b", guaranteed("c", cpu="2", memory="1Gi")))
    assert a.admitted and b.admitted
    for name, blob in saved.items():  # the checkpoints as they were before B
        (state / name).write_bytes(blob)
    restarted = NodeEmulator(config, machine, state)
    assert restarted.dropped_at_startup == ["b"]
    [repair] = restarted.startup_repairs
    assert (repair.uid, repair.pod, repair.action) == ("b", "default/b", REPAIR_DROPPED)
    assert "never answered" in repair.reason and "container(s) c" in repair.reason
    assert [p.uid for p, _ in restarted.pods()] == ["a"]
    assert not (state / "pods" / "b.json").exists()
    again = restarted.admit(pod("b2", guaranteed("c", cpu="2", memory="1Gi")))
    assert again.containers[0].cpu_ids == b.containers[0].cpu_ids
    # And the other way round (checkpoints written, registry file lost): the allocation is stale.
    (state / "pods" / "b2.json").unlink()
    third = NodeEmulator(config, machine, state)
    assert [p.uid for p, _ in third.pods()] == ["a"]
    [stale] = third.startup_repairs
    assert (stale.uid, stale.pod, stale.action) == ("b2", "", REPAIR_RELEASED)
    assert "the cpu, memory checkpoint(s) hold allocations" in stale.reason
    assert (
        third.admit(pod("b3", guaranteed("c", cpu="2", memory="1Gi"))).containers[0].cpu_ids
        == b.containers[0].cpu_ids
    )
