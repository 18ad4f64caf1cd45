"""Replay a stream of pods on an in-memory node per configuration and measure the outcome.

Each configuration gets its own ``NodeEmulator`` (no state directory): a fresh node built from the base
configuration with that cell's Topology Manager policy, scope and options (``run_simulation``), or a fork of
a live node, holding its admitted pods and manager states, with those settings as overrides
(``simulate_live``). A cell's kubelet version (matrix axis ``kubeletVersions``, else the configuration's
``kubeletVersion``) decides its gate defaults and policy options' maturity; ``featureGates`` that version
would refuse make the cell's error (``NodeEmulator.at_version`` on a live node). The container manager
carries the KEP-6007 scorer (``ContainerManager.numa_scoring``).
A configuration the kubelet would refuse to start with (bad or conflicting options, too many NUMA nodes, a
CPU or memory manager that cannot start) is reported with the kubelet's error and no metrics; the rest of
the matrix still runs. Both paths share ``replay``: the same events and end-of-stream metrics (on a fork the
metrics describe the whole node, the pods it held before the stream included).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kubeletemu.config import Config
from kubeletemu.config.loader import check_feature_gates
from kubeletemu.containermanager import ContainerAllocation, TopologyOverrides
from kubeletemu.emulator import EmulatorError, NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.simulate.inputs import Configuration, Instance, Matrix, PodStep, RemoveStep, Step, expand
from kubeletemu.simulate.metrics import NUMANodeUsage, largest, numa_usage, spread_containers
from kubeletemu.simulate.topology import TopologySource
from kubeletemu.topologymanager import ERROR_TOPOLOGY_AFFINITY
from kubeletemu.topologymanager.numa_scorer import TieBreakDecision

REPORT_VERSION = 1
# The report's topology kind for a simulation on forks of a live node.
LIVE = "live"


@dataclass(frozen=True)
class AdmissionEvent:
    """One admission attempt; ``affinity`` is each container's stored merged hint (None: nil or no merge)."""

    index: int
    step: int
    pod: str
    admitted: bool
    reason: str
    message: str
    affinity: tuple[tuple[str, tuple[int, ...] | None], ...]
    decisions: tuple[TieBreakDecision, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "step": self.step,
            "pod": self.pod,
            "admitted": self.admitted,
            "reason": self.reason,
            "message": self.message,
            "affinity": {name: None if bits is None else list(bits) for name, bits in self.affinity},
            "decisions": [d.to_dict() for d in self.decisions],
        }


@dataclass(frozen=True)
class RemovalEvent:
    step: int
    name: str
    removed: tuple[str, ...]  # namespace/name of the pods removed, oldest first

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "remove": self.name, "removed": list(self.removed)}


@dataclass(frozen=True)
class ConfigurationResult:
    configuration: Configuration
    error: str | None = None
    attempts: int = 0
    admitted: int = 0
    first_rejection: int | None = None  # index of the first refused admission attempt
    first_rejection_pod: str | None = None
    topology_affinity_errors: int = 0
    rejections: Mapping[str, int] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    running_pods: int = 0
    numa: tuple[NUMANodeUsage, ...] = ()
    largest_free_cpus: int | None = None
    largest_free_memory: int | None = None
    spread_containers: int = 0
    score_decisions: int = 0
    admissions_decided_by_score: int = 0
    events: tuple[AdmissionEvent | RemovalEvent, ...] = ()

    def to_dict(self, *, events: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "policy": self.configuration.policy,
            "scope": self.configuration.scope,
            "options": dict(self.configuration.options),
            "label": self.configuration.label,
            "kubeletVersion": self.configuration.kubelet_version,
            "error": self.error,
        }
        if self.error is not None:
            return out
        out.update(
            attempts=self.attempts,
            admitted=self.admitted,
            first_rejection=self.first_rejection,
            first_rejection_pod=self.first_rejection_pod,
            topology_affinity_errors=self.topology_affinity_errors,
            rejections=dict(self.rejections),
            running_pods=self.running_pods,
            numa=[n.to_dict() for n in self.numa],
            largest_free_block={"cpus": self.largest_free_cpus, "memory": self.largest_free_memory},
            spread_containers=self.spread_containers,
            score_decisions=self.score_decisions,
            admissions_decided_by_score=self.admissions_decided_by_score,
        )
        if events:
            out["events"] = [e.to_dict() for e in self.events]
        return out


@dataclass(frozen=True)
class SimulationReport:
    topology: Mapping[str, Any]
    stream: tuple[Mapping[str, Any], ...]
    results: tuple[ConfigurationResult, ...]

    def to_dict(self, *, events: bool = True) -> dict[str, Any]:
        return {
            "version": REPORT_VERSION,
            "topology": dict(self.topology),
            "stream": [dict(s) for s in self.stream],
            "configurations": [r.to_dict(events=events) for r in self.results],
        }


def configure(base: Config, configuration: Configuration) -> Config:
    kubelet = dataclasses.replace(
        base.kubelet,
        topology_manager_policy=configuration.policy,
        topology_manager_scope=configuration.scope,
        topology_manager_policy_options=configuration.options,
    )
    config = dataclasses.replace(base, kubelet=kubelet)
    version = configuration.kubelet_version
    if version and version != base.emulator.kubelet_version:
        emulator = dataclasses.replace(base.emulator, kubelet_version=version)
        config = dataclasses.replace(config, emulator=emulator)
        check_feature_gates(config)  # ConfigError (a ValueError): the cell's error
    return config


