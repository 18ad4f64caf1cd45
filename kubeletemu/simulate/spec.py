"""A simulation described in one YAML file (``kind: Simulation``), for ``kubeletemu simulate -f``.

```yaml
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
topology:                      # one of host / capture / synthetic; the host when omitted
  synthetic: {sockets: 2, coresPerSocket: 8, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 32}
  # capture: {archive: fixtures/ocp-worker.tar.gz}   or   {sysfsRoot: DIR/sys, procfsRoot: DIR/proc}
  # host: {sysfsRoot: /sys, procfsRoot: /proc}
config: [kubelet-config.yaml]  # KubeletConfiguration (+ EmulatorConfiguration) files; defaults otherwise
featureGates: {TopologyManagerPolicyAlphaOptions: true}   # merged over the config's gates
matrix:                        # each axis optional: the config's value
  kubeletVersions: ["1.34", "1.35"]   # 1.33 ... 1.37, master; default: the config's kubeletVersion
  policies: [single-numa-node]
  scopes: [container, pod]
  options: [{}, {numa-allocation-strategy: most-allocated}]
stream:
- pods: pinned.yaml            # every pod of a manifest file, in order
- pod: {metadata: {name: app}, spec: {containers: [...]}}   # or one pod inline
  repeat: 20
- remove: app                  # a template (its oldest instances) or one instance (app-3)
  count: 2
```

Each configuration runs the kubelet of its version: the ``kubeletVersions`` axis (outermost: versions ×
policies × scopes × options), else the ``kubeletVersion`` of the EmulatorConfiguration in ``config`` (so a
config file can pin one), else master. It decides gate defaults and locks and the policy options' maturity;
``featureGates`` a version refuses make that configuration's error ("kubelet would not start"). The report
names each configuration's version (JSON ``kubeletVersion``, the table's KUBELET column or title).
Manifests are read (pod-level resources defaulted) as the base configuration's version sees them.

Relative paths are taken from the file's directory. Any problem is a :class:`SimulationError` naming the
file and the field.

Against a live node (``kubeletemu simulate -f FILE --socket SOCK``, gRPC ``Simulate``) the node gives the
topology, the configuration and the pods it starts with: ``topology``, ``config`` and ``featureGates`` are
refused, and the manifests ``pods:`` steps name travel with the file (:func:`pod_files`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kubeletemu.config import Config, ConfigError, load_config
from kubeletemu.config import fields as read
from kubeletemu.emulator import NodeEmulator
from kubeletemu.manifest import ManifestError, parse_pods, pod_from_manifest, read_pods
from kubeletemu.manifest.documents import YAMLSyntaxError, yaml_documents
from kubeletemu.pod import Pod
from kubeletemu.simulate.engine import SimulationReport, simulate, simulate_live
from kubeletemu.simulate.errors import SimulationError
from kubeletemu.simulate.inputs import Matrix, PodStep, RemoveStep, Step
from kubeletemu.simulate.topology import TopologySource, synthetic_shape
from kubeletemu.versions.gates import FeatureGateError, effective_gates, validate_feature_gates

API_VERSION = "kubeletemu.io/v1alpha1"
KIND = "Simulation"
_TOP_KEYS = frozenset({"apiVersion", "kind", "topology", "config", "featureGates", "matrix", "stream"})
# What a live node gives instead (see parse_live_simulation).
_NODE_KEYS = ("topology", "config", "featureGates")
_SYNTHETIC_KEYS = {
    "sockets": "sockets",
    "coresPerSocket": "cores_per_socket",
    "threadsPerCore": "threads_per_core",
    "nodesPerSocket": "nodes_per_socket",
    "memoryGiBPerNode": "memory_gib_per_node",
    "hugepages2MiPerNode": "hugepages_2mi_per_node",
    "hugepages1GiPerNode": "hugepages_1gi_per_node",
}


@dataclass(frozen=True)
class Simulation:
    topology: TopologySource
    config: Config
    matrix: Matrix
    stream: tuple[Step, ...]

    def run(self) -> SimulationReport:
        return simulate(self.topology, self.config, self.matrix, self.stream)


@dataclass(frozen=True)
class LiveSimulation:
    """What a Simulation asks of a live node: the node gives the topology, configuration and first pods."""

    matrix: Matrix
    stream: tuple[Step, ...]

    def run(self, node: NodeEmulator, name: str = "") -> SimulationReport:
        return simulate_live(node, self.matrix, self.stream, name)


@dataclass(frozen=True)
class _Where(read.SourceReporter[SimulationError]):
    kind: Callable[[str], SimulationError] = SimulationError


def load_simulation(path: str | os.PathLike[str]) -> Simulation:
    return parse_simulation(read_text(path), str(path), Path(path).parent)


def read_text(path: str | os.PathLike[str]) -> str:
    """A Simulation file or a manifest it names; :class:`SimulationError` when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise SimulationError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise SimulationError(f"{path}: not UTF-8 text: {err.reason} at byte {err.start}") from None


