"""Reading the configuration: one file with one or two YAML documents, or several files.

Documents are told apart by ``kind``; each needs its ``apiVersion`` (the kubelet itself refuses a
``KubeletConfiguration`` without ``apiVersion: kubelet.config.k8s.io/v1beta1``). A kind given twice is an
error; a kind not given at all takes its defaults. Empty documents (a stray ``---``) are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kubeletemu.config import emulator_config, kubelet_config
from kubeletemu.config.emulator_config import EmulatorConfiguration, parse_emulator_configuration
from kubeletemu.config.errors import ConfigError
from kubeletemu.config.fields import Where
from kubeletemu.config.kubelet_config import KubeletConfiguration, parse_kubelet_configuration
from kubeletemu.manifest.documents import YAMLSyntaxError, yaml_documents
from kubeletemu.topologymanager.policy_options import PolicyOptionsError, check_options_gate
from kubeletemu.versions.gates import FeatureGateError, effective_gates, validate_feature_gates

_KINDS: dict[str, tuple[str, Callable[[Mapping[str, Any], Where], Any]]] = {
    kubelet_config.KIND: (kubelet_config.API_VERSION, parse_kubelet_configuration),
    emulator_config.KIND: (emulator_config.API_VERSION, parse_emulator_configuration),
}


@dataclass(frozen=True)
class Config:
    kubelet: KubeletConfiguration = field(default_factory=KubeletConfiguration)
    emulator: EmulatorConfiguration = field(default_factory=EmulatorConfiguration)
    # Where each kind came from (``file`` or ``file (document 2)``); absent kinds are defaults.
    origins: Mapping[str, str] = field(default_factory=dict)


def load_config(paths: Sequence[str], kubelet_version: str | None = None) -> Config:
    """Read and validate the configuration files; raises :class:`ConfigError`. ``kubelet_version`` (a
    parsed ``--kubelet-version``) wins over the file's ``kubeletVersion``, and ``featureGates`` are checked
    as that kubelet checks them."""
    documents: list[tuple[Where, Any]] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as err:
            raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
        except UnicodeDecodeError as err:
            raise ConfigError(f"{path}: not UTF-8 text: {err.reason} at byte {err.start}") from None
        documents.extend(_documents(text, path))
    return _build(documents, kubelet_version)


def parse_config(text: str, source: str = "<config>") -> Config:
    """Like :func:`load_config` for text already in memory."""
    return _build(_documents(text, source))


def _documents(text: str, source: str) -> list[tuple[Where, Any]]:
    try:
        loaded = yaml_documents(text)
    except YAMLSyntaxError as err:
        raise ConfigError(f"{source}: invalid YAML: {err}") from None
    numbered = len(loaded) > 1
    return [
        (Where(f"{source} (document {index})" if numbered else source), doc)
        for index, doc in enumerate(loaded, start=1)
        if doc is not None
    ]


def _build(documents: list[tuple[Where, Any]], kubelet_version: str | None = None) -> Config:
    parsed: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for where, doc in documents:
        if not isinstance(doc, Mapping):
            raise where.error("", f"expected a mapping with apiVersion and kind, got {type(doc).__name__}")
        kind = doc.get("kind")
        if kind not in _KINDS:
            supported = " or ".join(_KINDS)
            problem = "required" if kind is None else f"{kind!r} is not supported"
            raise where.error("kind", f"{problem}: expected {supported}")
        api_version, parse = _KINDS[kind]
        if doc.get("apiVersion") != api_version:
            found = "missing" if doc.get("apiVersion") is None else f"{doc['apiVersion']!r} is not supported"
            raise where.error("apiVersion", f"{found}: {kind} needs apiVersion {api_version}")
        if kind in parsed:
            raise where.error("kind", f"a second {kind}; the first is in {origins[kind]}")
        parsed[kind] = parse(doc, where)
        origins[kind] = where.source
    emulator = parsed.get(emulator_config.KIND, EmulatorConfiguration())
    if kubelet_version is not None:
        emulator = replace(emulator, kubelet_version=kubelet_version)
    config = Config(
        kubelet=parsed.get(kubelet_config.KIND, KubeletConfiguration()),
        emulator=emulator,
        origins=origins,
    )
    check_feature_gates(config)
    return config


def check_feature_gates(config: Config, version: str | None = None) -> None:
    """Refuse ``featureGates`` as the kubelet of ``kubeletVersion`` (or ``version``) does at start-up:
    an unknown gate, a locked gate set to the other value, an unmet dependency (1.35+)
    (k8s.io/component-base ``featuregate.SetFromMap``); then what depends on the gates before the
    managers are built: ``topologyManagerPolicyOptions`` given while ``TopologyManagerPolicyOptions`` is
    off (``cmd/kubelet/app/server.go`` ``run``, reachable 1.33 … 1.35). The problem is the kubelet's own
    text."""
    version = version or config.emulator.kubelet_version
    where = Where(config.origins.get(kubelet_config.KIND, "<defaults>"))
    kubelet = config.kubelet
    try:
        validate_feature_gates(version, kubelet.feature_gates)
    except FeatureGateError as err:
        raise where.error("featureGates", f"{err} (kubeletVersion {version})") from None
    # Options put in after parsing (a simulation's matrix) count as given when there are any.
    given = kubelet.topology_manager_policy_options_given or bool(kubelet.topology_manager_policy_options)
    try:
        check_options_gate(
            given, kubelet.topology_manager_policy_options, effective_gates(version, kubelet.feature_gates)
        )
    except PolicyOptionsError as err:
        raise where.error("topologyManagerPolicyOptions", f"{err} (kubeletVersion {version})") from None