def check_startup(node: NodeEmulator) -> NodeEmulator:
    """``node`` unless the kubelet would refuse to start with its Topology Manager settings on its
    machine (more NUMA nodes than allowed...): then :class:`EmulatorError` with the kubelet's errors."""
    errors = node.cm.kubelet_start_errors()
    if errors:
        raise EmulatorError("; ".join(errors))
    return node


def start_node(machine: Machine, config: Config) -> NodeEmulator:
    """A node with the KEP-6007 scorer; raises what the kubelet would fail to start with."""
    return check_startup(NodeEmulator(config, machine))


def fork_node(live: NodeEmulator, configuration: Configuration) -> NodeEmulator:
    """A fork of ``live`` running ``configuration``'s Topology Manager settings; raises as ``start_node``."""
    overrides = TopologyOverrides(configuration.policy, configuration.scope, configuration.options)
    version = configuration.kubelet_version
    if version and version != live.config.emulator.kubelet_version:
        return check_startup(live.at_version(version, overrides))
    return check_startup(live.fork(overrides))


def run_configuration(
    machine: Machine, base: Config, configuration: Configuration, stream: Sequence[Step]
) -> ConfigurationResult:
    """``configuration`` on a fresh node of ``machine``."""
    return replay(configuration, stream, lambda: start_node(machine, configure(base, configuration)))


def replay(
    configuration: Configuration, stream: Sequence[Step], start: Callable[[], NodeEmulator]
) -> ConfigurationResult:
    """The stream on the node ``start`` gives (its errors make the configuration's error), measured at the
    end. Only the stream's own pods can be removed by a removal step."""
    try:
        node = start()
    except (ValueError, EmulatorError) as err:
        return ConfigurationResult(configuration, error=str(err))
    present: list[Instance] = []
    events: list[AdmissionEvent | RemovalEvent] = []
    reasons: Counter[str] = Counter()
    attempts = admitted = decided = decisions_total = 0
    first: tuple[int, str] | None = None
    for index, step, instances in expand(stream):
        if isinstance(step, RemoveStep):
            gone = [i for i in present if step.name in (i.pod.name, i.template)][: step.count]
            for instance in gone:
                node.remove(instance.pod.uid)
                present.remove(instance)
            events.append(RemovalEvent(index, step.name, tuple(i.key for i in gone)))
            continue
        for instance in instances:
            report = node.admit(instance.pod)
            decisions = tuple(decision for _, decision in report.numa_decisions)
            decisions_total += len(decisions)
            affinity = tuple((c.name, _affinity_bits(c)) for c in report.containers)
            if report.admitted:
                admitted += 1
                present.append(instance)
                final = {bits for _, bits in affinity if bits is not None}
                if any(tuple(d.chosen.bits()) in final for d in decisions):
                    decided += 1
            else:
                reasons[report.reason] += 1
                if first is None:
                    first = (attempts, instance.key)
            events.append(
                AdmissionEvent(
                    attempts,
                    index,
                    instance.key,
                    report.admitted,
                    report.reason,
                    report.message,
                    affinity,
                    decisions,
                )
            )
            attempts += 1
    usage = numa_usage(node)
    return ConfigurationResult(
        configuration,
        attempts=attempts,
        admitted=admitted,
        first_rejection=None if first is None else first[0],
        first_rejection_pod=None if first is None else first[1],
        topology_affinity_errors=reasons[ERROR_TOPOLOGY_AFFINITY],
        rejections=MappingProxyType(dict(sorted(reasons.items()))),
        running_pods=len(present),
        numa=usage,
        largest_free_cpus=largest([u.free_cpus for u in usage]),
        largest_free_memory=largest([u.free_memory for u in usage]),
        spread_containers=spread_containers(node),
        score_decisions=decisions_total,
        admissions_decided_by_score=decided,
        events=tuple(events),
    )


def _affinity_bits(container: ContainerAllocation) -> tuple[int, ...] | None:
    hint = container.affinity
    return None if hint is None or hint.affinity is None else tuple(hint.affinity.bits())


def describe_stream(stream: Sequence[Step]) -> tuple[Mapping[str, Any], ...]:
    out: list[Mapping[str, Any]] = []
    for step in stream:
        if isinstance(step, PodStep):
            out.append({"pod": f"{step.template.namespace}/{step.template.name}", "repeat": step.repeat})
        else:
            out.append({"remove": step.name, "count": step.count})
    return tuple(out)


def run_simulation(
    machine: Machine,
    base: Config,
    matrix: Matrix,
    stream: Sequence[Step],
    topology: Mapping[str, Any] | None = None,
) -> SimulationReport:
    """Every configuration of the matrix, in order, on the same machine and stream."""
    results = tuple(run_configuration(machine, base, c, stream) for c in matrix.configurations(base))
    return SimulationReport(dict(topology or {}), describe_stream(stream), results)


def simulate(
    source: TopologySource, base: Config, matrix: Matrix, stream: Sequence[Step]
) -> SimulationReport:
    """Probe ``source`` and run the matrix on it."""
    return run_simulation(source.machine(), base, matrix, stream, source.describe())


def simulate_live(
    node: NodeEmulator, matrix: Matrix, stream: Sequence[Step], name: str = ""
) -> SimulationReport:
    """Every configuration of the matrix (empty axes: ``node``'s settings) on its own fork of ``node``,
    which starts with the pods ``node`` holds; ``node`` itself is left as it is. ``name`` names the node
    in the report."""
    configurations = matrix.configurations(node.config)
    results = tuple(replay(c, stream, functools.partial(fork_node, node, c)) for c in configurations)
    topology = {"kind": LIVE, "name": name, "pods": len(node.registry)}
    return SimulationReport(topology, describe_stream(stream), results)
