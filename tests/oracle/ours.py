"""Our side of the kubelet oracle: kubeletemu's models answering a harness case with the harness's fields.

Each function takes a case as the Go harness reads it (tests/oracle/kubelet/v<minor>/*.go) and returns
what the harness answers for the same case, built from kubeletemu's Topology Manager, static CPU Manager
policy and static Memory Manager policy at the emulated kubelet ``version``. Errors become their text
(``err.Error()`` on the Go side): any exception does, so that an unexpected Python error shows as a
difference rather than stopping the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager import CPUSet, StaticPolicy
from kubeletemu.cpumanager.state import MemoryState as CPUMemoryState
from kubeletemu.memorymanager import MachineInfo, NUMANode
from kubeletemu.memorymanager import StaticPolicy as MemoryStaticPolicy
from kubeletemu.memorymanager.state.checkpoint import MemoryManagerCheckpoint, to_raw
from kubeletemu.memorymanager.state.state import NUMANodeMap
from kubeletemu.memorymanager.state.state_mem import MemoryState as MemoryMemoryState
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import ProviderHints, TopologyHint, new_manager
from tests.cpumanager.helpers import FixedStore, topology_from_vector
from tests.topologymanager.stub_provider import ScriptedProvider

Answer = dict[str, Any]


def decode_hint(raw: Mapping[str, Any]) -> TopologyHint:
    bits = raw["affinity"]
    return TopologyHint(None if bits is None else BitMask.of(*bits), raw["preferred"])


def encode_hint(hint: TopologyHint) -> Answer:
    return {"affinity": None if hint.affinity is None else hint.affinity.bits(), "preferred": hint.preferred}


def decode_hints(raw: Mapping[str, Any] | None) -> ProviderHints:
    if raw is None:
        return None
    return {name: None if hints is None else [decode_hint(h) for h in hints] for name, hints in raw.items()}


def encode_hints(hints: ProviderHints) -> dict[str, Any] | None:
    if hints is None:
        return None
    return {name: None if hs is None else [encode_hint(h) for h in hs] for name, hs in hints.items()}


def _quantities(raw: Mapping[str, str] | None) -> dict[str, Quantity]:
    return {name: Quantity.parse(value) for name, value in (raw or {}).items()}


def container(raw: Mapping[str, Any]) -> Container:
    """As the API server hands it to the kubelet: the harness builds the v1.Container from the same
    requests and limits (the case gives requests explicitly: no defaulting is left to either side)."""
    return Container(
        raw["name"],
        requests=_quantities(raw.get("requests")),
        limits=_quantities(raw.get("limits")),
        restart_policy=raw.get("restart_policy"),
    )


def pod(raw: Mapping[str, Any]) -> Pod:
    return Pod(
        name=raw["uid"],
        namespace="default",
        uid=raw["uid"],
        containers=tuple(container(c) for c in raw.get("containers") or ()),
        init_containers=tuple(container(c) for c in raw.get("init_containers") or ()),
    )


def _all_containers(raw_pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*(raw_pod.get("init_containers") or ()), *(raw_pod.get("containers") or ())]


def fixed_store(policy_name: str, pods: Sequence[Mapping[str, Any]]) -> FixedStore:
    """The harness's fixedStore: each container's merged hint as the case sets it."""
    store = FixedStore(policy_name)
    for raw_pod in pods:
        for raw in _all_containers(raw_pod):
            if raw.get("hint") is not None:
                store.hints[raw_pod["uid"], raw["name"]] = decode_hint(raw["hint"])
    return store


def _error(call: Callable[..., object], *args: object) -> str | None:
    try:
        call(*args)
    except Exception as err:  # every error is a field of the answer, as err.Error() is in Go
        return str(err)
    return None


def _each_container(
    pods: Sequence[Mapping[str, Any]],
    policy: Any,
    state: Any,
    assigned: Callable[[Pod, Container], Answer],
) -> list[Answer]:
    """Every container of every pod in order, init containers first: its hints, then Allocate's error,
    then what the state holds for it (``assigned``)."""
    out: list[Answer] = []
    for raw_pod in pods:
        the_pod = pod(raw_pod)
        for c in (*the_pod.init_containers, *the_pod.containers):
            hints = policy.get_topology_hints(state, the_pod, c)
            error = _error(policy.allocate, state, the_pod, c)
            out.append(
                {"pod": the_pod.uid, "name": c.name, "hints": encode_hints(hints), "error": error}
                | assigned(the_pod, c)
            )
    return out


def tm(case: Mapping[str, Any], version: str) -> Answer:
    """``topologymanager.NewManager``, scripted providers, ``Admit``, then each container's affinity."""
    topology = [(n["id"], n.get("distances")) for n in case["numa"]]
    try:
        manager = new_manager(
            topology,
            case["policy"],
            case["scope"],
            case.get("options"),
            feature_gates=case.get("feature_gates"),
            kubelet_version=version,
        )
    except Exception as err:  # NewManager's error, as the kubelet reports it
        return {"error": str(err)}
    for raw in case.get("providers") or ():
        per_container = {name: decode_hints(h) for name, h in (raw.get("containers") or {}).items()}
        manager.add_hint_provider(
            ScriptedProvider(
                container_hints=lambda c, hints=per_container: hints.get(c.name),  # type: ignore[misc]
                pod_hints=decode_hints(raw.get("pod")),
                fail_allocate_for=raw.get("fail_allocate") or None,
                fail_message=raw.get("allocate_error", ""),
            )
        )
    the_pod = pod(case["pod"])
    result = manager.admit(the_pod)
    affinity = {
        c.name: encode_hint(manager.get_affinity(the_pod.uid, c.name)) for c in the_pod.all_containers()
    }
    return {"admit": result.admit, "reason": result.reason, "message": result.message, "affinity": affinity}


