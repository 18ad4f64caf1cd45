"""Feature gates per kubelet version (issue 16): the data, its provenance, and the start-up refusals.

Expected values are the kubelet's versioned feature specs at each version (``kube_features.go``); the
texts are k8s.io/component-base ``featuregate.SetFromMap``'s.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kubeletemu.versions import (
    SUPPORTED,
    FeatureGateError,
    GateSpec,
    binary_version,
    dependencies,
    effective_gates,
    feature_gates,
    parse_version,
    provenance,
    validate_feature_gates,
)
from kubeletemu.versions.generate import (
    DATA_FILE,
    KUBE_FEATURES,
    MODULES,
    dumps,
    generate,
    parse_dependencies,
    parse_specs,
)
from tests.upstream.pins import PINS
from tests.versions.feature_sources import OVERRIDE, SourceDownloadError, source_dir

RANGE = "supported: 1.33, 1.34, 1.35, 1.36, 1.37, master"


def test_data_parses_and_names_its_provenance() -> None:
    data = json.loads(DATA_FILE.read_text())
    assert set(data["versions"]) == set(SUPPORTED)
    for version in SUPPORTED:
        source = provenance(version)["source"]
        # A vendored copy at a commit, or a module proxy zip with its go.sum hash.
        if source["commit"]:
            assert source["path"] == "vendor/k8s.io/kubernetes/pkg/features/kube_features.go"
            assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
        else:
            assert source["path"] == KUBE_FEATURES
            assert re.fullmatch(r"h1:[A-Za-z0-9+/]{43}=", source["moduleHash"])
        assert source["repo"] and source["pinned"].startswith("k8s.io/kubernetes v")
        for extra in provenance(version)["extraSources"]:
            assert extra["repo"] in ("kubernetes/component-base", "kubernetes/client-go")
            pin = extra.get("commit") or extra["moduleHash"]
            assert re.fullmatch(r"[0-9a-f]{40}|h1:[A-Za-z0-9+/]{43}=", pin) and extra["tag"].startswith("v0.")
    assert provenance("1.34")["source"]["pinned"] == "k8s.io/kubernetes v1.34.7"
    assert provenance("1.37")["source"]["pinned"] == "k8s.io/kubernetes v1.37.2"
    assert binary_version("master") == "1.37"
    assert binary_version("1.37") == "1.37"
    assert binary_version("v1.35.1") == "1.35"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.34", "1.34"),
        ("v1.34", "1.34"),
        ("1.34.2", "1.34"),
        ("v1.36.0-eks-1", "1.36"),
        ("1.37.2", "1.37"),
        ("master", "master"),
    ],
)
def test_parse_version(text: str, expected: str) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["1.29", "1.38", "", "latest", "1", "1.34.x", "Master", "v1.3"])
def test_parse_version_refuses_with_the_supported_range(text: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_version(text)
    assert str(err.value) == f'kubeletVersion "{text}": {RANGE}'


def test_parse_version_refuses_a_non_string() -> None:
    with pytest.raises(ValueError, match=re.escape(f"kubeletVersion 1.34: {RANGE}")):
        parse_version(1.34)


@pytest.mark.parametrize(
    ("gate", "by_version"),
    [
        # PodLevelResources: alpha off, then beta on (#132999, 1.34).
        (
            "PodLevelResources",
            {"1.33": GateSpec(False, "Alpha", False), "1.34": GateSpec(True, "Beta", False)},
        ),
        # TopologyManagerPolicyOptions: GA, locked in 1.36 (#136380).
        (
            "TopologyManagerPolicyOptions",
            {"1.35": GateSpec(True, "GA", False), "1.36": GateSpec(True, "GA", True)},
        ),
        # MemoryManager: GA and locked, removed in 1.36 (#136381).
        ("MemoryManager", {"1.35": GateSpec(True, "GA", True), "1.36": None, "master": None}),
        # Removed in 1.34 (#131463, #132083).
        ("LegacySidecarContainers", {"1.33": GateSpec(False, "Deprecated", False), "1.34": None}),
        ("DevicePluginCDIDevices", {"1.33": GateSpec(True, "GA", True), "1.34": None}),
        # Locked in 1.35.
        (
            "InPlacePodVerticalScaling",
            {"1.34": GateSpec(True, "Beta", False), "1.35": GateSpec(True, "GA", True)},
        ),
        (
            "DynamicResourceAllocation",
            {"1.34": GateSpec(True, "GA", False), "1.35": GateSpec(True, "GA", True)},
        ),
        # SidecarContainers: GA and locked, removed in 1.37 (#137755).
        ("SidecarContainers", {"1.36": GateSpec(True, "GA", True), "1.37": None, "master": None}),
        # PodLevelResourceManagers: beta in 1.37, off (#140573 turned it on, #141209 off again).
        (
            "PodLevelResourceManagers",
            {"1.36": GateSpec(False, "Alpha", False), "1.37": GateSpec(False, "Beta", False)},
        ),
        # A 1.37 spec with MinCompatibilityVersion 1.37 is not in effect: the kubelet's minimum
        # compatibility version is its binary version minus one (component-base v0.37.2).
        ("DRAFractionalCapacityRange", {"1.36": None, "1.37": GateSpec(False, "Beta", False)}),
        # podresources Get: alpha, beta on (#132940, 1.34), GA and locked (#136728, 1.36).
        (
            "KubeletPodResourcesGet",
            {
                "1.33": GateSpec(False, "Alpha", False),
                "1.34": GateSpec(True, "Beta", False),
                "1.36": GateSpec(True, "GA", True),
            },
        ),
        # An escape hatch for a fix (#132028, 1.34): "deprecated" from the start, on.
        (
            "KubeletPodResourcesListUseActivePods",
            {"1.33": None, "1.34": GateSpec(True, "Deprecated", False)},
        ),
        ("PodLevelResourceManagers", {"1.35": None, "1.36": GateSpec(False, "Alpha", False)}),
        # The options gates, unchanged over the range.
        ("CPUManagerPolicyAlphaOptions", dict.fromkeys(SUPPORTED, GateSpec(False, "Alpha", False))),
        ("TopologyManagerPolicyBetaOptions", dict.fromkeys(SUPPORTED, GateSpec(True, "Beta", False))),
        # Registered by component-base, not kube_features.go.
        ("AllAlpha", dict.fromkeys(SUPPORTED, GateSpec(False, "Alpha", False))),
        ("LoggingBetaOptions", dict.fromkeys(SUPPORTED, GateSpec(True, "Beta", False))),
    ],
)
def test_gate_per_version(gate: str, by_version: dict[str, GateSpec | None]) -> None:
    for version, expected in by_version.items():
        assert feature_gates(version).get(gate) == expected, version


def test_a_go_identifier_is_not_always_the_gate_name() -> None:
    gates = feature_gates("master")
    assert "CustomCPUCFSQuotaPeriod" in gates and "CPUCFSQuotaPeriod" not in gates


def test_unknown_gate_refused() -> None:
    with pytest.raises(FeatureGateError) as err:
        validate_feature_gates("1.36", {"MemoryManager": True})
    assert str(err.value) == "unrecognized feature gate: MemoryManager"
    validate_feature_gates("1.35", {"MemoryManager": True})


def test_locked_gate_refused_when_set_to_the_other_value() -> None:
    with pytest.raises(FeatureGateError) as err:
        validate_feature_gates("1.36", {"TopologyManagerPolicyOptions": False})
    assert str(err.value) == (
        "cannot set feature gate TopologyManagerPolicyOptions to false, feature is locked to true"
    )
    validate_feature_gates("1.36", {"TopologyManagerPolicyOptions": True})
    validate_feature_gates("1.35", {"TopologyManagerPolicyOptions": False})


def test_several_refusals_are_aggregated_and_an_unknown_name_stops_the_walk() -> None:
    with pytest.raises(FeatureGateError) as err:
        validate_feature_gates("master", {"KubeletPodResourcesGet": False, "Nope": True, "Later": True})
    assert str(err.value) == (
        "[cannot set feature gate KubeletPodResourcesGet to false, feature is locked to true, "
        "unrecognized feature gate: Nope]"
    )


def test_dependencies_enforced_from_1_35() -> None:
    settings = {"InPlacePodLevelResourcesVerticalScaling": True, "PodLevelResources": False}
    with pytest.raises(FeatureGateError) as err:
        validate_feature_gates("1.36", settings)
    assert str(err.value) == (
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: "
        "[PodLevelResources]"
    )
    assert dependencies("1.34") == {}
    assert "InPlacePodLevelResourcesVerticalScaling" in dependencies("1.35")
    # Dependencies hold for the defaults of every version.
    for version in SUPPORTED:
        validate_feature_gates(version, {})


def test_all_alpha_enables_unset_alpha_gates_only() -> None:
    gates = effective_gates("master", {"AllAlpha": True, "PodLevelResourceManagers": False})
    assert gates["CPUManagerPolicyAlphaOptions"] is True
    assert gates["PodLevelResourceManagers"] is False
    assert gates["CPUManagerPolicyBetaOptions"] is True


def test_parser_reads_versioned_unversioned_and_dependency_maps() -> None:
    go = """
