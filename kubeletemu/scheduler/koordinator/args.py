"""``NodeNUMAResourceArgs`` from a KubeSchedulerConfiguration ``pluginConfig`` entry, as koordinator-sh/
koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` defaults, validates and uses them
(``pkg/scheduler/apis/config/v1/defaults.go``: ``SetDefaults_NodeNUMAResourceArgs``;
``validation/validation_pluginargs.go``: ``ValidateNodeNUMAResourceArgs``; ``nodenumaresource/plugin.go``:
``NewWithOptions``).

Defaults: ``defaultCPUBindPolicy: FullPCPUs``; ``scoringStrategy`` and ``numaScoringStrategy`` each
``LeastAllocated`` over cpu and memory with weight 1 — but only when the whole strategy is absent: a
strategy given without ``resources`` has no weights and every score is 0. The NUMA scorer takes its *type*
from ``numaScoringStrategy`` and its *weights* from ``scoringStrategy`` (``resourceStrategyTypeMap`` reads
``args.ScoringStrategy.Resources`` for both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeletemu.config import fields
from kubeletemu.golang import go_quote
from kubeletemu.scheduler.koordinator.extension import CPU_BIND_FULL_PCPUS, CPU_BIND_SPREAD_BY_PCPUS
from kubeletemu.scheduler.koordinator.scoring import LEAST_ALLOCATED, MOST_ALLOCATED, Scorer

DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES


@dataclass(frozen=True)
class NodeNUMAResourceArgs:
    default_cpu_bind_policy: str = CPU_BIND_FULL_PCPUS
    scoring_strategy: ScoringStrategy = ScoringStrategy()
    numa_scoring_strategy: ScoringStrategy = ScoringStrategy()

    def scorer(self) -> Scorer:
        return Scorer(self.scoring_strategy.type, dict(self.scoring_strategy.resources))

    def numa_scorer(self) -> Scorer:
        """The NUMA-level scorer: ``numaScoringStrategy.type`` with ``scoringStrategy``'s weights."""
        return Scorer(self.numa_scoring_strategy.type, dict(self.scoring_strategy.resources))

    def numa_allocate_strategy(self) -> str:
        """``GetDefaultNUMAAllocateStrategy``: MostAllocated only when the NUMA scoring strategy is."""
        return MOST_ALLOCATED if self.numa_scoring_strategy.type == MOST_ALLOCATED else LEAST_ALLOCATED

    @classmethod
    def from_args(cls, raw: Mapping[str, Any] | None, where: fields.Reporter) -> NodeNUMAResourceArgs:
        """The ``args`` of a ``pluginConfig`` entry named ``NodeNUMAResource`` (camelCase fields)."""
        args = fields.mapping(where, "", raw)
        policy = args.get("defaultCPUBindPolicy")
        bind = CPU_BIND_FULL_PCPUS if policy is None else fields.string(where, "defaultCPUBindPolicy", policy)
        if bind not in ("", CPU_BIND_FULL_PCPUS, CPU_BIND_SPREAD_BY_PCPUS):
            raise where.error(
                "defaultCPUBindPolicy",
                f"Invalid value: {go_quote(bind)}: must specified CPU bind policy FullPCPUs or SpreadByPCPUs",
            )
        return cls(
            default_cpu_bind_policy=bind,
            scoring_strategy=_strategy(where, "scoringStrategy", args.get("scoringStrategy"), "scoring"),
            numa_scoring_strategy=_strategy(
                where, "numaScoringStrategy", args.get("numaScoringStrategy"), "numa scoring"
            ),
        )


def _strategy(where: fields.Reporter, path: str, raw: Any, what: str) -> ScoringStrategy:
    if raw is None:
        return ScoringStrategy()
    strategy = fields.mapping(where, path, raw)
    kind = fields.string(where, f"{path}.type", strategy.get("type", ""))
    resources = []
    for i, item in enumerate(fields.sequence(where, f"{path}.resources", strategy.get("resources"))):
        spec = fields.mapping(where, f"{path}.resources[{i}]", item)
        name = fields.string(where, f"{path}.resources[{i}].name", spec.get("name", ""))
        weight = fields.integer(where, f"{path}.resources[{i}].weight", spec.get("weight", 0))
        if weight <= 0 or weight > 100:
            raise where.error(
                f"{path}.resources[{i}].weight",
                f"Invalid value: {weight}: resource weight of {name} not in valid range (0, 100]",
            )
        resources.append((name, weight))
    if kind not in (LEAST_ALLOCATED, MOST_ALLOCATED):
        # NewWithOptions: resourceStrategyTypeMap has no BalancedAllocation (nor an empty type).
        raise where.error(f"{path}.type", f"{what} strategy {kind} is not supported")
    return ScoringStrategy(kind, tuple(resources))
