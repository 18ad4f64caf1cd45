"""Shadow mode reads the real kubelet's checkpoints as that kubelet's version writes them (issue 16).

The files are real ones, written by a reference emulator in the kubelet's role at each version (its state
directory has the kubelet's layout): a V2 ``cpu_manager_state`` from 1.35, a V3 one (``podEntries``) from
1.36 with ``PodLevelResourceManagers``, a V4 one (``data``/``dataChecksum``) from master. They are read in
process (:func:`take_snapshot` + :func:`build_mirror`) and by the real ``serve --shadow`` daemon, whose
version comes from a stand-in kubelet binary. The pod-level pod takes a 3-CPU bubble of which its only
container holds 2: the third CPU is recorded in the pod's CPU set alone, so a mirror that lost the set
would not even start (its CPUs would not add up to the node's).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu.config import parse_config
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.manifest import parse_pods
from kubeletemu.shadow import KubeletPaths, Mirror, build_mirror, take_snapshot
from kubeletemu.shadow.errors import SourceInvalidError
from tests.shadow.conftest import DirectSource, machine_of
from tests.shadow.kubelet_double import SHADOW_OWN_CONFIG, FakeKubelet, PodResourcesDouble, write_like_kubelet
from tests.shadow.shadow_daemon import free_port, wait_for
from tests.shadow.test_kubelet_version import VersionedShadowDaemon, bin_dir, fake_kubelet_binary

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

GATE_ON = {"PodLevelResourceManagers": True}
PLR_UID = "33333333-0000-0000-0000-000000000001"
PLAIN_UID = "33333333-0000-0000-0000-000000000002"

# A pod-level 3-CPU bubble; the container's 2 CPUs are exclusive, the third is the pod's alone.
POD_LEVEL = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: plr, namespace: prod, uid: {PLR_UID}}}
spec:
  resources:
    requests: {{cpu: "3", memory: 1Gi}}
    limits: {{cpu: "3", memory: 1Gi}}
  containers:
  - name: c
    resources: {{limits: {{cpu: "2", memory: 512Mi}}}}
"""
PLAIN = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: plain, namespace: prod, uid: {PLAIN_UID}}}
spec:
  containers:
  - name: c
    resources: {{limits: {{cpu: "2", memory: 1Gi}}}}
"""
# What-if probes: the whole remaining shared pool of NUMA node 1, and a pod-level pod.
PROBES = """\
apiVersion: v1
kind: Pod
metadata: {name: probe-plain, namespace: t, uid: probe-1}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "4", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: probe-plr, namespace: t, uid: probe-2}
spec:
  resources:
    requests: {cpu: "5", memory: 1Gi}
    limits: {cpu: "5", memory: 1Gi}
  containers:
  - name: c
    resources: {limits: {cpu: "1", memory: 256Mi}}
