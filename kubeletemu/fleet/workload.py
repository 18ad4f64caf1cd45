"""The workload of a fleet run: the arrival process (Poisson arrivals from weighted templates, or a trace)
and the pod objects the controllers create for their slots.

The arrivals, their templates and lifetimes, and every pod's start-up latency come from the seed alone
(independent streams), so every scheduler of a matrix meets the same pods and the same kubelet timings.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass

from kubeletemu.fleet.controllers.replicaset import Slot
from kubeletemu.fleet.kubelet import PENDING
from kubeletemu.fleet.spec import WorkloadSpec
from kubeletemu.pod import Pod


def stable_seed(*parts: object) -> int:
    """A seed from values (not from Python's salted ``hash``): the same on every run and machine."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass(frozen=True)
class Arrival:
    at: float
    name: str
    template: int  # index into the workload's parsed pods
    lifetime: float | None


def arrivals(workload: WorkloadSpec, seed: int) -> list[Arrival]:
    """The arrival process's pods in arrival order, from the seed alone."""
    rng = random.Random(stable_seed("workload", seed))
    if workload.trace:
        return [
            Arrival(e.at, json.loads(e.manifest)["metadata"]["name"], i, e.lifetime)
            for i, e in enumerate(workload.trace)
        ]
    indices = [i for i, t in enumerate(workload.templates) if t.replicas is None]
    weights = [workload.templates[i].weight for i in indices]
    out = []
    now = 0.0
    for n in range(workload.total):
        now += rng.expovariate(workload.rate)
        [template] = rng.choices(indices, weights)
        out.append(
            Arrival(
                now, f"{workload.templates[template].name}-{n:05d}", template, workload.lifetime.draw(rng)
            )
        )
    return out


@dataclass(eq=False)
class PodRecord:
    """One pod object: its slot, the API object as last written (``pod``: phase and node), when it was
    created (``creation_second``: the API's timestamp, to the second). Its scheduling attempts are the
    queue's (``QueuedPodInfo.attempts``) and the run's count."""

    pod: Pod
    slot: Slot
    created: float
    bound_at: float | None = None
    node: int | None = None
    admitted: bool = False
    exclusive: bool = False  # the admission wrote a resource manager's state file
    binds: int = 0  # binding cycles begun for it (each draws its own latency and outcome)

    @property
    def key(self) -> str:
        return f"{self.pod.namespace}/{self.pod.name}"

    @property
    def name(self) -> str:
        return self.pod.name

    @property
    def creation_second(self) -> int:
        return int(self.created)

    @property
    def phase(self) -> str:
        return self.pod.phase or PENDING
