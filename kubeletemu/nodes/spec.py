"""The nodes ``kubeletemu nodes`` makes join a cluster, described in one YAML file (``kind: Nodes``).

```yaml
apiVersion: kubeletemu.io/v1alpha1
kind: Nodes
seed: 1                          # the start-up latency draws (default 1)
nodeGroups:                      # as a Fleet file's nodeGroups, each node a real NodeEmulator
- name: worker                   # nodes are worker-000, worker-001, ...
  count: 4
  topology:
    synthetic: {sockets: 2, coresPerSocket: 8, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 64}
  config: [kubelet-config.yaml]  # KubeletConfiguration (+ EmulatorConfiguration) files, or one inline
  labels: {pool: numa}           # the Node object's labels, beside the kubelet's own
  kubeletVersion: "1.36"         # optional: wins over the files' kubeletVersion
  startupLatency: {uniform: [1s, 3s]}   # admission to Running (default: the fleet's startupLatency)
```

A ``kind: Fleet`` file is read too: its ``nodeGroups``, with its ``workload.startupLatency`` for every group.

From each group's KubeletConfiguration the node takes, beside what its admission reads, the fields that time
its heartbeats, with the kubelet's defaults (``pkg/kubelet/apis/config/v1beta1/defaults.go``):
``nodeLeaseDurationSeconds`` (40; the Lease is renewed every quarter of it, ``nodeLeaseRenewIntervalFraction``
in ``pkg/kubelet/kubelet.go``), ``nodeStatusUpdateFrequency`` (10s) and ``nodeStatusReportFrequency`` (5m,
or ``nodeStatusUpdateFrequency`` when only that one is set).

Any problem is a :class:`NodesError` naming the file, the field and the reason, raised before any node starts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeletemu.config import fields as read
from kubeletemu.config import kubelet_config
from kubeletemu.config.emulator_config import parse_duration
from kubeletemu.fleet.distributions import Distribution
from kubeletemu.fleet.spec import (
    DEFAULT_STARTUP_LATENCY,
    FleetError,
    NodeGroupSpec,
    load_fleet,
    parse_distribution,
    parse_node_groups,
)
from kubeletemu.fleet.spec import KIND as FLEET_KIND
from kubeletemu.manifest.documents import YAMLSyntaxError, yaml_documents
from kubeletemu.simulate.errors import SimulationError
from kubeletemu.simulate.spec import one_document, read_text

KIND = "Nodes"
_TOP_KEYS = ("apiVersion", "kind", "seed", "nodeGroups")
_MEMBER_KEYS = ("startupLatency",)  # a group's keys beyond a Fleet file's

# pkg/kubelet/kubelet.go: the Lease is renewed every quarter of its duration.
LEASE_RENEW_INTERVAL_FRACTION = 0.25
DEFAULT_LEASE_DURATION_S = 40
DEFAULT_STATUS_UPDATE_S = 10.0
DEFAULT_STATUS_REPORT_S = 300.0


class NodesError(ValueError):
    """A Nodes file that cannot start: ``file: field: reason``."""


@dataclass(frozen=True)
class _Where(read.SourceReporter[NodesError]):
    kind: Callable[[str], NodesError] = NodesError


@dataclass(frozen=True)
class Heartbeats:
    """When a node writes its Lease and its status (the kubelet's configuration fields, defaulted)."""

    lease_duration_s: int = DEFAULT_LEASE_DURATION_S
    status_update_s: float = DEFAULT_STATUS_UPDATE_S
    status_report_s: float = DEFAULT_STATUS_REPORT_S

    @property
    def lease_renew_s(self) -> float:
        return self.lease_duration_s * LEASE_RENEW_INTERVAL_FRACTION


@dataclass(frozen=True)
class MemberGroup:
    """A node group as the fleet parses it, with what a cluster member adds."""

    group: NodeGroupSpec
    startup_latency: Distribution = DEFAULT_STARTUP_LATENCY
    heartbeats: Heartbeats = Heartbeats()

    def node_names(self) -> list[str]:
        """``worker-000``, ``worker-001``, ...: the fleet's names."""
        return [f"{self.group.name}-{index:03d}" for index in range(self.group.count)]


@dataclass(frozen=True)
class NodesSpec:
    source: str
    groups: tuple[MemberGroup, ...]
    seed: int = 1

    def node_count(self) -> int:
        return sum(g.group.count for g in self.groups)


def load_nodes(path: str | os.PathLike[str]) -> NodesSpec:
    """A ``kind: Nodes`` file, or a ``kind: Fleet`` file's node groups."""
    try:
        text = read_text(path)
    except SimulationError as err:
        raise NodesError(str(err)) from None
    if _kind(text) == FLEET_KIND:
        try:
            fleet = load_fleet(path)
        except FleetError as err:
            raise NodesError(str(err)) from None
        latency = fleet.workload.startup_latency
        groups = tuple(MemberGroup(g, latency, heartbeats(g, str(path))) for g in fleet.node_groups)
        return NodesSpec(str(path), groups)
    return parse_nodes(text, str(path), Path(path).parent)


def parse_nodes(text: str, source: str = "<nodes>", base_dir: str | os.PathLike[str] = ".") -> NodesSpec:
    where = _Where(source)
    doc = one_document(where, text, KIND)
    read.known_fields(where, "", doc, _TOP_KEYS)
    seed = read.integer(where, "seed", doc.get("seed", 1))
    raw_groups = read.sequence(where, "nodeGroups", doc.get("nodeGroups"))
    # The fleet's parser reads the fields a Fleet file has; the member's own are taken off first.
    stripped: list[Any] = []
    latencies: list[Distribution] = []
    for index, item in enumerate(raw_groups):
        group = dict(read.mapping(where, f"nodeGroups[{index}]", item))
        raw_latency = group.pop("startupLatency", None)
        latency = DEFAULT_STARTUP_LATENCY
        if raw_latency is not None:
            try:
                latency = parse_distribution(
                    source, f"nodeGroups[{index}].startupLatency", raw_latency, allow_zero=True
                )
            except FleetError as err:
                raise NodesError(str(err)) from None
        stripped.append(group)
        latencies.append(latency)
    try:
        groups = parse_node_groups(source, base_dir, stripped)
    except FleetError as err:
        raise NodesError(_with_member_keys(str(err))) from None
    members = tuple(
        MemberGroup(g, latency, heartbeats(g, source)) for g, latency in zip(groups, latencies, strict=True)
    )
    return NodesSpec(source, members, seed)


def heartbeats(group: NodeGroupSpec, source: str) -> Heartbeats:
    """The group's Lease and status timing from its KubeletConfiguration document, defaulted as the kubelet
    defaults them and refused as its validation refuses them (``nodeLeaseDurationSeconds must be greater
    than 0``...)."""
    document = _kubelet_document(group.config_text)
    where = _Where(f"{source}: nodeGroups[{group.name}].config")
    lease = document.get("nodeLeaseDurationSeconds", 0)
    lease = read.integer(where, "nodeLeaseDurationSeconds", lease)
    if lease < 0:
        raise where.error("nodeLeaseDurationSeconds", f"must be greater than 0, got {lease}")
    update = _duration(where, "nodeStatusUpdateFrequency", document.get("nodeStatusUpdateFrequency"))
    report = _duration(where, "nodeStatusReportFrequency", document.get("nodeStatusReportFrequency"))
    # defaults.go: the report frequency first (it follows an explicit update frequency), then the update's.
    if report == 0:
        report = DEFAULT_STATUS_REPORT_S if update == 0 else update
    if update == 0:
        update = DEFAULT_STATUS_UPDATE_S
    return Heartbeats(lease or DEFAULT_LEASE_DURATION_S, update, report)


def _kubelet_document(text: str) -> Mapping[str, Any]:
    """The KubeletConfiguration document of a group's configuration text (validated by the fleet's parser
    already), or an empty mapping."""
    for document in yaml.safe_load_all(text) if text.strip() else ():
        if isinstance(document, Mapping) and document.get("kind") == kubelet_config.KIND:
            return document
    return {}


def _duration(where: _Where, path: str, raw: Any) -> float:
    """A Go duration field; 0 when absent (the kubelet's zero value, then defaulted)."""
    if raw is None:
        return 0.0
    text = read.string(where, path, raw)
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise where.error(path, str(err)) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise where.error(path, f"must be positive, got {text!r}")
    return seconds


def _kind(text: str) -> object:
    """The first document's ``kind`` (None when the text is not a YAML mapping: the parser says why)."""
    try:
        documents = yaml_documents(text)
    except YAMLSyntaxError:
        return None
    first = next((d for d in documents if d is not None), None)
    return first.get("kind") if isinstance(first, Mapping) else None


def _with_member_keys(message: str) -> str:
    """The fleet's unknown-field message lists a Fleet group's keys; a Nodes group adds ``startupLatency``."""
    marker = "unknown field: expected one of "
    if marker in message and "nodeGroups[" in message:
        return f"{message}, {', '.join(_MEMBER_KEYS)}"
    return message