def parse_simulation(
    text: str, source: str = "<simulation>", base_dir: str | os.PathLike[str] = "."
) -> Simulation:
    where, doc = _document(text, source)
    base = Path(base_dir)
    config = _config(where, base, doc.get("config"), doc.get("featureGates"))
    pod_level = _pod_level_resources(config)

    def pods_file(name: str) -> tuple[str, list[Pod]]:
        manifest = _resolve(base, name)
        return manifest, read_pods(manifest, pod_level_resources=pod_level)

    return Simulation(
        topology=parse_topology(where, base, doc.get("topology")),
        config=config,
        matrix=_matrix(where, doc.get("matrix")),
        stream=_stream(where, doc.get("stream"), pod_level, pods_file),
    )


def parse_live_simulation(
    text: str, config: Config, source: str = "<simulation>", files: Mapping[str, str] | None = None
) -> LiveSimulation:
    """A Simulation to run on forks of a live node (the daemon's): only ``matrix`` and ``stream``, read
    with the node's ``config``. No file is read: a ``pods:`` step names a manifest whose text is in
    ``files`` (keyed by the name as written; see :func:`pod_files`)."""
    where, doc = _document(text, source)
    given = [key for key in _NODE_KEYS if key in doc]
    if given:
        raise where.error(
            given[0],
            "not allowed here: the simulation runs on the daemon's node, with its topology, configuration "
            "and admitted pods; give only matrix and stream",
        )
    pod_level = _pod_level_resources(config)
    sent = files or {}

    def pods_file(name: str) -> tuple[str, list[Pod]]:
        if name not in sent:
            raise SimulationError(
                f"{source}: {name}: not sent with the simulation (the daemon reads no files)"
            )
        return name, parse_pods(sent[name], name, pod_level_resources=pod_level)

    return LiveSimulation(
        _matrix(where, doc.get("matrix")), _stream(where, doc.get("stream"), pod_level, pods_file)
    )


def pod_files(text: str, base_dir: str | os.PathLike[str] = ".") -> dict[str, str]:
    """The manifests a Simulation's ``pods:`` steps name, read from ``base_dir`` and keyed by the name as
    written: what a client sends with the file to :func:`parse_live_simulation`. A file that is not a
    Simulation yields nothing here; the parse reports what is wrong with it."""
    try:
        documents = [d for d in yaml_documents(text) if d is not None]
    except YAMLSyntaxError:
        return {}
    stream = documents[0].get("stream") if len(documents) == 1 and isinstance(documents[0], dict) else None
    names = [s["pods"] for s in stream or () if isinstance(s, dict) and isinstance(s.get("pods"), str)]
    return {name: read_text(_resolve(Path(base_dir), name)) for name in names}


