"""The exporter view: resource-topology-exporter's aggregation rules, the attributes, and objects that the
NodeResourceTopology CRD's v1alpha2 schema accepts (what ``kubectl apply`` checks)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.podresources import nrt
from tests.podresources.nodes import (
    GENERAL_HOST,
    WORKED_EXAMPLE_CONFIG,
    WORKED_EXAMPLE_HOST,
    WORKED_EXAMPLE_PODS,
    admit_all,
    container,
    general_config,
    make_emulator,
    pod_manifest,
)

CRD = Path(__file__).parent / "data" / "noderesourcetopology_crd.yaml"


def numa(*nodes: int) -> v1.TopologyInfo:
    return v1.TopologyInfo(nodes=[v1.NUMANode(ID=n) for n in nodes])


# ---- counters ------------------------------------------------------------------------------------------


def test_normalize_counts_cpus_devices_and_memory_per_node() -> None:
    counters = nrt.normalize(
        devices=[
            v1.ContainerDevices(resource_name="x.io/nic", device_ids=["a"], topology=numa(0)),
            v1.ContainerDevices(resource_name="x.io/gpu", device_ids=["g"], topology=numa(0, 1)),
            v1.ContainerDevices(resource_name="x.io/fpga", device_ids=["f"]),  # no topology: not counted
        ],
        memory=[
            # A block over two nodes is charged in full to both (RTE over-counts).
            v1.ContainerMemory(memory_type="memory", size=3 << 30, topology=numa(0, 1)),
            v1.ContainerMemory(memory_type="hugepages-2Mi", size=0, topology=numa(1)),  # zero: skipped
        ],
        cpu_ids=[0, 1, 2, 99],  # 99 is on no node: skipped
        cpu_numa={0: 0, 1: 1, 2: 0},
    )
    assert counters == {
        0: {"x.io/nic": 1, "x.io/gpu": 1, "cpu": 2, "memory": 3 << 30},
        1: {"x.io/gpu": 1, "cpu": 1, "memory": 3 << 30},
    }


def test_zone_rules() -> None:
    nodes = [
        nrt.NodeCapacity(0, 4, {"memory": 100}, {0: 10, 1: 20}),
        nrt.NodeCapacity(1, 4, {"memory": 100}, {0: 20, 1: 10}),
        nrt.NodeCapacity(2, 2, {}, {}),
    ]
    allocatable = {
        0: {"cpu": 3, "memory": 150, "x.io/dev": 2},  # memory above capacity: capacity is raised
        1: {"memory": 80, "hugepages-1Gi": 7},  # no capacity known for the hugepages: = allocatable
    }
    allocated = {0: {"cpu": 5, "x.io/dev": 1}, 1: {"memory": 30}}  # cpu over-allocated: clamped at 0
    zone0, zone1, zone2 = nrt.zones(nodes, allocatable, allocated)
    assert [(r.name, r.capacity, r.allocatable, r.available) for r in zone0.resources] == [
        ("cpu", 4, 3, 0),
        ("memory", 150, 150, 150),
        ("x.io/dev", 2, 2, 1),
    ]
    assert [(r.name, r.capacity, r.allocatable, r.available) for r in zone1.resources] == [
        ("memory", 100, 80, 50),
        ("hugepages-1Gi", 7, 7, 7),
    ]
    # A node with nothing allocatable: its CPUs all count as reserved.
    assert [(r.name, r.capacity, r.allocatable, r.available) for r in zone2.resources] == [("cpu", 2, 0, 0)]
    assert [(c.name, c.value) for c in zone0.costs] == [("node-0", 10), ("node-1", 20)]
    assert zone2.costs == () and zone2.name == "node-2" and zone2.type == "Node"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (7, "7"),
        (1000, "1k"),
        (1500, "1500"),
        (2000, "2k"),
        (1200000, "1200k"),
        (8000000000, "8G"),
        (8589934592, "8589934592"),
        (10**18, "1E"),
    ],
)
def test_quantities_are_decimal_si_canonical(value: int, text: str) -> None:
    assert nrt.quantity(value) == text


def test_attributes_are_rtes_without_policy_options() -> None:
    """RTE v0.24.0 writes the scan's two attributes, then scope and policy: no policy options (nor
    ``topologyManagerMaxNUMANodes``), whatever the kubelet configures."""
    attributes = nrt.attributes("pfp0v001ef46db3751d8e999", "all", "restricted", "pod")
    assert [(a.name, a.value) for a in attributes] == [
        ("nodeTopologyPodsFingerprint", "pfp0v001ef46db3751d8e999"),
        ("nodeTopologyPodsFingerprintMethod", "all"),
        ("topologyManagerScope", "pod"),
        ("topologyManagerPolicy", "restricted"),
    ]


# ---- from an emulated node ----------------------------------------------------------------------------


def resources(topology: nrt.NodeResourceTopology) -> dict[str, list[str]]:
    return {z.name: [r.name for r in z.resources] for z in topology.zones}


def test_without_the_memory_manager_zones_hold_cpus_and_devices(tmp_path: Path) -> None:
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config(memory_policy="None"))
    topology = nrt.node_resource_topology(emulator)
    assert resources(topology) == {
        "node-0": ["cpu", "example.com/gpu", "example.com/nic"],
        "node-1": ["cpu", "example.com/gpu", "example.com/nic"],
    }
    cpu0 = topology.zones[0].resource("cpu")
    assert cpu0 is not None and (cpu0.capacity, cpu0.allocatable) == (8, 7)  # CPU 0 reserved


def test_without_the_static_cpu_manager_there_are_no_cpus(tmp_path: Path) -> None:
    emulator = make_emulator(
        tmp_path, GENERAL_HOST, general_config(policy="none", cpu_policy="none", memory_policy="None")
    )
    topology = nrt.node_resource_topology(emulator)
    assert resources(topology) == {
        "node-0": ["example.com/gpu", "example.com/nic"],
        "node-1": ["example.com/gpu", "example.com/nic"],
    }


def test_available_follows_admissions_and_removals(tmp_path: Path) -> None:
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    before = nrt.node_resource_topology(emulator)
    admit_all(
        emulator,
        pod_manifest("p", containers=container("c", 'cpu: "4", memory: 2Gi, hugepages-2Mi: 64Mi')),
    )
    during = nrt.node_resource_topology(emulator)
    zone = during.zone("node-0")
    assert zone is not None
    assert [(r.name, r.allocatable - r.available) for r in zone.resources] == [
        ("cpu", 4),
        ("memory", 2 << 30),
        ("hugepages-2Mi", 64 << 20),
        ("example.com/gpu", 0),
        ("example.com/nic", 0),
    ]
    assert during.attribute("nodeTopologyPodsFingerprint") != before.attribute("nodeTopologyPodsFingerprint")
    emulator.remove("uid-p")
    assert nrt.node_resource_topology(emulator) == before


# ---- the CRD's structural schema ----------------------------------------------------------------------

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def _schema_errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """The OpenAPI v3 subset a structural CRD schema uses, with strict field validation."""
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, int | str):
            return [f"{path}: expected an integer or a string"]
        if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
            return [f"{path}: {value!r} does not match {schema['pattern']}"]
        return []
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        errors = [f"{path}.{key}: required" for key in schema.get("required", []) if key not in value]
        properties = schema.get("properties")
        if properties is not None:
            for key, item in value.items():
                if key not in properties:
                    errors.append(f"{path}.{key}: unknown field")
                else:
                    errors += _schema_errors(item, properties[key], f"{path}.{key}")
        return errors
    if kind == "array":
        if not isinstance(value, list):
            return [f"{path}: expected an array"]
        return [
            e for i, item in enumerate(value) for e in _schema_errors(item, schema["items"], f"{path}[{i}]")
        ]
    if kind == "string":
        return [] if isinstance(value, str) else [f"{path}: expected a string"]
    if kind == "integer":
        return (
            [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: expected an integer"]
        )
    raise AssertionError(f"schema construct not handled at {path}: {schema}")


def _metadata_errors(metadata: dict[str, Any]) -> list[str]:
    errors = []
    if not _DNS1123_SUBDOMAIN.fullmatch(metadata.get("name", "")):
        errors.append("metadata.name: not a DNS-1123 subdomain")
    for key, value in metadata.get("annotations", {}).items():
        prefix, _, name = key.rpartition("/")
        if (prefix and not _DNS1123_SUBDOMAIN.fullmatch(prefix)) or not _QUALIFIED_NAME.fullmatch(name):
            errors.append(f"metadata.annotations: invalid key {key!r}")
        if not isinstance(value, str):
            errors.append(f"metadata.annotations[{key}]: not a string")
    unknown = set(metadata) - {"name", "annotations"}
    return errors + [f"metadata.{k}: not produced here" for k in sorted(unknown)]


def crd_errors(document: dict[str, Any]) -> list[str]:
    crd = yaml.safe_load(CRD.read_text())
    group = crd["spec"]["group"]
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    api_version = document.get("apiVersion", "")
    group_of, _, version = api_version.partition("/")
    if group_of != group or version not in versions or not versions[version]["served"]:
        return [f"apiVersion {api_version!r} is not served by the CRD"]
    if document.get("kind") != crd["spec"]["names"]["kind"]:
        return [f"kind {document.get('kind')!r} is not {crd['spec']['names']['kind']}"]
    schema = versions[version]["schema"]["openAPIV3Schema"]
    return _schema_errors(document, schema, "") + _metadata_errors(document.get("metadata", {}))


def test_the_validator_can_fail() -> None:
    good = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": "n"},
        "zones": [{"name": "node-0", "type": "Node", "resources": []}],
    }
    assert crd_errors(good) == []
    bad_quantity = {**good, "zones": [{"name": "node-0", "type": "Node", "resources": [{"name": "cpu"}]}]}
    assert crd_errors(bad_quantity) == [
        ".zones[0].resources[0].allocatable: required",
        ".zones[0].resources[0].available: required",
        ".zones[0].resources[0].capacity: required",
    ]
    bad = {
        **good,
        "metadata": {"name": "Node_1"},
        "zones": [
            {"name": "node-0", "type": "Node", "costs": [{"name": "node-0", "value": "10"}], "extra": 1}
        ],
    }
    assert crd_errors(bad) == [
        ".zones[0].costs[0].value: expected an integer",
        ".zones[0].extra: unknown field",
        "metadata.name: not a DNS-1123 subdomain",
    ]
    wrong_quantity = {
        **good,
        "zones": [
            {
                "name": "node-0",
                "type": "Node",
                "resources": [{"name": "cpu", "capacity": "4 cores", "allocatable": 3, "available": "1k"}],
            }
        ],
    }
    assert [e.split(":")[0] for e in crd_errors(wrong_quantity)] == [".zones[0].resources[0].capacity"]
    assert crd_errors({**good, "apiVersion": "topology.node.k8s.io/v1beta1"}) != []


def test_exported_objects_satisfy_the_crd(tmp_path: Path) -> None:
    example = make_emulator(tmp_path / "a", WORKED_EXAMPLE_HOST, WORKED_EXAMPLE_CONFIG)
    admit_all(example, WORKED_EXAMPLE_PODS)
    options = general_config().replace(
        "topologyManagerScope: container\n",
        "topologyManagerScope: pod\ntopologyManagerPolicyOptions: {max-allowable-numa-nodes: '8'}\n",
    )
    general = make_emulator(tmp_path / "b", GENERAL_HOST, options)
    for emulator in (example, general):
        manifest = nrt.node_resource_topology(emulator).to_manifest()
        # What `kubeletemu nrt -o yaml` prints reads back as the same document.
        text = yaml.safe_dump(manifest, sort_keys=False)
        assert yaml.safe_load(text) == manifest
        assert crd_errors(yaml.safe_load(text)) == []
