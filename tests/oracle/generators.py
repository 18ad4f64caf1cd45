"""Seeded random cases for the kubelet oracle, one generator per model.

The shapes come from what the conformance work already exercises (tests/topologymanager's merge
properties: small NUMA machines, small pools of masks so that providers agree often, nil versus empty hint
lists; tests/cpumanager's conformance topologies from the kubelet's own tests; tests/memorymanager's
two-size hugepage machines), widened to every policy, scope and option the kubelet at 1.37 knows. A case
is plain JSON, read alike by the Go harness and by tests/oracle/ours.py.

Option maps carry at most one option that can be refused: the kubelet ranges over the map in Go's random
order and reports the first refusal it meets, so with two the answer would not be a function of the case.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

Case = dict[str, Any]

TM_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TM_SCOPES = ("container", "pod")
RESOURCES = ("cpu", "memory", "example.com/gpu")


def _maybe(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def _mask(rng: random.Random, nodes: int, spare_bit: bool = True) -> list[int]:
    """A non-empty subset of the nodes; now and then one bit beyond the machine (the AND with the
    default affinity drops it)."""
    limit = nodes + 1 if spare_bit and _maybe(rng, 0.05) else nodes
    bits = [b for b in range(limit) if _maybe(rng, 0.45)]
    return bits or [rng.randrange(limit)]


def _hint(rng: random.Random, pool: list[list[int] | None]) -> Case:
    return {"affinity": rng.choice(pool), "preferred": _maybe(rng, 0.6)}


def _provider_hints(rng: random.Random, pool: list[list[int] | None]) -> Case | None:
    """A provider's map: nil (no opinion), or per resource nil ("no preference"), [] ("cannot
    satisfy") or 1-3 hints."""
    if _maybe(rng, 0.15):
        return None
    out: Case = {}
    for name in rng.sample(RESOURCES, rng.randint(0, 2)):
        roll = rng.random()
        out[name] = (
            None
            if roll < 0.1
            else []
            if roll < 0.15
            else [_hint(rng, pool) for _ in range(rng.randint(1, 3))]
        )
    return out


def _distances(rng: random.Random, nodes: int) -> list[list[int]]:
    rows = [[10] * nodes for _ in range(nodes)]
    for a in range(nodes):
        for b in range(a + 1, nodes):
            # A small range, so that equal average distances (ties) are common.
            rows[a][b] = rows[b][a] = rng.choice((11, 12, 20, 21, 32))
    return rows


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def tm_case(rng: random.Random) -> Case:
    nodes = rng.choice((1, 2, 2, 3, 4, 4)) if not _maybe(rng, 0.05) else rng.choice((8, 9))
    rows = _distances(rng, nodes)
    numa = [{"id": n, "distances": None if _maybe(rng, 0.03) else rows[n]} for n in range(nodes)]
    options: dict[str, str] = {}
    if _maybe(rng, 0.5):
        options["prefer-closest-numa-nodes"] = rng.choice(("true", "true", "false", "True", "1"))
    if _maybe(rng, 0.1):
        options["max-allowable-numa-nodes"] = rng.choice(("8", "9", "16", "4"))
    if _maybe(rng, 0.02):
        # Exactly one refusable option: an unknown one, or a malformed value of a known one.
        options = rng.choice(({"unknown-option": "true"}, {"prefer-closest-numa-nodes": "maybe"}))
    init = _names("init", rng.choice((0, 0, 1, 2)))
    app = _names("app", rng.randint(1, 3))
    sidecars = {name for name in init if _maybe(rng, 0.3)}
    pool: list[list[int] | None] = [
        None if _maybe(rng, 0.1) else _mask(rng, nodes) for _ in range(rng.randint(1, 4))
    ]
    providers = []
    for _ in range(rng.randint(0, 3)):
        provider: Case = {
            "containers": {
                name: _provider_hints(rng, pool) for name in (*init, *app) if not _maybe(rng, 0.05)
            },
            "pod": _provider_hints(rng, pool),
        }
        if _maybe(rng, 0.05):
            provider["fail_allocate"] = rng.choice((*init, *app))
            provider["allocate_error"] = "device plugin unavailable"
        providers.append(provider)
    policy = rng.choice(TM_POLICIES) if not _maybe(rng, 0.01) else "unknown-policy"
    scope = rng.choice(TM_SCOPES) if not _maybe(rng, 0.01) else "node"
    return {
        "model": "tm",
        "numa": numa,
        "policy": policy,
        "scope": scope,
        "options": options,
        "pod": {
            "uid": "pod-0",
            "init_containers": [
                {"name": n, "restart_policy": "Always" if n in sidecars else None} for n in init
            ],
            "containers": [{"name": n} for n in app],
        },
        "providers": providers,
    }


# --- CPU -------------------------------------------------------------------------------------------