def one_document(where: read.Reporter, text: str, kind: str) -> Mapping[str, Any]:
    """The one ``kind`` document (``apiVersion: kubeletemu.io/v1alpha1``) of ``text``, its kind and
    apiVersion checked; any problem is ``where``'s error (a Fleet file reads its document here too)."""
    try:
        documents = [d for d in yaml_documents(text) if d is not None]
    except YAMLSyntaxError as err:
        raise where.error("", f"invalid YAML: {err}") from None
    if len(documents) != 1:
        raise where.error("", f"expected one {kind} document, got {len(documents)}")
    doc = read.mapping(where, "", documents[0])
    if doc.get("kind") != kind:
        raise where.error("kind", f"expected {kind}, got {doc.get('kind')!r}")
    if doc.get("apiVersion") != API_VERSION:
        raise where.error("apiVersion", f"expected {API_VERSION}, got {doc.get('apiVersion')!r}")
    return doc


def _document(text: str, source: str) -> tuple[_Where, Mapping[str, Any]]:
    """The one ``kind: Simulation`` document of ``text``, its top-level fields checked."""
    where = _Where(source)
    doc = one_document(where, text, KIND)
    read.known_fields(where, "", doc, sorted(_TOP_KEYS))
    return where, doc


def _resolve(base: Path, value: str) -> str:
    return str(base / value) if not os.path.isabs(value) else value


def parse_topology(where: read.Reporter, base: Path, raw: Any, path: str = "topology") -> TopologySource:
    """A ``topology`` field (at ``path``): one of host, capture, synthetic; the host when empty. Relative
    capture paths are taken from ``base``; a Fleet's node groups read theirs here too."""
    topology = read.mapping(where, path, raw)
    if not topology:
        return TopologySource.host()
    if len(topology) != 1:
        raise where.error(path, "expected exactly one of host, capture, synthetic")
    ((kind, body),) = topology.items()
    fields = read.mapping(where, f"{path}.{kind}", body)
    if kind == "host":
        return TopologySource.host(
            _text(where, f"{path}.{kind}.sysfsRoot", fields.get("sysfsRoot"), "/sys"),
            _text(where, f"{path}.{kind}.procfsRoot", fields.get("procfsRoot"), "/proc"),
        )
    if kind == "capture":
        if "archive" in fields:
            archive = read.string(where, f"{path}.capture.archive", fields["archive"])
            return TopologySource.capture_archive(_resolve(base, archive))
        if "sysfsRoot" not in fields:
            raise where.error(f"{path}.capture", "expected archive, or sysfsRoot (and procfsRoot)")
        sysfs = _resolve(base, read.string(where, f"{path}.capture.sysfsRoot", fields["sysfsRoot"]))
        procfs = fields.get("procfsRoot")
        proc = _resolve(base, read.string(where, f"{path}.capture.procfsRoot", procfs)) if procfs else None
        return TopologySource.capture_dirs(sysfs, proc or str(Path(sysfs).parent / "proc"))
    if kind == "synthetic":
        values: dict[str, int] = {}
        read.known_fields(where, f"{path}.synthetic", fields, list(_SYNTHETIC_KEYS))
        for key, value in fields.items():
            values[_SYNTHETIC_KEYS[key]] = read.integer(where, f"{path}.synthetic.{key}", value)
        try:
            shape = synthetic_shape(**values)
        except SimulationError as err:
            raise where.error(f"{path}.synthetic", str(err).removeprefix("synthetic topology: ")) from None
        return TopologySource.synthetic_host(shape)
    raise where.error(path, f"unknown source {kind!r}: expected host, capture or synthetic")


def _text(where: read.Reporter, path: str, value: Any, default: str) -> str:
    return default if value is None else read.string(where, path, value)


def _config(where: _Where, base: Path, raw: Any, gates_raw: Any) -> Config:
    paths = [raw] if isinstance(raw, str) else read.sequence(where, "config", raw)
    files = [_resolve(base, read.string(where, f"config[{i}]", p)) for i, p in enumerate(paths)]
    try:
        config = load_config(files) if files else Config()
    except ConfigError as err:
        raise SimulationError(str(err)) from None
    gates = read.bool_map(where, "featureGates", gates_raw)
    if not gates:
        return config
    merged = MappingProxyType({**config.kubelet.feature_gates, **gates})
    config = dataclasses.replace(config, kubelet=dataclasses.replace(config.kubelet, feature_gates=merged))
    version = config.emulator.kubelet_version
    try:
        validate_feature_gates(version, merged)
    except FeatureGateError as err:
        raise where.error("featureGates", f"{err} (kubeletVersion {version})") from None
    return config


