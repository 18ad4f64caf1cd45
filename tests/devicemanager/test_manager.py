"""Device manager flows: allocation honouring the stored hint, init-container reuse, sidecars, release,
errors with the kubelet's text, queries, and the ``kubelet_internal_checkpoint`` file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.devicemanager import Device, DeviceAllocationError, DeviceCheckpointError, DeviceManager
from kubeletemu.devicemanager.checkpoint import unmarshal
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint
from tests.memorymanager.fixtures import StoreStub

RES = "example.com/dev"
DEVICES = [
    {"id": "dev0", "numaNodes": [0]},
    {"id": "dev1", "numaNodes": [0]},
    {"id": "dev2", "numaNodes": [1]},
    {"id": "dev3", "numaNodes": [1]},
    {"id": "dev4", "numaNodes": [1]},
    {"id": "dev5"},
]


def ctr(name: str, n: int, restart_policy: str | None = None) -> Container:
    limits = {RES: Quantity.parse(n)}
    return Container(name, requests=limits, limits=limits, restart_policy=restart_policy)


def mk(uid: str, *containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(name=uid, namespace="ns", uid=uid, containers=containers, init_containers=init)


def hint(*bits: int, preferred: bool = True) -> TopologyHint:
    return TopologyHint(BitMask.of(*bits), preferred)


@pytest.fixture
def store() -> StoreStub:
    return StoreStub()


@pytest.fixture
def dm(store: StoreStub) -> DeviceManager:
    manager = DeviceManager([0, 1], store)
    manager.register_resource(RES, DEVICES)
    return manager


def test_hints_and_aligned_allocation(dm: DeviceManager, store: StoreStub) -> None:
    p = mk("p", ctr("c", 2))
    assert set(dm.get_topology_hints(p, p.containers[0])[RES] or []) == {
        hint(0),
        hint(1),
        hint(0, 1, preferred=False),
    }
    store.hints[("p", "c")] = hint(1)
    dm.allocate(p, p.containers[0])
    assert dm.get_devices("p", "c") == {RES: {"dev2": (1,), "dev3": (1,)}}
    assert dm.allocated_per_numa(RES) == {1: 2}
    # Three left on node 1? No: one. A request for 2 now prefers node 0 only.
    q = mk("q", ctr("c", 2))
    assert set(dm.get_topology_hints(q, q.containers[0])[RES] or []) == {hint(0), hint(0, 1, preferred=False)}


def test_unaligned_then_no_topology_devices_fill_the_rest(dm: DeviceManager, store: StoreStub) -> None:
    p = mk("p", ctr("c", 5))
    store.hints[("p", "c")] = hint(0, preferred=False)
    dm.allocate(p, p.containers[0])
    got = dm.get_devices("p", "c")[RES]
    # Both node-0 devices first, then node 1's three; the device without topology stays free.
    assert set(got) == {"dev0", "dev1", "dev2", "dev3", "dev4"}
    last = mk("last", ctr("c", 1))
    dm.allocate(last, last.containers[0])
    assert dm.get_devices("last", "c") == {RES: {"dev5": ()}}
    nope = mk("nope", ctr("c", 1))
    with pytest.raises(
        DeviceAllocationError,
        match=r"^requested number of devices unavailable for example\.com/dev\. "
        r"Requested: 1, Available: 0$",
    ):
        dm.allocate(nope, nope.containers[0])


def test_init_devices_are_reused_and_sidecars_keep_theirs(dm: DeviceManager, store: StoreStub) -> None:
    p = mk("p", ctr("app", 2), init=(ctr("init", 2), ctr("side", 1, "Always")))
    for name in ("init", "side", "app"):
        store.hints[("p", name)] = hint(1)
    for c in p.all_containers():
        dm.allocate(p, c)
    init = set(dm.get_devices("p", "init")[RES])
    side = set(dm.get_devices("p", "side")[RES])
    app = set(dm.get_devices("p", "app")[RES])
    assert init == {"dev2", "dev3"}
    # The sidecar starts after the regular init container ended: it reuses one of its devices and keeps it,
    # so the app container gets the other one back plus a fresh node-1 device.
    assert len(side) == 1 and side < init
    assert app == (init - side) | {"dev4"}
    assert dm.pod_devices.pod_devices("p", RES) == {"dev2", "dev3", "dev4"}


def test_pod_hints_and_release(dm: DeviceManager) -> None:
    p = mk("p", ctr("a", 1), ctr("b", 1), init=(ctr("i", 2),))
    assert set(dm.get_pod_topology_hints(p)[RES] or []) == {hint(0), hint(1), hint(0, 1, preferred=False)}
    dm.allocate(p, p.init_containers[0])
    dm.remove_pod("p")
    assert dm.allocated_devices.get(RES, set()) == set()
    assert dm.get_devices("p", "i") == {}


def test_unknown_resources_and_no_topology() -> None:
    dm = DeviceManager([0, 1], StoreStub())
    dm.register_resource("example.com/flat", [{"id": "a"}, {"id": "b"}])
    p = Pod(
        "p",
        "ns",
        "p",
        (Container("c", limits={"example.com/flat": Quantity.parse(1), "cpu": Quantity.parse(1)}),),
    )
    assert dm.get_topology_hints(p, p.containers[0]) == {"example.com/flat": None}
    dm.register_resource("example.com/sick", [{"id": "x", "numaNodes": [0], "healthy": False}])
    sick = Pod("s", "ns", "s", (Container("c", limits={"example.com/sick": Quantity.parse(1)}),))
    with pytest.raises(
        DeviceAllocationError, match=r"^no healthy devices present; cannot allocate unhealthy devices"
    ):
        dm.allocate(sick, sick.containers[0])
    assert dm.get_allocatable_devices() == {
        "example.com/flat": {"a": None, "b": None},
        "example.com/sick": {},
    }


def test_changed_request_is_refused(dm: DeviceManager, store: StoreStub) -> None:
    p = mk("p", ctr("c", 1))
    dm.allocate(p, p.containers[0])
    with pytest.raises(DeviceAllocationError, match=r'^pod "p" container "c" changed request for resource'):
        dm.devices_to_allocate("p", "c", RES, 2, set())


def test_garbage_collection_of_inactive_pods(store: StoreStub) -> None:
    active = ["keep"]
    dm = DeviceManager([0, 1], store, active_pods=lambda: active)
    dm.register_resource(RES, DEVICES)
    for uid in ("keep", "gone"):
        p = mk(uid, ctr("c", 1))
        dm.allocate(p, p.containers[0])
    # "gone" is still the pod being admitted; the next admission frees it.
    dm.update_allocated_devices()
    assert dm.pod_devices.pods() == {"keep", "gone"}
    nxt = mk("next", ctr("c", 1))
    dm.get_topology_hints(nxt, nxt.containers[0])
    assert dm.pod_devices.pods() == {"keep"}


# Real kubelet files (the checksums were computed by kubelets, not by us).
REAL_1 = (
    '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"nvidia.com/gpu":'
    '["GPU-0650a168-e770-3ea8-8ac3-8a1d419763e0"]}},"Checksum":3952659280}'
)
REAL_2 = (
    '{"Data":{"PodDeviceEntries":[{"PodUID":"bf52b2cd-b611-4e79-86b1-280b283185c3","ContainerName":"check",'
    '"ResourceName":"nvidia.com/gpu","DeviceIDs":{"-1":["tegra"]},'
    '"AllocResp":"Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh"}],'
    '"RegisteredDevices":{"nvidia.com/gpu":["tegra"]}},"Checksum":3660592824}'
)


@pytest.mark.parametrize("blob", [REAL_1, REAL_2], ids=["no-entries", "one-entry"])
def test_real_kubelet_checkpoints_verify(blob: str) -> None:
    cp = unmarshal(blob)
    assert cp.checksum == json.loads(blob)["Checksum"]
    with pytest.raises(DeviceCheckpointError, match=r"^checkpoint is corrupted$"):
        unmarshal(blob.replace("nvidia.com/gpu", "nvidia.com/gpv"))


def test_checkpoint_restore(tmp_path: Path, store: StoreStub) -> None:
    (tmp_path / "kubelet_internal_checkpoint").write_text(REAL_2)
    dm = DeviceManager([0], store, checkpoint_dir=tmp_path)
    assert dm.get_devices("bf52b2cd-b611-4e79-86b1-280b283185c3", "check") == {
        "nvidia.com/gpu": {"tegra": ()}
    }
    assert dm.allocated_devices == {"nvidia.com/gpu": {"tegra"}}
    # Capacity stays zero until the plugin registers again.
    assert dm.healthy_devices == {"nvidia.com/gpu": set()}


def test_checkpoint_written_and_reread(tmp_path: Path, store: StoreStub) -> None:
    dm = DeviceManager([0, 1], store, checkpoint_dir=tmp_path)
    dm.register_resource(RES, DEVICES)
    p = mk("p", ctr("c", 1))
    store.hints[("p", "c")] = hint(0)
    dm.allocate(p, p.containers[0])
    written = json.loads((tmp_path / "kubelet_internal_checkpoint").read_text())
    assert written["Data"]["PodDeviceEntries"][0]["DeviceIDs"] == {"0": ["dev0"]}
    again = DeviceManager([0, 1], StoreStub(), checkpoint_dir=tmp_path)
    assert again.get_devices("p", "c") == {RES: {"dev0": (0,)}}


def test_device_list_validation() -> None:
    dm = DeviceManager([0], StoreStub())
    with pytest.raises(ValueError, match="duplicate device id"):
        dm.register_resource(RES, [{"id": "a"}, {"id": "a"}])
    with pytest.raises(ValueError, match="'numaNodes' must be a list of integers"):
        dm.register_resource(RES, [{"id": "a", "numaNodes": "0"}])
    assert Device("a", (0,)).has_topology and not Device("b", ()).has_topology
