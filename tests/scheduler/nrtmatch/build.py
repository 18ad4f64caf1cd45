"""Small builders for NodeResourceTopology objects and pods in the hand-written tests."""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.objects import AttributeInfo, CostInfo, NodeResourceTopology, ResourceInfo, Zone


def zone(
    name: str, available: Mapping[str, str | int], costs: Mapping[int, int] | None = None, kind: str = "Node"
) -> Zone:
    return Zone(
        name=name,
        type=kind,
        costs=tuple(CostInfo(f"node-{k}", v) for k, v in (costs or {}).items()),
        resources=tuple(
            ResourceInfo(n, Quantity.parse(v), Quantity.parse(v), Quantity.parse(v))
            for n, v in available.items()
        ),
    )


def nrt(
    *zones: Zone, policies: tuple[str, ...] = (), attributes: Mapping[str, str] | None = None, name: str = "n"
) -> NodeResourceTopology:
    return NodeResourceTopology(
        name=name,
        zones=zones,
        topology_policies=policies,
        attributes=tuple(AttributeInfo(k, v) for k, v in (attributes or {}).items()),
    )


def container(
    name: str, requests: Mapping[str, str | int], *, guaranteed: bool = True, restart: str | None = None
) -> Container:
    parsed = {k: Quantity.parse(v) for k, v in requests.items()}
    return Container(name, requests=parsed, limits=parsed if guaranteed else {}, restart_policy=restart)


def pod(*containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod("p", "default", "uid-p", tuple(containers), init)


SINGLE_CONTAINER = {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "container"}
SINGLE_POD = {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"}
COSTS_2 = {0: {0: 10, 1: 20}, 1: {0: 20, 1: 10}}