def _pod_level_resources(config: Config) -> bool:
    """PodLevelResources as the configured kubelet version sees it (beta, on, from 1.34)."""
    gates = effective_gates(config.emulator.kubelet_version, config.kubelet.feature_gates)
    return gates.get("PodLevelResources", False)


def _matrix(where: _Where, raw: Any) -> Matrix:
    matrix = read.mapping(where, "matrix", raw)
    unknown = sorted(set(matrix) - {"kubeletVersions", "policies", "scopes", "options"})
    if unknown:
        raise where.error(
            f"matrix.{unknown[0]}", "unknown field: expected kubeletVersions, policies, scopes or options"
        )
    versions = tuple(
        read.scalar_text(where, f"matrix.kubeletVersions[{i}]", v)
        for i, v in enumerate(read.sequence(where, "matrix.kubeletVersions", matrix.get("kubeletVersions")))
    )
    policies = tuple(
        read.string(where, f"matrix.policies[{i}]", p)
        for i, p in enumerate(read.sequence(where, "matrix.policies", matrix.get("policies")))
    )
    scopes = tuple(
        read.string(where, f"matrix.scopes[{i}]", s)
        for i, s in enumerate(read.sequence(where, "matrix.scopes", matrix.get("scopes")))
    )
    options: tuple[Mapping[str, str], ...] = tuple(
        read.string_map(where, f"matrix.options[{i}]", o)
        for i, o in enumerate(read.sequence(where, "matrix.options", matrix.get("options")))
    )
    try:
        return Matrix(policies, scopes, options, versions)
    except SimulationError as err:
        raise where.error("matrix", str(err)) from None


def _stream(
    where: _Where, raw: Any, pod_level: bool, pods_file: Callable[[str], tuple[str, list[Pod]]]
) -> tuple[Step, ...]:
    """The steps; ``pods_file`` reads the manifest a ``pods:`` step names (returns what to call it)."""
    steps: list[Step] = []
    items = read.sequence(where, "stream", raw)
    if not items:
        raise where.error("stream", "expected at least one step")
    for index, item in enumerate(items):
        path = f"stream[{index}]"
        step = read.mapping(where, path, item)
        kinds = [k for k in ("pods", "pod", "remove") if k in step]
        if len(kinds) != 1:
            raise where.error(path, "expected exactly one of pods, pod, remove")
        allowed = {kinds[0], "count" if kinds[0] == "remove" else "repeat"}
        unknown = sorted(set(step) - allowed)
        if unknown:
            raise where.error(
                f"{path}.{unknown[0]}", f"unknown field: expected {' and '.join(sorted(allowed))}"
            )
        if kinds[0] == "remove":
            name = read.string(where, f"{path}.remove", step["remove"])
            count = _positive(where, f"{path}.count", step.get("count", 1))
            steps.append(RemoveStep(name, count))
            continue
        repeat = _positive(where, f"{path}.repeat", step.get("repeat", 1))
        try:
            if kinds[0] == "pods":
                manifest, pods = pods_file(read.string(where, f"{path}.pods", step["pods"]))
                if not pods:
                    raise where.error(f"{path}.pods", f"{manifest} holds no pod")
            else:
                raw_pod = read.mapping(where, f"{path}.pod", step["pod"])
                pods = [
                    pod_from_manifest(
                        raw_pod, source=f"{where.source}: {path}.pod", pod_level_resources=pod_level
                    )
                ]
        except ManifestError as err:
            raise SimulationError(str(err)) from None
        steps.extend(PodStep(pod, repeat) for pod in pods)
    return tuple(steps)


def _positive(where: _Where, path: str, value: Any) -> int:
    number = read.integer(where, path, value)
    if number < 1:
        raise where.error(path, f"must be at least 1, got {number}")
    return number
