"""What a simulation replays: a stream of pods (templates with repeat counts, and removals) under a matrix
of kubelet versions × Topology Manager policies × scopes × option sets.

Pods get deterministic names and UIDs, so every configuration sees the same stream and a run's output
depends on nothing but its inputs: a template repeated ``n > 1`` times yields ``<name>-1`` … ``<name>-n``
(numbering continues when a later step repeats the same template), its UIDs are UUID5s of the instance.
"""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kubeletemu.config import Config
from kubeletemu.pod import Pod
from kubeletemu.simulate.errors import SimulationError
from kubeletemu.topologymanager import POLICY_NAMES, SCOPE_NAMES
from kubeletemu.versions.version import parse_version

# The namespace of the instances' UUID5s (any fixed UUID would do; this one is uuid5(NAMESPACE_DNS, ...)).
_UID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "simulate.kubeletemu.io")


@dataclass(frozen=True)
class PodStep:
    """Admit ``repeat`` instances of ``template``, one after the other."""

    template: Pod
    repeat: int = 1

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise SimulationError(f'pod "{self.template.name}": repeat must be at least 1, got {self.repeat}')


@dataclass(frozen=True)
class RemoveStep:
    """Remove up to ``count`` admitted pods named ``name`` (an instance, ``web-3``) or made from the
    template ``name`` (``web``), oldest first. Pods that were rejected are simply not there to remove."""

    name: str
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1:
            raise SimulationError(f'remove "{self.name}": count must be at least 1, got {self.count}')


Step = PodStep | RemoveStep


@dataclass(frozen=True)
class Instance:
    """One pod of the stream as it is admitted."""

    step: int
    template: str  # the template's name
    pod: Pod

    @property
    def key(self) -> str:
        return f"{self.pod.namespace}/{self.pod.name}"


def expand(stream: Sequence[Step]) -> Iterator[tuple[int, Step, list[Instance]]]:
    """Each step with the instances it admits (none for a removal), names and UIDs assigned."""
    counters: dict[tuple[str, str], itertools.count[int]] = {}
    for index, step in enumerate(stream):
        if isinstance(step, RemoveStep):
            yield index, step, []
            continue
        template = step.template
        counter = counters.setdefault((template.namespace, template.name), itertools.count(1))
        instances = []
        for _ in range(step.repeat):
            number = next(counter)
            name = template.name if step.repeat == 1 and number == 1 else f"{template.name}-{number}"
            uid = str(uuid.uuid5(_UID_NAMESPACE, f"{index}/{template.namespace}/{name}"))
            instances.append(
                Instance(index, template.name, dataclasses.replace(template, name=name, uid=uid))
            )
        yield index, step, instances


def _frozen(options: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(sorted(options.items())))


@dataclass(frozen=True)
class Configuration:
    """One cell of the matrix: the kubelet version and Topology Manager settings a node runs with
    (``kubelet_version`` "": the base configuration's)."""

    policy: str
    scope: str
    options: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    kubelet_version: str = ""

    @property
    def options_label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.options.items())) or "-"

    @property
    def label(self) -> str:
        return f"{self.policy}/{self.scope}/{self.options_label}"


@dataclass(frozen=True)
class Matrix:
    """Kubelet versions × policies × scopes × option sets, in that order; an empty axis keeps the base
    configuration's."""

    policies: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    options: tuple[Mapping[str, str], ...] = ()
    kubelet_versions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # "v1.34.2" -> "1.34"; anything unsupported names the supported range.
        try:
            parsed = tuple(parse_version(v) for v in self.kubelet_versions)
        except ValueError as err:
            raise SimulationError(str(err)) from None
        object.__setattr__(self, "kubelet_versions", parsed)
        for policy in self.policies:
            if policy not in POLICY_NAMES:
                raise SimulationError(f'unknown policy "{policy}": expected one of {", ".join(POLICY_NAMES)}')
        for scope in self.scopes:
            if scope not in SCOPE_NAMES:
                raise SimulationError(f'unknown scope "{scope}": expected one of {", ".join(SCOPE_NAMES)}')

    def configurations(self, base: Config) -> list[Configuration]:
        kubelet = base.kubelet
        policies = self.policies or (kubelet.topology_manager_policy,)
        scopes = self.scopes or (kubelet.topology_manager_scope,)
        option_sets = self.options or (kubelet.topology_manager_policy_options,)
        versions = self.kubelet_versions or (base.emulator.kubelet_version,)
        return [
            Configuration(policy, scope, _frozen(options), version)
            for version, policy, scope, options in itertools.product(versions, policies, scopes, option_sets)
        ]
