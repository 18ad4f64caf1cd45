"""Builders shared by the CPU manager tests: conformance topologies, pods, a fixed Store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager import CPUTopology
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import ProviderHints, TopologyHint
from tests.conformance.loader import load


def topology_from_vector(raw: Mapping[str, Any]) -> CPUTopology:
    """A conformance topology: the declared header fields verbatim plus the CPU rows."""
    return CPUTopology.from_rows(
        raw["cpus"],
        num_cpus=raw["num_cpus"],
        num_cores=raw["num_cores"],
        num_sockets=raw["num_sockets"],
        num_numa_nodes=raw["num_numa_nodes"],
        num_uncore_cache=raw["num_uncore_cache"],
    )


def conformance_topology(file: str, name: str) -> CPUTopology:
    return topology_from_vector(load(file)["topologies"][name])


def container(
    name: str,
    cpu: str | int | None,
    memory: str | None = "1Gi",
    *,
    limit_cpu: str | int | None = None,
    restart_policy: str | None = None,
) -> Container:
    """Requests == limits unless ``limit_cpu`` differs (a Guaranteed container by default)."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    if cpu is not None:
        requests["cpu"] = Quantity.parse(str(cpu))
        limits["cpu"] = Quantity.parse(str(cpu if limit_cpu is None else limit_cpu))
    if memory is not None:
        requests["memory"] = limits["memory"] = Quantity.parse(memory)
    return Container(name=name, requests=requests, limits=limits, restart_policy=restart_policy)


def pod(
    uid: str,
    containers: list[Container],
    init_containers: list[Container] | None = None,
    name: str | None = None,
) -> Pod:
    return Pod(
        name=name or uid,
        namespace="default",
        uid=uid,
        containers=tuple(containers),
        init_containers=tuple(init_containers or ()),
    )


@dataclass
class NamedPolicy:
    """A Topology Manager policy as the CPU manager sees it: only its name is read."""

    name: str

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        raise AssertionError("the CPU manager never merges")


@dataclass
class FixedStore:
    """A Topology Manager Store with hints set by the test (``topologymanager.NewFakeManager``)."""

    policy_name: str = "none"
    hints: dict[tuple[str, str], TopologyHint] = field(default_factory=dict)

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        return self.hints.get((pod_uid, container_name), TopologyHint())

    def get_policy(self) -> NamedPolicy:
        return NamedPolicy(self.policy_name)

    def set(self, pod_uid: str, container_name: str, numa: list[int] | None, preferred: bool = True) -> None:
        self.hints[pod_uid, container_name] = TopologyHint(
            None if numa is None else BitMask.of(*numa), preferred
        )