CPU_OPTIONS_ALPHA = ("align-by-socket", "distribute-cpus-across-cores")
CPU_OPTIONS_BETA = ("distribute-cpus-across-numa",)
CPU_OPTIONS_GA = ("full-pcpus-only", "strict-cpu-reservation", "prefer-align-cpus-by-uncorecache")


@cache
def conformance_topologies() -> tuple[Case, ...]:
    """The kubelet's own test machines (tests/conformance/cpu_assignment.json)."""
    path = Path(__file__).resolve().parent.parent / "conformance" / "cpu_assignment.json"
    return tuple(json.loads(path.read_text(encoding="utf-8"))["topologies"].values())


def random_cpu_topology(rng: random.Random) -> Case:
    """A machine as sysfs numbers it: thread t of core c is CPU c + t * cores. NUMA nodes within a socket
    (or, now and then, one NUMA node spanning two sockets), uncore caches within a NUMA node."""
    sockets = rng.choice((1, 1, 2, 2, 4))
    numa_per_socket = rng.choice((1, 1, 2))
    span = sockets > 1 and numa_per_socket == 1 and _maybe(rng, 0.1)
    cores_per_numa = rng.choice((1, 2, 2, 3, 4, 4, 6))
    threads = rng.choice((1, 2, 2))
    uncore_per_numa = rng.choice((1, 1, 2)) if cores_per_numa % 2 == 0 else 1
    cores = sockets * numa_per_socket * cores_per_numa
    rows = []
    for core in range(cores):
        numa = core // cores_per_numa
        socket = numa // numa_per_socket
        if span:
            numa = socket // 2
        uncore = core // (cores_per_numa // uncore_per_numa)
        for thread in range(threads):
            rows.append([core + thread * cores, core, socket, numa, uncore])
    rows.sort()
    return {
        "num_cpus": cores * threads,
        "num_cores": cores,
        "num_sockets": sockets,
        "num_numa_nodes": len({r[3] for r in rows}),
        "num_uncore_cache": len({r[4] for r in rows}),
        "cpus": rows,
    }


def _cpu_options(rng: random.Random) -> tuple[dict[str, str], dict[str, bool]]:
    gates = {"CPUManagerPolicyAlphaOptions": not _maybe(rng, 0.1)}
    if _maybe(rng, 0.05):
        gates["CPUManagerPolicyBetaOptions"] = False
    options: dict[str, str] = {}
    for name in (*CPU_OPTIONS_ALPHA, *CPU_OPTIONS_BETA, *CPU_OPTIONS_GA):
        if _maybe(rng, 0.25):
            options[name] = "true" if not _maybe(rng, 0.1) else "false"
    refused = [n for n in options if n in CPU_OPTIONS_ALPHA and not gates["CPUManagerPolicyAlphaOptions"]]
    refused += [
        n for n in options if n in CPU_OPTIONS_BETA and not gates.get("CPUManagerPolicyBetaOptions", True)
    ]
    for name in refused[1:]:
        del options[name]
    if not refused and _maybe(rng, 0.02):
        options[rng.choice(("unknown-option", "full-pcpus-only"))] = "yes"
    return options, gates


def _guaranteed(name: str, cpu: str, memory: str, **extra: str) -> Case:
    resources = {"cpu": cpu, "memory": memory, **extra}
    return {"name": name, "requests": dict(resources), "limits": dict(resources)}


