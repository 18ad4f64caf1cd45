"""Shadow replay of pod-level pods (``PodLevelResourceManagers``): their ``spec.resources`` and container
requests are rebuilt from the bubble the kubelet recorded, so the replay agrees with the kubelet.

The kubelet is a reference emulator of 1.36 or master with the gate on (its files and podresources answers
are real ones: :class:`FakeKubelet`); the node holds one pod-level pod of each shape the carving has: an
exclusive container beside two sharing the remainder, an equivalent-Guaranteed container with a fractional
CPU (shared CPUs, its own memory), two exclusive containers covering the bubble, and a sidecar started
before a regular init container. Checked in process and through the real ``serve --shadow`` daemon.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeletemu.manifest import parse_pods
from kubeletemu.shadow.replay import replay
from tests.shadow.kubelet_double import FakeKubelet, PodResourcesDouble
from tests.shadow.shadow_daemon import wait_for
from tests.shadow.test_checkpoint_versions import GATE_ON, PLAIN, mirror_at, start_daemon
from tests.shadow.test_kubelet_version import VersionedShadowDaemon

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)


def pod_level(name: str, uid: int, cpu: int, memory: str, containers: str, init: str = "") -> str:
    bubble = f'{{cpu: "{cpu}", memory: {memory}}}'
    return (
        "apiVersion: v1\nkind: Pod\n"
        f"metadata: {{name: {name}, namespace: prod, uid: 55555555-0000-0000-0000-00000000000{uid}}}\n"
        "spec:\n"
        f"  resources: {{requests: {bubble}, limits: {bubble}}}\n"
        f"{init}  containers:\n{containers}"
    )


def gu(name: str, cpu: str, memory: str) -> str:
    return f'  - name: {name}\n    resources: {{limits: {{cpu: "{cpu}", memory: {memory}}}}}\n'


def shared(name: str) -> str:
    return f"  - name: {name}\n"


PODS = [
    PLAIN,
    pod_level("mixed", 1, 4, "2Gi", gu("ex", "2", "512Mi") + shared("sh1") + shared("sh2")),
    pod_level("frac", 2, 2, "1Gi", gu("f", "500m", "256Mi") + shared("s")),
    pod_level("covered", 3, 2, "1Gi", gu("a", "1", "512Mi") + gu("b", "1", "512Mi")),
    pod_level(
        "sidecar",
        4,
        4,
        "1Gi",
        gu("a", "1", "256Mi") + shared("s"),
        init="  initContainers:\n"
        '  - name: sc\n    restartPolicy: Always\n    resources: {limits: {cpu: "1", memory: 256Mi}}\n'
        "  - name: i\n",
    ),
]
CASES = [("1.36", True), ("1.37", True), ("1.37", False), ("master", True), ("master", False)]


def reference(base: Path, host: tuple[Path, Path], version: str, static_memory: bool) -> FakeKubelet:
    kubelet = FakeKubelet(
        base,
        host=host,
        topology_scope="pod",
        kubelet_version=version,
        feature_gates=dict(GATE_ON),
        static_memory=static_memory,
    )
    kubelet.admit("---\n".join(PODS))
    assert len(kubelet.emulator.registry) == len(PODS)  # every pod admitted, every shape on the node
    return kubelet


@pytest.mark.parametrize(("version", "static_memory"), CASES)
def test_the_replay_agrees_on_every_pod_level_pod(
    short_dir: Path, host: tuple[Path, Path], version: str, static_memory: bool
) -> None:
    kubelet = reference(short_dir, host, version, static_memory)
    mirror = mirror_at(kubelet, version)
    result = replay(mirror)
    assert result.divergences == ()
    assert result.containers_agreeing == result.containers_checked >= 9
    assert not [w for w in mirror.warnings if "pod-level" in w or "may diverge" in w]
    # The rebuilt pods carry the kubelet's bubbles as spec.resources.
    theirs = kubelet.emulator.cm.cpus.state.get_pod_cpu_assignments()
    for mirrored in mirror.reconstruction.pods:
        if mirrored.pod.name == "plain":
            assert mirrored.pod.resources is None
            continue
        assert mirrored.pod.resources is not None
        assert mirrored.pod.resources.limits["cpu"].value() == theirs[mirrored.pod.uid].size()
    # What-if answers against the mirror are the kubelet's own, for a pod-level probe too.
    (probe,) = parse_pods(pod_level("probe", 9, 2, "512Mi", gu("c", "1", "256Mi") + shared("s")), "probe")
    mine, ref = mirror.emulator.would_admit(probe), kubelet.emulator.would_admit(probe)
    assert (mine.admitted, mine.reason) == (ref.admitted, ref.reason)
    assert [c.cpu_ids for c in mine.containers] == [c.cpu_ids for c in ref.containers]


@pytest.fixture
def daemon_of_pod_level_node(
    short_dir: Path, host: tuple[Path, Path], request: pytest.FixtureRequest
) -> Iterator[tuple[FakeKubelet, VersionedShadowDaemon]]:
    version: str = request.param
    kubelet = reference(short_dir, host, version, True)
    said = {
        "1.36": "Kubernetes v1.36.1\n",
        "1.37": "Kubernetes v1.37.2\n",
        "master": "Kubernetes v1.38.0-alpha.0\n",  # built after the 1.37 branch: newer than any release known
    }[version]
    with PodResourcesDouble(kubelet):
        daemon = start_daemon(kubelet, short_dir, said)
        try:
            yield kubelet, daemon
        finally:
            daemon.stop()


@pytest.mark.parametrize("daemon_of_pod_level_node", ["1.36", "1.37", "master"], indirect=True)
def test_serve_shadow_replays_pod_level_pods_without_divergence(
    daemon_of_pod_level_node: tuple[FakeKubelet, VersionedShadowDaemon],
) -> None:
    kubelet, daemon = daemon_of_pod_level_node
    report = wait_for(lambda: (r := daemon.report()).generation and r)
    assert report.last_error == ""
    assert report.kubelet_version == kubelet.kubelet_version
    assert list(report.divergences) == []
    assert report.containers_checked == report.containers_agreeing >= 9
    assert not [w for w in report.warnings if "may diverge" in w]
    assert sorted(report.replay_order) == sorted(f"prod/{p.name}" for p in kubelet.emulator.registry.pods())
