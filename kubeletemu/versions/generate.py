"""Generate ``data/feature_gates.json`` from the kubelet's versioned feature specs.

Run as ``python -m kubeletemu.versions.generate SRC_DIR [--out FILE]``. ``SRC_DIR`` holds one directory per
supported version (``1.33`` … ``1.37``, ``master``), each with the verbatim Go text read from the sources
named in :data:`SOURCES`::

    SRC_DIR/<version>/kube_features.go                                  k8s.io/kubernetes pkg/features
    SRC_DIR/<version>/component-base/logs/api/v1/kube_features.go       k8s.io/component-base
    SRC_DIR/<version>/component-base/metrics/features/kube_features.go
    SRC_DIR/<version>/component-base/zpages/features/kube_features.go
    SRC_DIR/<version>/client-go/features/known_features.go              k8s.io/client-go

Every version's text is also in a Go module the proxy serves (:data:`MODULES`: ``go mod download`` puts it
in the module cache; tests/versions/feature_sources.py lays SRC_DIR out from there). The Go files
stay out of this repository: the generator reads text and writes facts (per gate: the list of
``{Version, Default, PreRelease, LockToDefault}`` entries, and from 1.35 the declared dependencies). No Go
code is carried over.

What is parsed, per file:

* ``const ( Ident featuregate.Feature = "Name" )``: Go identifiers to gate names (they differ for a few,
  e.g. ``CPUCFSQuotaPeriod`` is ``"CustomCPUCFSQuotaPeriod"``). A qualified key such as
  ``genericfeatures.APIServerTracing`` (a gate of k8s.io/apiserver or apiextensions registered through this
  map) is taken to be named like its identifier.
* ``map[featuregate.Feature]featuregate.VersionedSpecs{…}`` (and client-go's ``map[Feature]VersionedSpecs``):
  each key's list of specs.
* client-go 1.33/1.34's unversioned ``map[Feature]FeatureSpec{…}``: one spec per gate, recorded at
  version ``0.0`` (in effect at every version).
* ``defaultKubernetesFeatureGateDependencies`` (``map[featuregate.Feature][]featuregate.Feature``, 1.35+).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).with_name("data") / "feature_gates.json"
KUBE_FEATURES = "pkg/features/kube_features.go"


@dataclass(frozen=True)
class Source:
    """Where one version's Go text was read: ``repo`` at ``commit``, ``path``; or, for a tree read from the
    Go module proxy (no commit in it), the module zip's ``module_hash`` (go.sum's ``h1:``)."""

    repo: str
    path: str
    commit: str
    pinned: str
    note: str = ""
    module_hash: str = ""

    def as_json(self) -> dict[str, str]:
        out = {"repo": self.repo, "path": self.path, "commit": self.commit, "pinned": self.pinned}
        if self.module_hash:
            out["moduleHash"] = self.module_hash
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Module:
    """The Go modules holding a version's text: ``k8s.io/kubernetes`` at ``kubernetes`` and
    ``k8s.io/component-base`` / ``k8s.io/client-go`` at ``staging``; ``note`` says how they relate to the
    tree the data cites."""

    kubernetes: str
    staging: str
    note: str


_VENDORED = "vendor/k8s.io/kubernetes/" + KUBE_FEATURES
_AWS_TI = "kubernetes-sigs/provider-aws-test-infra"
_AWS_TI_PIN = "k8s.io/kubernetes v0.0.0 => ../../k8s.io/kubernetes (a checkout of master, bumped by date)"
_KNI = "openshift-kni/scheduler-plugins"


def _v1_37_2(note: str) -> tuple[str, Source, tuple[str, str], tuple[str, str]]:
    """k8s.io/kubernetes v1.37.2 and its staging modules, as the module proxy serves them (go.sum hashes)."""
    source = Source(
        "kubernetes/kubernetes",
        KUBE_FEATURES,
        "",
        "k8s.io/kubernetes v1.37.2",
        note=note,
        module_hash="h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE=",
    )
    return (
        "1.37",
        source,
        ("v0.37.2", "h1:Ia9IKTg1yWrUntJU5lVetapkC9pXlLg9L6P3R1IkbcY="),
        ("v0.37.2", "h1:sgFtyRZukGkOrsu+QgS7LYnbFFJ5ut3MchdBNduD//E="),
    )


# version -> (binary version of the source, kube_features.go source, component-base tag+commit,
# client-go tag+commit)
SOURCES: dict[str, tuple[str, Source, tuple[str, str], tuple[str, str]]] = {
    "1.33": (
        "1.33",
        Source(_KNI, _VENDORED, "0c967825a300296bf3dbd58c6623477aaa02838f", "k8s.io/kubernetes v1.33.3"),
        ("v0.33.0", "07e241d86c33abe730554350ae8c35bc2dbe9684"),
        ("v0.33.0", "f7e7d04a3b075c9a9a7c46436530d82e5589cde6"),
    ),
    "1.34": (
        "1.34",
        Source(_KNI, _VENDORED, "3d6d3a01b62a1d496c9fd85165adcbdb72164aa7", "k8s.io/kubernetes v1.34.7"),
        ("v0.34.0", "e82e2acd1584235c13ab2702c4c5041316ba5234"),
        ("v0.34.0", "3438445e120ecee5fbd4d48f7dcc946d6ede46ac"),
    ),
    "1.35": (
        "1.35",
        Source(_KNI, _VENDORED, "4495d2058964d9ad1ce6e7f9cf553a2d623a3613", "k8s.io/kubernetes v1.35.4"),
        ("v0.35.0", "4e6b4ebd59c9c1fa40170362fa277a769ef0c544"),
        ("v0.35.0", "99514d610fc2927e63ab781fbbf09b4ff974c38d"),
    ),
    "1.36": (
        "1.36",
        Source(
            _AWS_TI,
            _VENDORED,
            "357221ead90d14618bd8906589bbd8258f14441c",
            _AWS_TI_PIN,
            note=(
                "Kubernetes master vendored on 2026-04-11 ('Bump k8s on 04/11/2026'), three days after "
                "the release-1.36 branch cut (v0.36.0-rc.0 / v0.37.0-alpha.0, 2026-04-08); its specs stop "
                "at 1.36 (no 1.37 entries). From the 2026-03-29 snapshot it differs only by the 1.36 "
                "alpha gate rename EnableWorkloadWithJob -> WorkloadWithJob. Checked against v1.36.3 "
                "(openshift/kubernetes as vendored in openshift/microshift release-4.23 @ ab25d11482, "
                "deps/github.com/openshift/kubernetes/pkg/features/kube_features.go): the same specs, but "
                "for OpenShift's carries (NodeLogQuery on by default, registerOpenshiftFeatures' own "
                "gates)."
            ),
        ),
        ("v0.36.0", "5234ccbbe884ef2814dd12090d1e5fb64220b8bd"),
        ("v0.36.0", "569c9fe8ddfece1bade17fc91a4e28e11701593e"),
    ),
    "1.37": _v1_37_2("Read from the Go module proxy's zip of k8s.io/kubernetes v1.37.2 (2026-10-27)."),
    "master": _v1_37_2(
        "master is ordered after 1.37 and carries 1.37.2's gates: kubernetes master itself is not "
        "served by the module proxy. Until 1.37 was added these were master as vendored on "
        "2026-06-21 (kubernetes-sigs/provider-aws-test-infra "
        "a48b950ac10ed52ac654498580305036cb81b87b, component-base and client-go v0.37.0-alpha.1), "
        "a pre-release 1.37 that v1.37.2 differs from in 60 gates (28 added, "
        "PreventStaticPodAPIReferences removed, 31 with other specs, e.g. PodLevelResourceManagers "
        "beta)."
    ),
}

# The module trees holding each version's text. Where the cited tree is a release (the vendored copies of
# 1.33 … 1.35 pin k8s.io/kubernetes v1.33.3, v1.34.7, v1.35.4), that release: its file is the vendored one.
# 1.36 cites a master snapshot the proxy does not serve; its release pin (tests/upstream/pins.py, v1.36.3)
# is read instead, and gives the same specs. The staging modules are the tags SOURCES cites.
MODULES: dict[str, Module] = {
    "1.33": Module("v1.33.3", "v0.33.0", "the release the cited vendored copy pins"),
    "1.34": Module("v1.34.7", "v0.34.0", "the release the cited vendored copy pins"),
    "1.35": Module("v1.35.4", "v0.35.0", "the release the cited vendored copy pins"),
    "1.36": Module("v1.36.3", "v0.36.0", "the pinned release: the cited master snapshot is not served"),
    "1.37": Module("v1.37.2", "v0.37.2", "the cited release"),
    "master": Module("v1.37.2", "v0.37.2", "the cited release (master is not served)"),
}

_EXTRA_FILES = (
    ("kubernetes/component-base", "component-base", "logs/api/v1/kube_features.go"),
    ("kubernetes/component-base", "component-base", "metrics/features/kube_features.go"),
    ("kubernetes/component-base", "component-base", "zpages/features/kube_features.go"),
    ("kubernetes/client-go", "client-go", "features/known_features.go"),
)

_CONST_RE = re.compile(
    r"^\s*(\w+)\s*(?:(?:(?:featuregate\.)?Feature\s*)?=\s*\"([^\"]+)\"|=\s*(?:featuregate\.)?Feature\(\"([^\"]+)\"\))",
    re.MULTILINE,
)
_VERSIONED_MAP_RE = re.compile(r"map\[(?:featuregate\.)?Feature\](?:featuregate\.)?VersionedSpecs\{")
_UNVERSIONED_MAP_RE = re.compile(r"map\[(?:featuregate\.)?Feature\](?:featuregate\.)?FeatureSpec\{")
_DEPS_MAP_RE = re.compile(r"map\[featuregate\.Feature\]\[\]featuregate\.Feature\{")
# featuregate.Feature(clientfeatures.AtomicFIFO): a conversion of another package's gate.
_CONVERSION_RE = re.compile(r"^featuregate\.Feature\(([\w.]+)\)$")
_KEY_RE = re.compile(r"([\w.]+)\s*:\s*\{")
_SPEC_RE = re.compile(r"\{([^{}]*)\}")
_FIELD_RE = re.compile(r"(\w+)\s*:\s*([^,]+?)\s*(?:,|$)")
_MUST_PARSE_RE = re.compile(r"version\.MustParse\(\"(\d+\.\d+)\"\)")
_MAJOR_MINOR_RE = re.compile(r"version\.MajorMinor\((\d+),\s*(\d+)\)")


class GenerateError(Exception):
    """The Go text is not in the shape this generator reads."""


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def _block(text: str, start: int) -> str:
    """The text between the ``{`` ending at ``start`` and its matching ``}``."""
    depth = 1
    i = start
    while depth:
        if i >= len(text):
            raise GenerateError("unbalanced braces")
        c = text[i]
        depth += c == "{"
        depth -= c == "}"
        i += 1
    return text[start : i - 1]


def _entries(body: str) -> list[tuple[str, str]]:
    """Top-level ``Key: {…}`` pairs of a map literal body."""
    out: list[tuple[str, str]] = []
    pos = 0
    while m := _KEY_RE.search(body, pos):
        inner = _block(body, m.end())
        out.append((m.group(1), inner))
        pos = m.end() + len(inner) + 1
    return out


def _consts(code: str) -> dict[str, str]:
    """``Ident featuregate.Feature = "Name"``, ``Ident = "Name"`` (untyped) and
    ``Ident = featuregate.Feature("Name")``."""
    return {ident: a or b for ident, a, b in _CONST_RE.findall(code)}


def _name(key: str, consts: dict[str, str]) -> str:
    if "." in key:
        return key.rsplit(".", 1)[1]
    if key not in consts:
        raise GenerateError(f"no const for feature key {key}")
    return consts[key]


def _spec(fields_text: str) -> dict[str, Any]:
    fields = dict(_FIELD_RE.findall(fields_text.strip()))
    raw_version = fields.get("Version", "")
    if m := _MUST_PARSE_RE.search(fields_text):
        ver = m.group(1)
    elif m := _MAJOR_MINOR_RE.search(fields_text):
        ver = f"{m.group(1)}.{m.group(2)}"
    elif not raw_version:
        ver = "0.0"
    else:
        raise GenerateError(f"unreadable Version: {raw_version}")
    stage = fields["PreRelease"].rsplit(".", 1)[-1]
    spec: dict[str, Any] = {
        "version": ver,
        "default": fields["Default"] == "true",
        "stage": stage,
        "locked": fields.get("LockToDefault", "false") == "true",
    }
    if "MinCompatibilityVersion" in fields:
        # component-base v0.37: a spec used only when the minimum compatibility version is at least this.
        m = _MUST_PARSE_RE.search(fields["MinCompatibilityVersion"])
        if m is None:
            raise GenerateError(f"unreadable MinCompatibilityVersion: {fields['MinCompatibilityVersion']}")
        spec["minCompatibilityVersion"] = m.group(1)
    return spec


def parse_specs(text: str) -> dict[str, list[dict[str, Any]]]:
    """Every gate of every feature-spec map literal in one Go file, name -> specs in order."""
    code = _strip_comments(text)
    consts = _consts(code)
    gates: dict[str, list[dict[str, Any]]] = {}
    for m in _VERSIONED_MAP_RE.finditer(code):
        for key, inner in _entries(_block(code, m.end())):
            gates[_name(key, consts)] = [_spec(s) for s in _SPEC_RE.findall(inner)]
    for m in _UNVERSIONED_MAP_RE.finditer(code):
        for key, inner in _entries(_block(code, m.end())):
            gates[_name(key, consts)] = [_spec(inner)]
    return gates


def parse_dependencies(text: str) -> dict[str, list[str]]:
    """``defaultKubernetesFeatureGateDependencies``: gate -> the gates it needs (non-empty lists only)."""
    code = _strip_comments(text)
    consts = _consts(code)
    deps: dict[str, list[str]] = {}
    for m in _DEPS_MAP_RE.finditer(code):
        for key, inner in _entries(_block(code, m.end())):
            keys = [_CONVERSION_RE.sub(r"\1", k.strip()) for k in inner.split(",")]
            needed = [_name(k, consts) for k in keys if k]
            if needed:
                deps[_name(key, consts)] = needed
    return deps


def generate(src_dir: Path) -> dict[str, Any]:
    """The data file's content from the Go text under ``src_dir``."""
    versions: dict[str, Any] = {}
    for ver, (binary, source, (cb_tag, cb_commit), (cg_tag, cg_commit)) in SOURCES.items():
        base = src_dir / ver
        kube_text = (base / "kube_features.go").read_text()
        gates = parse_specs(kube_text)
        origin = dict.fromkeys(gates, "kubernetes")
        extra_sources = []
        for repo, sub, rel in _EXTRA_FILES:
            tag, commit = (cb_tag, cb_commit) if sub == "component-base" else (cg_tag, cg_commit)
            extra = parse_specs((base / sub / rel).read_text())
            for name, specs in extra.items():
                if name in gates:
                    # Registered twice (zpages' gates are also in kube_features.go): Go's Add accepts
                    # only an identical spec, anything else panics at start-up.
                    if gates[name] != specs:
                        raise GenerateError(f"{ver}: {name} registered twice with different specs")
                    continue
                gates[name] = specs
                origin[name] = f"{sub}/{rel}"
            pin = {"moduleHash": commit} if commit.startswith("h1:") else {"commit": commit}
            extra_sources.append({"repo": repo, "path": rel, "tag": tag, **pin})
        versions[ver] = {
            "binaryVersion": binary,
            "source": source.as_json(),
            "extraSources": extra_sources,
            "gates": {name: gates[name] for name in sorted(gates)},
            "origin": {name: origin[name] for name in sorted(origin) if origin[name] != "kubernetes"},
            "dependencies": dict(sorted(parse_dependencies(kube_text).items())),
        }
    return {
        "comment": (
            "Generated by python -m kubeletemu.versions.generate from the kubelet's versioned feature "
            "specs; do not edit by hand. Per version: gate -> [{version, default, stage, locked}], the "
            "spec in effect being the last whose version <= the emulated version."
        ),
        "versions": versions,
    }


_SPEC_LINES_RE = re.compile(
    r"\{\n\s+(\"version\": [^\n]*)\n\s+(\"default\": [^\n]*)\n\s+(\"stage\": [^\n]*)\n"
    r"\s+(\"locked\": [^\n]*?)(?:\n\s+(\"minCompatibilityVersion\": [^\n]*))?\n\s+\}"
)


def dumps(data: dict[str, Any]) -> str:
    """Indented JSON with one spec per line (a reviewable diff when a version is added)."""
    text = json.dumps(data, indent=1)
    return _SPEC_LINES_RE.sub(lambda m: "{" + " ".join(g for g in m.groups() if g) + "}", text) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubeletemu.versions.generate", description=__doc__)
    parser.add_argument("src_dir", type=Path)
    parser.add_argument("--out", type=Path, default=DATA_FILE)
    args = parser.parse_args(argv)
    try:
        data = generate(args.src_dir)
    except (OSError, GenerateError, KeyError) as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