"""
# (version emulated, feature gates, the CPU file's format, its keys)
CASES = [
    ("1.35", {}, "V2", ["policyName", "defaultCpuSet", "entries", "checksum"]),
    (
        "1.36",
        GATE_ON,
        "V3",
        ["policyName", "defaultCpuSet", "entries", "podEntries", "checksum"],
    ),
    (
        "master",
        GATE_ON,
        "V4",
        ["policyName", "defaultCpuSet", "entries", "checksum", "data", "dataChecksum"],
    ),
]


def versioned_kubelet(
    base: Path, host: tuple[Path, Path], version: str, gates: Mapping[str, bool]
) -> FakeKubelet:
    """A kubelet of ``version`` (pod scope: pod-level allocation needs it), with a plain pod and, when
    the gate is on, the pod-level pod."""
    kubelet = FakeKubelet(
        base, host=host, topology_scope="pod", kubelet_version=version, feature_gates=dict(gates)
    )
    kubelet.admit(PLAIN + ("---\n" + POD_LEVEL if gates else ""))
    return kubelet


def mirror_at(kubelet: FakeKubelet, version: str) -> Mirror:
    own = parse_config(SHADOW_OWN_CONFIG + f"kubeletVersion: '{version}'\n", "own.yaml")
    snapshot = take_snapshot(
        KubeletPaths.resolve(kubelet.root), DirectSource(kubelet), kubelet_version=version
    )
    return build_mirror(own, machine_of(kubelet), snapshot)


def cpu_doc(kubelet: FakeKubelet) -> dict[str, object]:
    doc: dict[str, object] = json.loads((kubelet.root / "cpu_manager_state").read_bytes())
    return doc


V1_ENTRIES_ERROR = (
    "json: cannot unmarshal object into Go struct field CPUManagerCheckpointV1.entries of type string"
)


# ---- in process -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "gates", "fmt", "keys"), CASES)
def test_each_versions_file_is_read_in_its_format(
    short_dir: Path,
    host: tuple[Path, Path],
    version: str,
    gates: Mapping[str, bool],
    fmt: str,
    keys: list[str],
) -> None:
    kubelet = versioned_kubelet(short_dir, host, version, gates)
    assert list(cpu_doc(kubelet)) == keys  # the file the kubelet of that version writes
    mirror = mirror_at(kubelet, version)
    assert mirror.snapshot.checkpoints.cpu_format == fmt
    ours, theirs = mirror.emulator.cm.cpus.state, kubelet.emulator.cm.cpus.state
    assert ours.get_default_cpu_set() == theirs.get_default_cpu_set()
    assert ours.get_cpu_assignments() == theirs.get_cpu_assignments()
    assert ours.get_pod_cpu_assignments() == theirs.get_pod_cpu_assignments()
    if gates:
        bubble = theirs.get_pod_cpu_assignments()[PLR_UID]
        assert bubble.size() == 3 and theirs.get_cpu_assignments()[PLR_UID]["c"].size() == 2
        assert mirror.snapshot.checkpoints.cpu_pod_sets == {PLR_UID: bubble}
        # Its spec.resources are rebuilt from the bubble (no "may diverge" note any more).
        (plr,) = [m.pod for m in mirror.reconstruction.pods if m.pod.uid == PLR_UID]
        assert plr.resources is not None and plr.resources.limits["cpu"].value() == 3
        assert not [w for w in mirror.warnings if "may diverge" in w]
    else:
        assert ours.get_pod_cpu_assignments() == {}
    # What-if answers against the mirror are the kubelet's own.
    for pod in parse_pods(PROBES if gates else PROBES.split("---\n")[0], "probe"):
        mine, reference = mirror.emulator.would_admit(pod), kubelet.emulator.would_admit(pod)
        assert (mine.admitted, mine.reason) == (reference.admitted, reference.reason), pod.name
        assert [c.cpu_ids for c in mine.containers] == [c.cpu_ids for c in reference.containers]


def test_the_spare_cpu_is_only_in_the_pod_set(short_dir: Path, host: tuple[Path, Path]) -> None:
    """1.36's V2 fields leave the bubble's spare CPU in no set (read as V2, the state's CPUs would not add
    up to the node's and the mirror would be refused); read as V3, the mirror holds it in the pod's set."""
    kubelet = versioned_kubelet(short_dir, host, "1.36", GATE_ON)
    state = kubelet.emulator.cm.cpus.state
    spare = state.get_pod_cpu_assignments()[PLR_UID] - state.get_cpu_assignments()[PLR_UID]["c"]
    assert spare.size() == 1
    doc = cpu_doc(kubelet)
    known = CPUSet.parse(str(doc["defaultCpuSet"])).union(
        *(CPUSet.parse(c) for cs in doc["entries"].values() for c in cs.values())  # type: ignore[attr-defined]
    )
    assert (known & spare).is_empty()
    assert spare.is_subset_of(
        mirror_at(kubelet, "1.36").emulator.cm.cpus.state.get_pod_cpu_assignments()[PLR_UID]
    )


def test_master_reads_data_not_the_embedded_v2(short_dir: Path, host: tuple[Path, Path]) -> None:
    """A master file whose embedded V2 no longer verifies but whose data does: master reads the data
    (dataChecksum is authoritative), so the mirror is the kubelet's state."""
    kubelet = versioned_kubelet(short_dir, host, "master", GATE_ON)
    path = kubelet.root / "cpu_manager_state"
    doc = cpu_doc(kubelet)
    doc["checksum"] = int(doc["checksum"]) ^ 1  # type: ignore[call-overload]
    write_like_kubelet(path, json.dumps(doc, separators=(",", ":")).encode())
    mirror = mirror_at(kubelet, "master")
    assert mirror.snapshot.checkpoints.cpu_format == "V4"
    pods = kubelet.emulator.cm.cpus.state.get_pod_cpu_assignments()
    assert mirror.emulator.cm.cpus.state.get_pod_cpu_assignments() == pods


@pytest.mark.parametrize(
    ("version", "gates", "problem"),
    [
        # V1 is read first and fails on the entries' shape; then V2's checksum fails, and V2's error is
        # the one returned (1.33 … 1.35's restoreState: cpumanager.checkpoint-read-order).
        (
            "1.35",
            {},
            "checkpoint is corrupted",
        ),
        # 1.36 turned the order round: V2's checksum fails, then V1 on the entries' shape, its error shown.
        (
            "1.36",
            GATE_ON,
            V1_ENTRIES_ERROR,
        ),
        # V4 with data: refused, no fallback to the (still valid) embedded V2 (kubernetes#139087's wrapping).
        ("master", GATE_ON, "could not load v4 checkpoint: checkpoint is corrupted"),
    ],
)
def test_a_corrupt_file_is_refused_with_the_kubelets_text(
    short_dir: Path, host: tuple[Path, Path], version: str, gates: Mapping[str, bool], problem: str
) -> None:
    kubelet = versioned_kubelet(short_dir, host, version, gates)
    path = kubelet.root / "cpu_manager_state"
    text = path.read_text()
    # The last digit of the default set (the data's copy in V4): content, not checksum.
    start = text.rindex('defaultCpuSet\\":\\"' if version == "master" else '"defaultCpuSet":"')
    index = next(i for i in range(start, len(text)) if text[i].isdigit())
    write_like_kubelet(path, (text[:index] + str((int(text[index]) + 1) % 10) + text[index + 1 :]).encode())
    with pytest.raises(SourceInvalidError) as err:
        mirror_at(kubelet, version)
    assert str(err.value) == f"the kubelet's CPU manager checkpoint {path} is not usable: {problem}"


# ---- the real daemon --------------------------------------------------------------------------------


@pytest.fixture
def pod_level_kubelet(
    short_dir: Path, host: tuple[Path, Path], request: pytest.FixtureRequest
) -> FakeKubelet:
    version: str = request.param
    return versioned_kubelet(short_dir, host, version, GATE_ON)


def start_daemon(kubelet: FakeKubelet, short_dir: Path, said: str) -> VersionedShadowDaemon:
    """``serve --shadow`` beside ``kubelet``, its version taken from a binary that says ``said``."""
    binary = fake_kubelet_binary(bin_dir(short_dir), said)
    workdir = short_dir / "d"
    workdir.mkdir(exist_ok=True)
    config = f"{SHADOW_OWN_CONFIG}kubeletBinary: {json.dumps(str(binary))}\n"
    daemon = VersionedShadowDaemon(kubelet, workdir, metrics_port=free_port(), own_config=config)
    return daemon.start()


@pytest.fixture
def daemon_of(pod_level_kubelet: FakeKubelet, short_dir: Path) -> Iterator[VersionedShadowDaemon]:
    # A master kubelet is built after the 1.37 branch: it says v1.38.0-alpha, newer than every release known.
    said = {
        "1.36": "Kubernetes v1.36.1\n",
        "1.37": "Kubernetes v1.37.2\n",
        "master": "Kubernetes v1.38.0-alpha.0\n",
    }
    with PodResourcesDouble(pod_level_kubelet):
        daemon = start_daemon(pod_level_kubelet, short_dir, said[pod_level_kubelet.kubelet_version or ""])
        try:
            yield daemon
        finally:
            daemon.stop()


def _samples(port: int) -> dict[str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if line and line[0] != "#")


@pytest.mark.parametrize("pod_level_kubelet", ["1.36", "1.37", "master"], indirect=True)
def test_the_daemon_mirrors_the_pod_level_cpu_set(
    pod_level_kubelet: FakeKubelet, daemon_of: VersionedShadowDaemon
) -> None:
    kubelet, daemon = pod_level_kubelet, daemon_of
    version = kubelet.kubelet_version
    report = daemon.report()
    assert (report.kubelet_version, report.kubelet_version_source) == (version, "binary")
    assert report.last_error == "" and report.generation == 1
    assert (report.kubelet_version_note != "") == (version == "master")  # "newer than ... emulating master"
    stub = daemon.stub()
    theirs = kubelet.emulator.cm.cpus
    bubble = theirs.state.get_pod_cpu_assignments()[PLR_UID]
    # The shared pool is the kubelet's: the bubble's spare CPU is in neither it nor any container.
    topology = stub.GetNodeTopology(pb.GetNodeTopologyRequest(), timeout=10)
    assert list(topology.shared_pool_cpu_ids) == theirs.state.get_default_cpu_set().list()
    gauges = theirs.metrics().gauges
    assert gauges is not None
    samples = _samples(daemon.metrics_port or 0)
    mirrored = int(samples["kubelet_cpu_manager_exclusive_cpu_allocation_count"])
    if version == "master":
        # The kubelet's CPU gauges count the pod's set (PodLevelResourceManagers), as the mirror's do.
        assert mirrored == gauges.exclusive_cpus
    else:
        # 1.36 and 1.37 move their gauges by deltas (cpumanager.metrics-from-state): the running kubelet
        # counted the whole bubble when it took it; the mirror starts from the state as a restarted kubelet
        # of that version does (initializeMetrics: container assignments only), so the bubble's spare CPU
        # is not counted.
        assignments = theirs.state.get_cpu_assignments().values()
        containers = CPUSet().union(*(cpus for pod in assignments for cpus in pod.values()))
        assert (mirrored, gauges.exclusive_cpus) == (containers.size(), containers.size() + 1)
    with daemon.podresources_channel() as channel:
        listed = v1_grpc.PodResourcesListerStub(channel).List(v1.ListPodResourcesRequest(), timeout=10)
    assert listed == kubelet.listing
    plr = next(p for p in listed.pod_resources if p.name == "plr")
    # 1.37 and master report the pod's set on the pod (KEP-5526); 1.36's API has no such field.
    assert list(plr.cpu_ids) == ([] if version == "1.36" else bubble.list())
    for manifest in PROBES.split("---\n"):
        (pod,) = parse_pods(manifest, "probe")
        ours = stub.WouldAdmit(pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
        reference = kubelet.emulator.would_admit(pod)
        assert (ours.admitted, ours.reason) == (reference.admitted, reference.reason), pod.name
        assert [list(c.cpu_ids) for c in ours.containers] == [list(c.cpu_ids) for c in reference.containers]


@pytest.mark.parametrize("pod_level_kubelet", ["master"], indirect=True)
def test_the_daemon_refuses_a_corrupt_v4_file_as_the_kubelet_does(
    pod_level_kubelet: FakeKubelet, daemon_of: VersionedShadowDaemon
) -> None:
    kubelet, daemon = pod_level_kubelet, daemon_of
    path = kubelet.root / "cpu_manager_state"
    doc = cpu_doc(kubelet)
    doc["dataChecksum"] = int(doc["dataChecksum"]) ^ 1  # type: ignore[call-overload]
    write_like_kubelet(path, json.dumps(doc, separators=(",", ":")).encode())
    report = wait_for(lambda: (r := daemon.report()).last_error and r)
    assert (
        report.last_error == f"the kubelet's CPU manager checkpoint {path} is not usable: "
        "could not load v4 checkpoint: checkpoint is corrupted"
    )
    assert report.generation == 1  # the previous mirror stays
