"""Pods rebuilt from the podresources List and the checkpoints: UID matching, containers, requests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.pod import QOSClass, compute_qos
from kubeletemu.quantity import Quantity
from kubeletemu.shadow import reconstruct
from kubeletemu.shadow.assignments import Assignment, KubeletAssignments
from kubeletemu.shadow.pod_level import PodLevelHoldings
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


def test_duplicates_are_noted() -> None:
    response = listing(("ns", "p", [container("c")]), ("ns", "p", [container("c")]))
    result = reconstruct(response, {})
    assert len(result.pods) == 1
    assert result.notes == ("ns/p: listed twice; the first entry is mirrored",)


# ---- pod-level pods (PodLevelResourceManagers) --------------------------------------------------------

# A 4-CPU, 2 GiB bubble on NUMA 0: "ex" holds its own 2 CPUs and 512 MiB, "sh1" and "sh2" the rest.
BUBBLE = PodLevelHoldings((2, 3, 10, 11), (("memory", 2 * GIB, (0,)),))
SHARED = ([3, 11], [("memory", 3 * GIB // 2, [0])])


def shared_pod_kubelet() -> KubeletAssignments:
    return {
        "uid-1": {
            "ex": Assignment.of([2, 10], [("memory", GIB // 2, (0,))]),
            "sh1": Assignment.of([3, 11], [("memory", 3 * GIB // 2, (0,))]),
            "sh2": Assignment.of([3, 11], [("memory", 3 * GIB // 2, (0,))]),
        }
    }


def shared_pod_listing() -> v1.ListPodResourcesResponse:
    return listing(
        ("ns", "p", [container("ex", [2, 10], [("memory", GIB // 2, [0])]), container("sh1", *SHARED)]),
    )


def test_a_pod_level_pod_gets_its_bubble_as_spec_resources() -> None:
    """1.36: the bubble comes from the checkpoints' pod entries (the List has no pod-level fields)."""
    response = listing(
        (
            "ns",
            "p",
            [
                container("ex", [2, 10], [("memory", GIB // 2, [0])]),
                container("sh1", *SHARED),
                container("sh2", *SHARED),
            ],
        )
    )
    result = reconstruct(response, shared_pod_kubelet(), {"uid-1": BUBBLE})
    (mirrored,) = result.pods
    pod = mirrored.pod
    assert pod.resources is not None
    assert pod.resources.requests == pod.resources.limits == {"cpu": Quantity(4), "memory": Quantity(2 * GIB)}
    # The exclusive container asks for its slice; the two holding the same remainder ask for nothing.
    assert [(c.name, dict(c.limits)) for c in pod.containers] == [
        ("ex", {"cpu": Quantity(2), "memory": Quantity(GIB // 2)}),
        ("sh1", {}),
        ("sh2", {}),
    ]
    assert compute_qos(pod, pod_level_resources_enabled=True) == QOSClass.GUARANTEED
    assert mirrored.alternatives == () and result.notes == () and mirrored.placeholders == ()


def test_master_lists_the_bubble_on_the_pod() -> None:
    """master (KEP-5526): the List's own cpu_ids / memory give the bubble when the checkpoints do not."""
    response = shared_pod_listing()
    response.pod_resources[0].cpu_ids.extend([2, 3, 10, 11])
    response.pod_resources[0].memory.add(
        memory_type="memory", size=2 * GIB, topology=v1.TopologyInfo(nodes=[v1.NUMANode(ID=0)])
    )
    kubelet = shared_pod_kubelet()
    del kubelet["uid-1"]["sh2"]
    pod = reconstruct(response, kubelet).pods[0].pod
    assert pod.resources is not None and pod.resources.limits["cpu"] == Quantity(4)


def listing_137(fractional: bool = False) -> v1.ListPodResourcesResponse:
    """What a 1.37 kubelet lists for the shared pod: the bubble on the pod, nothing on the sharing
    containers (kubernetes#138738); ``fractional``: "ex" lists its memory only (its CPUs shared)."""
    ex = container("ex", [] if fractional else [2, 10], [("memory", GIB // 2, [0])])
    response = listing(("ns", "p", [ex, container("sh1"), container("sh2")]))
    response.pod_resources[0].cpu_ids.extend([11, 3, 10, 2])
    response.pod_resources[0].memory.add(
        memory_type="memory", size=2 * GIB, topology=v1.TopologyInfo(nodes=[v1.NUMANode(ID=0)])
    )
    return response


def test_137_pods_are_matched_by_their_bubble() -> None:
    """1.37 lists no CPUs or memory on the containers sharing the pool: the pod is matched to its
    checkpoint UID by the bubble, and its containers' shares come from the checkpoints. Without
    ``hides_pod_pool`` (1.36's reading) the same List matches nothing."""
    result = reconstruct(listing_137(), shared_pod_kubelet(), {"uid-1": BUBBLE}, hides_pod_pool=True)
    (mirrored,) = result.pods
    assert (mirrored.pod.uid, mirrored.uid_source, result.stale_uids) == ("uid-1", UID_FROM_CHECKPOINT, ())
    assert dict(mirrored.kubelet) == shared_pod_kubelet()["uid-1"]
    assert [(c.name, dict(c.limits)) for c in mirrored.pod.containers] == [
        ("ex", {"cpu": Quantity(2), "memory": Quantity(GIB // 2)}),
        ("sh1", {}),
        ("sh2", {}),
    ]
    old = reconstruct(listing_137(), shared_pod_kubelet(), {"uid-1": BUBBLE})
    assert (old.pods[0].uid_source, old.stale_uids) == (UID_DERIVED, ("uid-1",))


def test_137_matching_still_checks_what_is_listed() -> None:
    """A listed part must be the checkpoint's: "ex" listing its memory only (CPUs shared, a fractional
    request) agrees; listing other CPUs than the checkpoint's does not."""
    fractional = reconstruct(listing_137(True), shared_pod_kubelet(), {"uid-1": BUBBLE}, hides_pod_pool=True)
    assert fractional.pods[0].uid_source == UID_FROM_CHECKPOINT
    wrong = listing_137()
    wrong.pod_resources[0].containers[0].cpu_ids[:] = [3, 11]
    result = reconstruct(wrong, shared_pod_kubelet(), {"uid-1": BUBBLE}, hides_pod_pool=True)
    assert result.pods[0].uid_source == UID_DERIVED


def test_one_holder_of_the_remainder_gives_one_reading_per_container() -> None:
    """Two containers whose slices cover the bubble: either may hold the remainder. The last one first
    (its slice is the remainder either way), then the other."""
    kubelet: KubeletAssignments = {
        "uid-1": {
            "a": Assignment.of([2], [("memory", GIB // 2, (0,))]),
            "b": Assignment.of([10], [("memory", GIB // 2, (0,))]),
        }
    }
    response = listing(
        (
            "ns",
            "p",
            [
                container("a", [2], [("memory", GIB // 2, [0])]),
                container("b", [10], [("memory", GIB // 2, [0])]),
            ],
        )
    )
    bubble = PodLevelHoldings((2, 10), (("memory", GIB, (0,)),))
    mirrored = reconstruct(response, kubelet, {"uid-1": bubble}).pods[0]
    first, second = mirrored.readings
    assert [dict(c.limits) for c in first.containers] == [
        {"cpu": Quantity(1), "memory": Quantity(GIB // 2)},
        {},
    ]
    assert [dict(c.limits) for c in second.containers] == [
        {},
        {"cpu": Quantity(1), "memory": Quantity(GIB // 2)},
    ]


def test_a_fractional_cpu_container_keeps_its_memory() -> None:
    """Equivalent Guaranteed with a fractional CPU: the shared CPUs but memory of its own."""
    kubelet: KubeletAssignments = {
        "uid-1": {
            "f": Assignment.of([3, 11], [("memory", GIB // 4, (0,))]),
            "s1": Assignment.of([3, 11], [("memory", GIB * 3 // 8, (0,))]),
            "s2": Assignment.of([3, 11], [("memory", GIB * 3 // 8, (0,))]),
        }
    }
    response = listing(
        (
            "ns",
            "p",
            [
                container("f", [3, 11], [("memory", GIB // 4, [0])]),
                container("s1", [3, 11], [("memory", GIB * 3 // 8, [0])]),
                container("s2", [3, 11], [("memory", GIB * 3 // 8, [0])]),
            ],
        )
    )
    bubble = PodLevelHoldings((3, 11), (("memory", GIB * 5 // 8, (0,)),))
    mirrored = reconstruct(response, kubelet, {"uid-1": bubble}).pods[0]
    assert [dict(c.limits) for c in mirrored.pod.containers] == [
        {"cpu": Quantity.parse("1m"), "memory": Quantity(GIB // 4)},
        {},
        {},
    ]
    assert mirrored.placeholders == ("f: cpu unknown (it shares the pod's CPUs: fractional), 1m assumed",)


def test_a_sidecar_before_an_init_container_is_told_by_the_pool() -> None:
    """The regular init container "i" (no requests) ran on the bubble less "sc": so "sc" is a sidecar
    started before it, rebuilt as one; "a" stays an app container."""
    kubelet: KubeletAssignments = {
        "uid-1": {
            "i": Assignment.of([3, 10, 11]),
            "sc": Assignment.of([2]),
            "a": Assignment.of([10]),
            "s": Assignment.of([3, 11]),
        }
    }
    response = listing(("ns", "p", [container("sc", [2]), container("a", [10]), container("s", [3, 11])]))
    bubble = PodLevelHoldings((2, 3, 10, 11))
    result = reconstruct(response, kubelet, {"uid-1": bubble})
    pod = result.pods[0].pod
    assert [(c.name, c.is_restartable_init) for c in pod.init_containers] == [("sc", True), ("i", False)]
    assert [c.name for c in pod.containers] == ["a", "s"]
    assert dict(pod.init_containers[1].limits) == {} and result.notes == ()
    # Memory Manager None: the pod's memory is a named guess.
    assert "pod: memory unknown (no pod memory blocks), 1 byte assumed" in result.pods[0].placeholders


def test_an_init_container_with_cpus_of_its_own_beside_exclusive_ones_is_noted() -> None:
    kubelet: KubeletAssignments = {
        "uid-1": {"i": Assignment.of([2]), "a": Assignment.of([3]), "s": Assignment.of([10])}
    }
    response = listing(("ns", "p", [container("a", [3]), container("s", [10])]))
    result = reconstruct(response, kubelet, {"uid-1": PodLevelHoldings((2, 3, 10, 11))})
    assert result.notes == (
        "ns/p: has a regular init container with CPUs of its own: rebuilt as if no sidecar started before it "
        "(the List does not tell sidecars from app containers), so its replay may diverge",
    )


def test_devices_are_folded_per_id() -> None:
    """A device on two NUMA nodes is listed once per node; it is one device."""
    msg = container("c", devices={"example.com/gpu": [("gpu0", 0), ("gpu0", 1)]})
    kubelet: KubeletAssignments = {"uid-1": {"c": Assignment.of(devices={"example.com/gpu": ["gpu0"]})}}
    result = reconstruct(listing(("ns", "p", [msg])), kubelet)
    assert result.pods[0].pod.uid == "uid-1"
    assert result.pods[0].pod.containers[0].limits == {"example.com/gpu": Quantity(1)}
    assert result.pods[0].pod.qos_class == QOSClass.BEST_EFFORT