def _cpu_container(rng: random.Random, name: str, cpus: int, nodes: int) -> Case:
    roll = rng.random()
    if roll < 0.75:
        c = _guaranteed(name, str(rng.randint(1, max(1, cpus // 2))), "1Gi")
    elif roll < 0.85:
        c = _guaranteed(name, rng.choice(("500m", "1500m", "2500m")), "1Gi")
    elif roll < 0.95:
        # Burstable: no exclusive CPUs.
        n = rng.randint(1, 4)
        c = {
            "name": name,
            "requests": {"cpu": str(n), "memory": "1Gi"},
            "limits": {"cpu": str(n + 1), "memory": "1Gi"},
        }
    else:
        c = _guaranteed(name, str(rng.randint(cpus // 2 + 1, cpus + 2)), "1Gi")
    if _maybe(rng, 0.8):
        c["hint"] = {
            "affinity": None if _maybe(rng, 0.1) else _mask(rng, nodes, spare_bit=False),
            "preferred": _maybe(rng, 0.7),
        }
    return c


def _pods(rng: random.Random, make: Callable[[str], Case], count: int) -> list[Case]:
    """``count`` pods, each with 0-2 init containers (some sidecars) and 1-3 app containers; a pod is
    Guaranteed only if all its containers are, which the per-container draws decide."""
    pods = []
    for p in range(count):
        init = [make(f"init{i}") for i in range(rng.choice((0, 0, 0, 1, 2)))]
        for c in init:
            if _maybe(rng, 0.3):
                c["restart_policy"] = "Always"
        pods.append(
            {
                "uid": f"pod-{p}",
                "init_containers": init,
                "containers": [make(f"app{i}") for i in range(rng.randint(1, 3))],
            }
        )
    return pods


def cpu_case(rng: random.Random) -> Case:
    topology = rng.choice(conformance_topologies()) if _maybe(rng, 0.3) else random_cpu_topology(rng)
    # The NUMA nodes the CPUs are on (a test machine may declare none in its header).
    cpus, nodes = topology["num_cpus"], 1 + max(row[3] for row in topology["cpus"])
    options, gates = _cpu_options(rng)
    num_reserved = rng.choice((0, 1, 1, 2, 2, 4)) if cpus > 4 else rng.choice((0, 1))
    reserved = ""
    if num_reserved and _maybe(rng, 0.2):
        reserved = ",".join(str(c) for c in sorted(rng.sample(range(cpus), num_reserved)))
    return {
        "model": "cpu",
        "feature_gates": gates,
        "topology": topology,
        "num_reserved": num_reserved,
        "reserved": reserved,
        "options": options,
        "tm_policy": rng.choice(TM_POLICIES),
        "pods": _pods(rng, lambda name: _cpu_container(rng, name, cpus, nodes), rng.randint(1, 4)),
    }


# --- Memory ----------------------------------------------------------------------------------------

Mi = 1024 * 1024
Gi = 1024 * Mi


def _memory_container(rng: random.Random, name: str, node_memory: int, nodes: int, sizes: list[int]) -> Case:
    # Mostly within one node (a quarter of it at most), now and then spanning several.
    quarter = max(1, node_memory // (1024 * Mi))
    memory = rng.randint(1, quarter if not _maybe(rng, 0.15) else 6 * quarter) * 256 * Mi
    extra: dict[str, str] = {}
    if 2048 in sizes and _maybe(rng, 0.3):
        extra["hugepages-2Mi"] = f"{rng.randint(1, 256) * 2}Mi"
    if 1048576 in sizes and _maybe(rng, 0.3):
        extra["hugepages-1Gi"] = f"{rng.randint(1, 3)}Gi"
    roll = rng.random()
    if roll < 0.85:
        c = _guaranteed(name, str(rng.randint(1, 4)), str(memory), **extra)
    else:
        c = {
            "name": name,
            "requests": {"cpu": "1", "memory": str(memory)},
            "limits": {"cpu": "2", "memory": str(memory)},
        }
    if _maybe(rng, 0.8):
        c["hint"] = {
            "affinity": None if _maybe(rng, 0.1) else _mask(rng, nodes, spare_bit=False),
            "preferred": _maybe(rng, 0.7),
        }
    return c


def memory_case(rng: random.Random) -> Case:
    """A machine as sysfs shows it: every NUMA node lists the same hugepage sizes (0 pages allowed), and
    its hugepages fit in its memory (the kernel takes them from it); the reserved memory may still exceed
    what the hugepages leave (a misconfiguration the kubelet accepts, wrapping the node's allocatable
    below 2^64). Containers ask only for hugepage sizes the machine has (a pod asking for another has
    no capacity for it and is refused by the kubelet's resource admission before the Memory Manager)."""
    nodes = rng.choice((1, 2, 2, 2, 3, 4))
    node_memory = rng.choice((2, 4, 8)) * Gi
    sizes = [size for size in (2048, 1048576) if _maybe(rng, 0.5)]
    machine = []
    reserved: dict[str, dict[str, int]] = {}
    for n in range(nodes):
        hugepages: dict[str, int] = {}
        left = node_memory - 256 * Mi
        # Now and then nearly all of the node in hugepages, so that reserved memory can exceed the rest.
        share = 1 if _maybe(rng, 0.2) else 2
        for size in sizes:
            page = size * 1024
            hugepages[str(size)] = pages = rng.randint(0, min(512, left // page // share))
            left -= pages * page
        machine.append({"id": n, "memory": node_memory, "hugepages": hugepages})
        if _maybe(rng, 0.9):
            reserved[str(n)] = {"memory": rng.choice((128, 256, 512, 1024)) * Mi}
            if "2048" in hugepages and _maybe(rng, 0.1):
                reserved[str(n)]["hugepages-2Mi"] = 64 * Mi
    return {
        "model": "memory",
        "machine": machine,
        "reserved": reserved,
        "tm_policy": rng.choice(TM_POLICIES),
        "pods": _pods(
            rng, lambda name: _memory_container(rng, name, node_memory, nodes, sizes), rng.randint(1, 4)
        ),
    }


GENERATORS: dict[str, Callable[[random.Random], Case]] = {
    "tm": tm_case,
    "cpu": cpu_case,
    "memory": memory_case,
}


def cases(model: str, seed: int, count: int) -> Iterator[Case]:
    """``count`` cases of ``model`` from ``seed``: the same seed gives the same cases on every machine
    (``random.Random`` is specified to be reproducible for a given seed)."""
    rng = random.Random(f"{model}:{seed}")
    generate = GENERATORS[model]
    for _ in range(count):
        yield generate(rng)