const (
	Plain featuregate.Feature = "Plain"
	Renamed featuregate.Feature = "OtherName" // a comment {
	Untyped = "Untyped"
	Wrapped = featuregate.Feature("Wrapped")
	Legacy Feature = "Legacy"
)
var specs = map[featuregate.Feature]featuregate.VersionedSpecs{
	Plain: {
		{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.32"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
	Renamed: {{Version: version.MustParse("1.31"), Default: true, PreRelease: featuregate.Beta}},
	other.Elsewhere: {
		{Version: version.MustParse("1.29"), Default: false, PreRelease: featuregate.Deprecated},
	},
	Untyped: {{Version: version.MustParse("1.33"), Default: false, PreRelease: featuregate.Alpha}},
	Wrapped: {{Version: version.MustParse("1.33"), Default: false, PreRelease: featuregate.Alpha}},
}
var deps = map[featuregate.Feature][]featuregate.Feature{
	Plain: {},
	Renamed: {Plain, featuregate.Feature(other.Elsewhere)},
}
var old = map[Feature]FeatureSpec{
	Legacy: {Default: true, PreRelease: Beta},
}
"""
    specs = parse_specs(go)
    assert specs["Plain"] == [
        {"version": "1.30", "default": False, "stage": "Alpha", "locked": False},
        {"version": "1.32", "default": True, "stage": "GA", "locked": True},
    ]
    assert specs["OtherName"][0]["stage"] == "Beta"
    assert specs["Elsewhere"][0]["stage"] == "Deprecated"
    assert {"Untyped", "Wrapped"} <= set(specs)
    assert specs["Legacy"] == [{"version": "0.0", "default": True, "stage": "Beta", "locked": False}]
    assert parse_dependencies(go) == {"OtherName": ["Plain", "Elsewhere"]}


def test_the_modules_read_are_the_cited_trees_or_the_pins() -> None:
    """1.33 … 1.35 cite vendored copies of the releases they pin, and those releases are read; 1.36 cites a
    master snapshot the proxy does not serve, so its release pin is read (tests/upstream/pins.py)."""
    for version, module in MODULES.items():
        pinned = provenance(version)["source"]["pinned"]
        if pinned.startswith("k8s.io/kubernetes v1."):
            assert pinned == f"k8s.io/kubernetes {module.kubernetes}", version
        else:
            assert module.kubernetes == f"v{PINS[version].kubernetes}", version
        tags = {extra["tag"] for extra in provenance(version)["extraSources"]}
        assert tags == {module.staging}, version


def test_generator_reproduces_the_data_file(tmp_path: Path) -> None:
    """Every version's gates regenerated from the Go text equal the committed data. The text comes from
    the module cache, downloaded through the Go module proxy when missing; ``KUBELETEMU_FEATURE_SOURCES``
    names a prepared directory instead. A download that fails fails the test, with Go's reason."""
    override = os.environ.get(OVERRIDE)
    if override:
        src = Path(override)
    else:
        try:
            src = source_dir(tmp_path / "src")
        except SourceDownloadError as err:
            pytest.fail(str(err), pytrace=False)
    assert dumps(generate(src)) == DATA_FILE.read_text()
