"""Pods rebuilt from the podresources List and the checkpoints: UID matching, containers, requests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.pod import QOSClass
from kubeletemu.quantity import Quantity
from kubeletemu.shadow import reconstruct
from kubeletemu.shadow.assignments import Assignment, KubeletAssignments
from kubeletemu.shadow.reconstruct import UID_DERIVED, UID_FROM_CHECKPOINT, derived_uid

GIB = 1 << 30


def container(
    name: str,
    cpus: Sequence[int] = (),
    memory: Sequence[tuple[str, int, Sequence[int]]] = (),
    devices: Mapping[str, Sequence[tuple[str, int]]] | None = None,
) -> v1.ContainerResources:
    msg = v1.ContainerResources(name=name, cpu_ids=cpus)
    for kind, size, nodes in memory:
        msg.memory.add(
            memory_type=kind, size=size, topology=v1.TopologyInfo(nodes=[v1.NUMANode(ID=n) for n in nodes])
        )
    for resource, ids in (devices or {}).items():
        for device_id, node in ids:
            msg.devices.add(
                resource_name=resource,
                device_ids=[device_id],
                topology=v1.TopologyInfo(nodes=[v1.NUMANode(ID=node)]),
            )
    return msg


def listing(*pods: tuple[str, str, Sequence[v1.ContainerResources]]) -> v1.ListPodResourcesResponse:
    return v1.ListPodResourcesResponse(
        pod_resources=[v1.PodResources(namespace=ns, name=name, containers=cs) for ns, name, cs in pods]
    )


def test_uids_follow_the_exclusive_cpus_not_the_names() -> None:
    """Two pods with a container called "app": the CPUs tell them apart, whatever the List order."""
    kubelet: KubeletAssignments = {
        "uid-1": {"app": Assignment.of([1, 9])},
        "uid-2": {"app": Assignment.of([2, 10])},
    }
    result = reconstruct(
        listing(("a", "second", [container("app", [2, 10])]), ("a", "first", [container("app", [1, 9])])),
        kubelet,
    )
    assert [(p.key, p.pod.uid, p.uid_source) for p in result.pods] == [
        ("a/second", "uid-2", UID_FROM_CHECKPOINT),
        ("a/first", "uid-1", UID_FROM_CHECKPOINT),
    ]
    assert result.stale_uids == ()


def test_a_uid_matches_only_if_every_listed_container_agrees() -> None:
    kubelet: KubeletAssignments = {"uid-1": {"a": Assignment.of([1]), "b": Assignment.of([2])}}
    # Same CPUs for "a", but "b" holds other CPUs: not this UID.
    result = reconstruct(listing(("ns", "p", [container("a", [1]), container("b", [3])])), kubelet)
    assert result.pods[0].uid_source == UID_DERIVED
    assert result.pods[0].pod.uid == derived_uid("ns", "p")
    assert result.unmatched == ("ns/p",)
    assert result.stale_uids == ("uid-1",)


def test_memory_only_pods_match_ambiguously() -> None:
    blocks = [("memory", GIB, [0])]
    kubelet: KubeletAssignments = {
        "uid-b": {"c": Assignment.of(memory=[("memory", GIB, (0,))])},
        "uid-a": {"c": Assignment.of(memory=[("memory", GIB, (0,))])},
    }
    result = reconstruct(
        listing(("ns", "p1", [container("c", memory=blocks)]), ("ns", "p2", [container("c", memory=blocks)])),
        kubelet,
    )
    assert [(p.pod.uid, p.ambiguous_with) for p in result.pods] == [("uid-a", ("uid-b",)), ("uid-b", ())]


def test_pods_holding_nothing_get_a_stable_derived_uid() -> None:
    result = reconstruct(listing(("default", "web", [container("nginx")])), {})
    (pod,) = result.pods
    assert pod.uid_source == UID_DERIVED
    assert (
        pod.pod.uid
        == derived_uid("default", "web")
        == reconstruct(listing(("default", "web", [])), {}).pods[0].pod.uid
    )
    assert pod.pod.uid != derived_uid("default", "web2")
    assert pod.pod.qos_class == QOSClass.BEST_EFFORT
    assert pod.pod.phase == "Running"
    assert result.unmatched == ()


def test_requests_from_assignments() -> None:
    kubelet: KubeletAssignments = {
        "uid-1": {
            "main": Assignment.of(
                [4, 5, 12, 13],
                [("memory", 2 * GIB, (0, 1)), ("hugepages-1Gi", GIB, (0,))],
                {"example.com/nic": ["nic0", "nic1"]},
            ),
            "side": Assignment.of(memory=[("memory", GIB // 2, (0,))]),
        }
    }
    result = reconstruct(
        listing(
            (
                "ns",
                "p",
                [
                    container(
                        "main",
                        [4, 5, 12, 13],
                        [("memory", 2 * GIB, [0, 1]), ("hugepages-1Gi", GIB, [0])],
                        {"example.com/nic": [("nic0", 0), ("nic1", 0)]},
                    ),
                    container("side", memory=[("memory", GIB // 2, [0])]),
                ],
            )
        ),
        kubelet,
    )
    (mirrored,) = result.pods
    pod = mirrored.pod
    main, side = pod.containers
    assert dict(main.limits) == {
        "cpu": Quantity(4),
        "memory": Quantity(2 * GIB),
        "hugepages-1Gi": Quantity(GIB),
        "example.com/nic": Quantity(2),
    }
    assert main.requests == main.limits
    assert dict(side.limits) == {"memory": Quantity(GIB // 2), "cpu": Quantity.parse("1m")}
    assert pod.qos_class == QOSClass.GUARANTEED
    assert mirrored.placeholders == ("side: cpu unknown (no exclusive CPUs: fractional), 1m assumed",)


def test_checkpoint_only_containers_are_init_containers() -> None:
    """podresources never lists ordinary init containers; the checkpoint still holds their CPUs (reused by
    the app container) and their shrunken memory blocks."""
    kubelet: KubeletAssignments = {
        "uid-1": {
            "init-b": Assignment.of([6, 14], [("memory", 0, (1,))]),
            "init-a": Assignment.of([4, 12], [("memory", GIB // 4, (1,))]),
            "app": Assignment.of([4, 12], [("memory", GIB, (1,))]),
        }
    }
    result = reconstruct(listing(("ns", "p", [container("app", [4, 12], [("memory", GIB, [1])])])), kubelet)
    pod = result.pods[0].pod
    assert [c.name for c in pod.init_containers] == ["init-a", "init-b"]  # by lowest CPU
    assert [c.name for c in pod.containers] == ["app"]
    init_a, init_b = pod.init_containers
    # init-a: its remaining quarter plus what init-b and app hold on NUMA 1 (an upper bound).
    assert init_a.limits["memory"] == Quantity(GIB // 4 + GIB)
    assert init_b.limits["memory"] == Quantity(GIB)
    assert pod.qos_class == QOSClass.GUARANTEED
    assert len(result.pods[0].placeholders) == 2


def test_duplicates_and_pod_level_resources_are_noted() -> None:
    response = listing(("ns", "p", [container("c")]), ("ns", "p", [container("c")]))
    response.pod_resources[0].cpu_ids.extend([3])
    result = reconstruct(response, {})
    assert len(result.pods) == 1
    assert result.notes == (
        "ns/p: listed twice; the first entry is mirrored",
        "ns/p: holds pod-level resources (PodLevelResourceManagers); its pod-level requests are not "
        "reconstructed, so its replay may diverge",
    )


def test_pods_with_a_pod_level_set_in_the_checkpoints_are_noted() -> None:
    """1.36 lists no pod-level CPUs: the checkpoint's pod entries name the pod."""
    kubelet: KubeletAssignments = {"uid-1": {"c": Assignment.of([2, 10])}}
    result = reconstruct(
        listing(("ns", "p", [container("c", [2, 10])]), ("ns", "q", [container("c")])), kubelet, {"uid-1"}
    )
    assert result.pods[0].pod.uid == "uid-1"
    assert result.notes == (
        "ns/p: holds pod-level resources (PodLevelResourceManagers); its pod-level requests are not "
        "reconstructed, so its replay may diverge",
    )


def test_devices_are_folded_per_id() -> None:
    """A device on two NUMA nodes is listed once per node; it is one device."""
    msg = container("c", devices={"example.com/gpu": [("gpu0", 0), ("gpu0", 1)]})
    kubelet: KubeletAssignments = {"uid-1": {"c": Assignment.of(devices={"example.com/gpu": ["gpu0"]})}}
    result = reconstruct(listing(("ns", "p", [msg])), kubelet)
    assert result.pods[0].pod.uid == "uid-1"
    assert result.pods[0].pod.containers[0].limits == {"example.com/gpu": Quantity(1)}
    assert result.pods[0].pod.qos_class == QOSClass.BEST_EFFORT