def _drive(
    pods: Sequence[Mapping[str, Any]],
    build: Callable[[], tuple[Any, Any]],
    assigned: Callable[[Any, Pod, Container], Answer],
    summary: Callable[[Any], Answer],
) -> Answer:
    """The policy and its started state from ``build`` (its error is the answer), then every container
    (:func:`_each_container`), then what ``summary`` reads from the state."""
    try:
        policy, state = build()
    except Exception as err:  # the constructor's or Start's error, as the kubelet reports it
        return {"error": str(err)}
    containers = _each_container(pods, policy, state, lambda p, c: assigned(state, p, c))
    return {"containers": containers} | summary(state)


def _cpu_policy(case: Mapping[str, Any], version: str) -> tuple[StaticPolicy, CPUMemoryState]:
    policy = StaticPolicy(
        topology_from_vector(case["topology"]),
        case["num_reserved"],
        CPUSet.parse(case.get("reserved") or ""),
        fixed_store(case.get("tm_policy") or "none", case["pods"]),
        case.get("options"),
        case.get("feature_gates"),
        kubelet_version=version,
    )
    state = CPUMemoryState()
    policy.start(state)
    return policy, state


def _cpus(state: CPUMemoryState, the_pod: Pod, c: Container) -> Answer:
    cpus = state.get_cpu_set(the_pod.uid, c.name)
    return {"cpus": None if cpus is None else str(cpus)}


def cpu(case: Mapping[str, Any], version: str) -> Answer:
    """``cpumanager.NewStaticPolicy``, ``Start`` on an empty state, then per container
    ``GetTopologyHints`` and ``Allocate``; the shared pool at the end."""
    return _drive(
        case["pods"],
        lambda: _cpu_policy(case, version),
        _cpus,
        lambda state: {"default": str(state.get_default_cpu_set())},
    )


def encode_machine_state(machine_state: NUMANodeMap) -> dict[str, Any]:
    """As ``encoding/json`` writes ``state.NUMANodeMap``: the checkpoint's ``machineState``."""
    machine: dict[str, Any] = to_raw(MemoryManagerCheckpoint(machine_state=machine_state))["machineState"]
    return machine


def _memory_policy(case: Mapping[str, Any], version: str) -> tuple[MemoryStaticPolicy, MemoryMemoryState]:
    machine = MachineInfo(
        NUMANode(
            n["id"], n["memory"], {int(size): pages for size, pages in (n.get("hugepages") or {}).items()}
        )
        for n in case["machine"]
    )
    policy = MemoryStaticPolicy(
        machine,
        {int(node): dict(r) for node, r in (case.get("reserved") or {}).items()},
        fixed_store(case.get("tm_policy") or "none", case["pods"]),
        feature_gates=case.get("feature_gates"),
        kubelet_version=version,
    )
    state = MemoryMemoryState()
    policy.start(state)
    return policy, state


def _blocks(state: MemoryMemoryState, the_pod: Pod, c: Container) -> Answer:
    blocks = state.get_memory_blocks(the_pod.uid, c.name)
    if blocks is None:
        return {"blocks": None}
    # By type, as the harness sorts the kubelet's (which come in Go's map order).
    ordered = sorted(blocks, key=lambda b: b.type)
    return {"blocks": [{"numa": list(b.numa_affinity), "type": b.type, "size": b.size} for b in ordered]}


def memory(case: Mapping[str, Any], version: str) -> Answer:
    """``memorymanager.NewPolicyStatic``, ``Start`` on an empty state, then per container
    ``GetTopologyHints`` and ``Allocate``; the machine state at the end."""
    return _drive(
        case["pods"],
        lambda: _memory_policy(case, version),
        _blocks,
        lambda state: {"machine_state": encode_machine_state(state.get_machine_state())},
    )


MODELS: dict[str, Callable[[Mapping[str, Any], str], Answer]] = {"tm": tm, "cpu": cpu, "memory": memory}


def answer(case: Mapping[str, Any], version: str) -> Answer:
    return MODELS[case["model"]](case, version)
