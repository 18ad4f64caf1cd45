"""Conversions between the admission service's messages and the engine's types (a request's pod is
decoded by :mod:`kubeletemu.manifest.source`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.containermanager import ContainerAllocation, TopologyOverrides
from kubeletemu.emulator import AdmissionReport
from kubeletemu.lifecycle.preemption import PREEMPTED_MESSAGE, PREEMPTED_PHASE, PREEMPTED_REASON
from kubeletemu.node_topology import NodeTopologyReport
from kubeletemu.pod import Pod, QOSClass, compute_qos
from kubeletemu.podresources import nrt
from kubeletemu.podresources.fingerprint import Status
from kubeletemu.scheduler.framework import Decision
from kubeletemu.scheduler.leastnumanodes import LeastNUMAResult
from kubeletemu.scheduler.profile import Profile
from kubeletemu.topologymanager import ProviderHints, TopologyHint


def overrides_from(msg: pb.PolicyOverrides) -> TopologyOverrides | None:
    if not (
        msg.HasField("topology_manager_policy")
        or msg.HasField("topology_manager_scope")
        or msg.replace_policy_options
    ):
        return None
    return TopologyOverrides(
        policy=msg.topology_manager_policy if msg.HasField("topology_manager_policy") else None,
        scope=msg.topology_manager_scope if msg.HasField("topology_manager_scope") else None,
        options=dict(msg.topology_manager_policy_options) if msg.replace_policy_options else None,
    )


def hint_msg(hint: TopologyHint) -> pb.TopologyHint:
    if hint.affinity is None:
        return pb.TopologyHint(any_numa=True, preferred=hint.preferred)
    return pb.TopologyHint(numa_nodes=hint.affinity.bits(), preferred=hint.preferred)


def provider_hints_msg(provider: str, hints: ProviderHints) -> pb.ProviderHints:
    if hints is None:
        return pb.ProviderHints(provider=provider, nil_map=True)
    resources = [
        pb.ResourceHints(resource=name, no_preference=True)
        if values is None
        else pb.ResourceHints(resource=name, hints=[hint_msg(h) for h in values])
        for name, values in sorted(hints.items())
    ]
    return pb.ProviderHints(provider=provider, resources=resources)


def container_msg(container: ContainerAllocation) -> pb.ContainerResult:
    msg = pb.ContainerResult(
        name=container.name,
        kind=container.kind,
        provider_hints=[provider_hints_msg(p, h) for p, h in container.provider_hints],
        cpu_ids=container.cpu_ids,
        exclusive_cpus=container.exclusive_cpus,
        memory=[
            pb.MemoryBlock(memory_type=b.memory_type, size=b.size, numa_nodes=b.numa_nodes)
            for b in container.memory
        ],
        devices=[device_msg(resource, ids) for resource, ids in sorted(container.devices.items())],
    )
    if container.affinity is not None:
        msg.affinity.CopyFrom(hint_msg(container.affinity))
    return msg


def device_msg(resource: str, ids: Mapping[str, tuple[int, ...]]) -> pb.DeviceAssignment:
    nodes = sorted({n for numa in ids.values() for n in numa})
    return pb.DeviceAssignment(resource_name=resource, device_ids=sorted(ids), numa_nodes=nodes)


def admit_response(report: AdmissionReport) -> pb.AdmitResponse:
    pod = report.pod
    return pb.AdmitResponse(
        name=pod.name,
        namespace=pod.namespace,
        uid=pod.uid,
        admitted=report.admitted,
        reason=report.reason,
        message=report.message,
        decided_by=report.decided_by,
        qos_class=(report.qos_class or compute_qos(pod)).value,
        containers=[container_msg(c) for c in report.containers],
        score_decisions=[
            pb.ScoreDecision(
                container=name,
                chosen=d.chosen.bits(),
                over=d.over.bits(),
                signal=",".join(d.decided_by),
                detail=json.dumps(d.to_dict(), sort_keys=True),
            )
            for name, d in report.numa_decisions
        ],
        cleanup="; ".join(report.released),
        preempted=[
            pb.PreemptedPod(
                name=p.name,
                namespace=p.namespace,
                uid=p.uid,
                phase=PREEMPTED_PHASE,
                reason=PREEMPTED_REASON,
                message=PREEMPTED_MESSAGE,
            )
            for p in report.preempted
        ],
    )


def admitted_pod_msg(
    pod: Pod, containers: Iterable[ContainerAllocation], qos_class: QOSClass | None = None
) -> pb.AdmittedPod:
    """``qos_class``: the kubelet's (``NodeEmulator.qos_class``); without it, the containers'."""
    return pb.AdmittedPod(
        name=pod.name,
        namespace=pod.namespace,
        uid=pod.uid,
        qos_class=(qos_class or compute_qos(pod)).value,
        containers=[container_msg(c) for c in containers],
    )


def node_topology_msg(report: NodeTopologyReport) -> pb.NodeTopology:
    return pb.NodeTopology(
        numa_nodes=[
            pb.NUMANode(
                id=node.id,
                cpu_ids=node.cpu_ids,
                allocatable_cpu_ids=node.allocatable_cpu_ids,
                free_cpu_ids=node.free_cpu_ids,
                memory_total_bytes=node.memory.total,
                memory_allocatable_bytes=node.memory.allocatable,
                memory_free_bytes=node.memory.free,
                hugepages=[
                    pb.HugepagesResources(
                        page_size_bytes=size,
                        total_bytes=amounts.total,
                        allocatable_bytes=amounts.allocatable,
                        free_bytes=amounts.free,
                    )
                    for size, amounts in node.hugepages.items()
                ],
                distances=node.distances,
                devices=[
                    pb.DeviceAssignment(resource_name=resource, device_ids=ids, numa_nodes=[node.id])
                    for resource, ids in node.free_devices.items()
                ],
            )
            for node in report.numa_nodes
        ],
        reserved_cpu_ids=report.reserved_cpu_ids,
        shared_pool_cpu_ids=report.shared_pool_cpu_ids,
        topology_manager_policy=report.topology_manager_policy,
        topology_manager_scope=report.topology_manager_scope,
        topology_manager_policy_options=report.topology_manager_options,
        cpu_manager_policy=report.cpu_manager_policy,
        memory_manager_policy=report.memory_manager_policy,
        kubelet_start_errors=report.kubelet_start_errors,
    )


def fingerprint_msg(fingerprint: str, method: str, status: Status) -> pb.GetFingerprintResponse:
    return pb.GetFingerprintResponse(
        fingerprint=fingerprint,
        method=method,
        node_name=status.node_name,
        pods=[pb.PodName(namespace=p.namespace, name=p.name) for p in status.pods],
        status_json=status.to_json(),
    )


def _attributes_msg(attributes: Iterable[nrt.AttributeInfo]) -> list[pb.AttributeInfo]:
    return [pb.AttributeInfo(name=a.name, value=a.value) for a in attributes]


def nrt_msg(topology: nrt.NodeResourceTopology) -> pb.NodeResourceTopology:
    return pb.NodeResourceTopology(
        name=topology.name,
        annotations=dict(topology.annotations),
        zones=[
            pb.Zone(
                name=zone.name,
                type=zone.type,
                costs=[pb.CostInfo(name=c.name, value=c.value) for c in zone.costs],
                attributes=_attributes_msg(zone.attributes),
                resources=[
                    pb.ResourceInfo(
                        name=r.name, capacity=r.capacity, allocatable=r.allocatable, available=r.available
                    )
                    for r in zone.resources
                ],
            )
            for zone in topology.zones
        ],
        attributes=_attributes_msg(topology.attributes),
        topology_policies=list(topology.topology_policies),
    )


def _attributes(msgs: Iterable[pb.AttributeInfo]) -> tuple[nrt.AttributeInfo, ...]:
    return tuple(nrt.AttributeInfo(a.name, a.value) for a in msgs)


def nrt_from_msg(msg: pb.NodeResourceTopology) -> nrt.NodeResourceTopology:
    """The inverse of :func:`nrt_msg`, for clients that print the object (``kubeletemu nrt``)."""
    return nrt.NodeResourceTopology(
        name=msg.name,
        annotations=dict(msg.annotations),
        zones=tuple(
            nrt.Zone(
                name=zone.name,
                type=zone.type,
                costs=tuple(nrt.CostInfo(c.name, c.value) for c in zone.costs),
                resources=tuple(
                    nrt.ResourceInfo(r.name, r.capacity, r.allocatable, r.available) for r in zone.resources
                ),
                attributes=_attributes(zone.attributes),
            )
            for zone in msg.zones
        ),
        attributes=_attributes(msg.attributes),
        topology_policies=tuple(msg.topology_policies),
    )


def least_numa_nodes_msg(result: LeastNUMAResult) -> pb.LeastNUMANodesResponse:
    return pb.LeastNUMANodesResponse(
        scope=result.scope,
        numa_nodes=-1 if result.numa_nodes is None else result.numa_nodes,
        min_distance=result.min_distance,
        score=result.score,
        requirements=[
            pb.LeastNUMARequirement(
                name=name,
                numa_nodes=[] if r.nodes is None else r.nodes.bits(),
                fits=r.nodes is not None,
                min_distance=r.min_distance,
            )
            for name, r in result.requests
        ],
    )


def schedule_msg(decision: Decision, profile: Profile) -> pb.ScheduleResponse:
    """The decision, with the profile that took it and each plugin's own score."""
    pod = decision.pod
    return pb.ScheduleResponse(
        pod=f"{pod.namespace}/{pod.name}",
        chosen=decision.chosen or "",
        nodes=[
            pb.NodeVerdict(
                name=v.name,
                fits=v.fits,
                reason=v.status.message,
                score=v.score,
                policy=v.policy,
                error="" if v.crash is None else str(v.crash),
                scores=[
                    pb.PluginScore(plugin=s.plugin, score=s.score, weight=s.weight) for s in v.plugin_scores
                ],
            )
            for v in decision.nodes
        ],
        profile=profile.name,
        filter_plugins=[m.name for m in profile.filters],
        score_plugins=[pb.ScorePlugin(plugin=m.name, weight=w) for m, w in profile.scores],
    )
