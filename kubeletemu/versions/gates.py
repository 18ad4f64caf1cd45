"""Feature gates as the kubelet of a chosen version sees them, from ``data/feature_gates.json``.

The data is generated (:mod:`kubeletemu.versions.generate`) from the kubelet's versioned feature specs:
k8s.io/kubernetes ``pkg/features/kube_features.go`` plus the component-base (logs, metrics, zpages) and
client-go gates registered into the same ``--feature-gates`` flag. Which commit each version was read at is
recorded in the file (:func:`provenance`).

Semantics mirrored from k8s.io/component-base ``featuregate/feature_gate.go`` (v0.33.0 … v0.37.2):

* the spec in effect is the last entry whose ``Version`` is <= the emulated version
  (``featureSpecAtEmulationVersion``); the kubelet emulates its own binary version. From v0.37 an entry
  may carry a ``MinCompatibilityVersion`` and is then skipped unless the minimum compatibility version
  is at least that (``featureSpecAtEmulationAndMinCompatVersion``); the kubelet's is one minor below its
  binary version (``NewVersionedFeatureGate``; it has no flag to change it), so such an entry of its own
  release is never in effect (1.37.2: ``DRAFractionalCapacityRange``'s on-by-default Beta);
* ``AllAlpha`` and ``AllBeta`` are known to every gate set (``defaultFeatures``), alpha/beta, off;
* ``SetFromMap`` refuses an unknown name (``unrecognized feature gate: NAME``, and stops there), and a
  locked gate set to the other value (``cannot set feature gate NAME to V, feature is locked to D``);
* from v0.35.0, after a successful set, every enabled gate whose declared dependencies
  (``defaultKubernetesFeatureGateDependencies``) are not all enabled is refused
  (``NAME is enabled, but depends on features that are disabled: [A B]``).

Several refusals are joined like ``utilerrors.NewAggregate`` (``[e1, e2]``). Go walks maps in random
order; here settings are checked in the order given and dependency refusals sorted by gate name.
``PreAlpha`` refusals cannot occur: no source carries a spec newer than its own binary version.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

from kubeletemu.versions.version import MASTER, parse_version

DATA_FILE = "data/feature_gates.json"
ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"
# component-base's defaultFeatures (Version 0.0): in every gate set.
_SPECIAL: Mapping[str, tuple[str, bool]] = {ALL_ALPHA: ("Alpha", False), ALL_BETA: ("Beta", False)}
# Dependencies are enforced from component-base v0.35.0 on.
_DEPENDENCIES_FROM = (1, 35)


@dataclass(frozen=True)
class GateSpec:
    """The spec in effect: ``default``, ``stage`` (Alpha, Beta, GA, Deprecated) and ``locked``
    (``LockToDefault``)."""

    default: bool
    stage: str
    locked: bool


class FeatureGateError(ValueError):
    """A feature-gate setting the kubelet of that version refuses at start-up; ``str()`` is its text."""


@cache
def _data() -> Mapping[str, Any]:
    from importlib import resources

    text = resources.files("kubeletemu.versions").joinpath(DATA_FILE).read_text(encoding="utf-8")
    loaded: Mapping[str, Any] = json.loads(text)
    return loaded


def _entry(version: str) -> Mapping[str, Any]:
    entry: Mapping[str, Any] = _data()["versions"][parse_version(version)]
    return entry


def binary_version(version: str) -> str:
    """The kubelet binary version a supported version's data comes from (``master``: ``1.37``)."""
    return str(_entry(version)["binaryVersion"])


def provenance(version: str) -> Mapping[str, Any]:
    """Where the version's gates were read: ``source`` (repo, path, commit, pinned) and ``extraSources``."""
    entry = _entry(version)
    return {"source": entry["source"], "extraSources": entry["extraSources"]}


def _key(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


@cache
def _gates(version: str) -> Mapping[str, GateSpec]:
    entry = _entry(version)
    emulated = _key(entry["binaryVersion"])
    out: dict[str, GateSpec] = {}
    for name, specs in entry["gates"].items():
        min_compat = (emulated[0], emulated[1] - 1)
        in_effect = [
            s
            for s in specs
            if _key(s["version"]) <= emulated
            and ("minCompatibilityVersion" not in s or _key(s["minCompatibilityVersion"]) <= min_compat)
        ]
        if in_effect:
            last = in_effect[-1]
            out[name] = GateSpec(bool(last["default"]), str(last["stage"]), bool(last["locked"]))
        else:  # featureSpecAtEmulationVersion's fallback; not reached by the current data
            out[name] = GateSpec(False, "PreAlpha", False)
    for name, (stage, default) in _SPECIAL.items():
        out[name] = GateSpec(default, stage, False)
    return MappingProxyType(dict(sorted(out.items())))


def feature_gates(version: str = MASTER) -> dict[str, GateSpec]:
    """Every gate the kubelet of ``version`` knows, with the spec in effect at that version.

    ``1.37`` is k8s.io/kubernetes v1.37.2, and so is ``master`` (master itself is not served by the module
    proxy; see :func:`provenance`); ``1.36`` is master three days after the release-1.36 branch cut, whose
    specs v1.36.3 has too. Raises ``ValueError`` for an unsupported version.
    """
    return dict(_gates(parse_version(version)))


def default_gates(version: str = MASTER, names: Iterable[str] | None = None) -> dict[str, bool]:
    """Gate defaults at ``version``: all gates, or only ``names`` that the version knows."""
    gates = _gates(parse_version(version))
    wanted = gates if names is None else [n for n in names if n in gates]
    return {name: gates[name].default for name in wanted}


def dependencies(version: str = MASTER) -> dict[str, tuple[str, ...]]:
    """Declared dependencies enforced at ``version`` (empty before 1.35)."""
    entry = _entry(version)
    if _key(entry["binaryVersion"]) < _DEPENDENCIES_FROM:
        return {}
    return {name: tuple(deps) for name, deps in entry["dependencies"].items()}


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


def _aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, several de-duplicated in ``[…]``."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def enabled_gates(version: str, settings: Mapping[str, bool]) -> dict[str, bool]:
    """``SetFromMap`` then ``Enabled`` for every gate: the effective gates of a kubelet of ``version``
    started with ``settings``. Raises :class:`FeatureGateError` with the kubelet's text."""
    gates = _gates(parse_version(version))
    errors: list[str] = []
    enabled: dict[str, bool] = {}
    for name, value in settings.items():
        spec = gates.get(name)
        if spec is None:
            errors.append(f"unrecognized feature gate: {name}")
            raise FeatureGateError(_aggregate(errors))
        if spec.locked and spec.default != value:
            errors.append(
                f"cannot set feature gate {name} to {_go_bool(value)}, "
                f"feature is locked to {_go_bool(spec.default)}"
            )
            continue
        if name in _SPECIAL:
            stage = _SPECIAL[name][0]
            for other, other_spec in gates.items():
                if other not in _SPECIAL and other_spec.stage == stage:
                    enabled.setdefault(other, value)
        enabled[name] = value
    if errors:
        raise FeatureGateError(_aggregate(errors))
    effective = {name: enabled.get(name, spec.default) for name, spec in gates.items()}
    for name, deps in sorted(dependencies(version).items()):
        if not effective.get(name, False):
            continue
        disabled = [dep for dep in deps if not effective.get(dep, False)]
        if disabled:
            errors.append(
                f"{name} is enabled, but depends on features that are disabled: [{' '.join(disabled)}]"
            )
    if errors:
        raise FeatureGateError(_aggregate(errors))
    return effective


def effective_gates(version: str, settings: Mapping[str, bool]) -> dict[str, bool]:
    """What :func:`enabled_gates` gives for valid ``settings``, without refusing anything: the gates'
    defaults at ``version`` (``AllAlpha``/``AllBeta`` expanded), the settings winning. For the managers,
    once the configuration has been checked; a name the version does not know is passed through."""
    return dict(_effective(parse_version(version), tuple(settings.items())))


@lru_cache(maxsize=64)
def _effective(version: str, settings: tuple[tuple[str, bool], ...]) -> Mapping[str, bool]:
    gates = _gates(version)
    out = {name: spec.default for name, spec in gates.items()}
    explicit = dict(settings)
    for special, (stage, _default) in _SPECIAL.items():
        if special in explicit:
            for name, spec in gates.items():
                if name not in _SPECIAL and spec.stage == stage:
                    out[name] = explicit[special]
    out.update(explicit)
    return MappingProxyType(out)


def validate_feature_gates(version: str, settings: Mapping[str, bool]) -> None:
    """Refuse ``settings`` as the kubelet of ``version`` does at start-up (see the module docstring)."""
    enabled_gates(version, settings)
