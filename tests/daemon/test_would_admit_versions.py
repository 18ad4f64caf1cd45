"""``WouldAdmit`` asked of another kubelet version (issue 16): an upgrade what-if on the node as it is now.

The daemon emulates master. Its configuration turns ``CPUManagerPolicyBetaOptions`` off and sets
``strict-cpu-reservation``, which is beta in 1.33 and 1.34 and GA from 1.35 (kubernetes#134388), and it
names ``KubeletPodResourcesListUseActivePods``, a gate 1.33 does not know: a 1.33 or 1.34 kubelet would
not start with it, a 1.35 one admits. Pod-level resources count in the node fit from 1.34
(``PodLevelResources`` beta and on, kubernetes#132999) and not in 1.33 (alpha, off).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.daemon_process import REPO, DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

# The sample host: 2 NUMA nodes, 16 CPUs; 1 CPU kube-reserved leaves 15 allocatable.
CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
cpuManagerPolicy: static
cpuManagerPolicyOptions: {strict-cpu-reservation: "true"}
kubeReserved: {cpu: "1", memory: 512Mi}
featureGates:
  CPUManagerPolicyBetaOptions: false
  KubeletPodResourcesListUseActivePods: true
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
"""

HOLDER = """\
apiVersion: v1
kind: Pod
metadata: {name: holder, namespace: ns, uid: uid-holder}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "8", memory: 1Gi}}
"""

# Asks 8 CPUs at pod level only: with 8 of 15 CPUs held, it fits only where pod-level requests are ignored.
POD_LEVEL = """\
apiVersion: v1
kind: Pod
metadata: {name: plr, namespace: ns, uid: uid-plr}
spec:
  resources: {requests: {cpu: "8"}}
  containers:
  - name: c
"""

GUARANTEED = """\
apiVersion: v1
kind: Pod
metadata: {name: gu, namespace: ns, uid: uid-gu}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "2", memory: 1Gi}}
"""

REFUSED_OPTION = (
    "new static policy error: CPU Manager Policy Beta-level Options not enabled, "
    'but option "strict-cpu-reservation" provided'
)


MakeDaemon = Callable[..., DaemonProcess]


@pytest.fixture
def daemon(make_daemon: MakeDaemon) -> DaemonProcess:
    process = make_daemon(config_text=CONFIG)
    reply = process.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=HOLDER)), timeout=10)
    assert reply.admitted, reply.message
    return process


def would_admit(daemon: DaemonProcess, manifest: str, version: str = "") -> pb.AdmitResponse:
    request = pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest), kubelet_version=version)
    reply: pb.AdmitResponse = daemon.stub().WouldAdmit(request, timeout=10)
    return reply


def refusal(daemon: DaemonProcess, manifest: str, version: str) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        would_admit(daemon, manifest, version)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    return err.value


def test_the_answer_changes_between_versions(daemon: DaemonProcess) -> None:
    # The policy option: refused by 1.34 (beta, its gate off), GA and admitted from 1.35.
    assert refusal(daemon, GUARANTEED, "1.34").details() == f"kubeletVersion 1.34: {REFUSED_OPTION}"
    for version in ("1.35", "v1.36.1", "master", ""):
        reply = would_admit(daemon, GUARANTEED, version)
        assert reply.admitted, (version, reply.message)
        assert len(reply.containers[0].cpu_ids) == 2
    # 1.33 stops earlier, at the gate it does not know (featureGates are checked before the managers).
    details = refusal(daemon, GUARANTEED, "1.33").details()
    assert "unrecognized feature gate: KubeletPodResourcesListUseActivePods (kubeletVersion 1.33)" in details


def test_pod_level_requests_count_from_1_34(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    # Without the option (which 1.33 refuses here), on the node holding 8 of its 15 CPUs.
    daemon = make_daemon(
        config_text=CONFIG.replace('cpuManagerPolicyOptions: {strict-cpu-reservation: "true"}\n', "").replace(
            "  KubeletPodResourcesListUseActivePods: true\n", ""
        )
    )
    assert daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=HOLDER)), timeout=10).admitted
    # 1.33: PodLevelResources is alpha and off, so the node fit ignores the pod-level requests, and
    # the pod fits (1.33 has no pod-features admit handler to refuse it for setting them).
    old = would_admit(daemon, POD_LEVEL, "1.33")
    assert (old.admitted, old.reason) == (True, "")
    for version in ("1.34", ""):
        new = would_admit(daemon, POD_LEVEL, version)
        assert (new.admitted, new.reason) == (False, "OutOfcpu")
        assert "requested: 8000, used: 8000, capacity: 15000" in new.message
    # A what-if: the node still holds the one pod it held.
    listed = daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10)
    assert [p.name for p in listed.pods] == ["holder"]

    cli = cli_runner(daemon, tmp_path)
    older = cli("would-admit", "-f", "pod.yaml", "--kubelet-version", "1.33")
    assert older.returncode == 0, older.stderr
    assert "ADMITTED" in older.stdout and "REJECTED" not in older.stdout
    newer = cli("would-admit", "-f", "pod.yaml", "--kubelet-version", "v1.34.3")
    assert newer.returncode == 1, newer.stderr
    assert "REJECTED OutOfcpu" in newer.stdout
    unknown = cli("would-admit", "-f", "pod.yaml", "--kubelet-version", "1.29")
    assert unknown.returncode == 2
    assert 'kubeletVersion "1.29": supported: 1.33, 1.34, 1.35, 1.36, 1.37, master' in unknown.stderr


def cli_runner(daemon: DaemonProcess, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``kubeletemu ARGS --socket S`` run in ``tmp_path``, where ``pod.yaml`` is the pod-level pod."""
    (tmp_path / "pod.yaml").write_text(POD_LEVEL)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kubeletemu.cli", *args, "--socket", str(daemon.socket)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            check=False,
        )

    return run


@pytest.mark.parametrize("version", ["1.29", "latest", "1.38"])
def test_unsupported_version_names_the_range(daemon: DaemonProcess, version: str) -> None:
    details = refusal(daemon, GUARANTEED, version).details()
    assert details == f'kubeletVersion "{version}": supported: 1.33, 1.34, 1.35, 1.36, 1.37, master'


# ``resources: {}``: present, naming nothing. Up to 1.36 it makes the pod BestEffort; from 1.37
# (PodLevelResourcesFixKubeletQOSClass, kubernetes#137150) the Guaranteed container decides.
EMPTY_POD_LEVEL = GUARANTEED.replace(
    "metadata: {name: gu, namespace: ns, uid: uid-gu}", "metadata: {name: e, namespace: ns, uid: uid-e}"
).replace("spec:\n", "spec:\n  resources: {}\n")


def test_empty_pod_level_resources_leave_the_qos_to_the_containers_from_1_37(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon(
        config_text=CONFIG.replace('cpuManagerPolicyOptions: {strict-cpu-reservation: "true"}\n', "").replace(
            "  KubeletPodResourcesListUseActivePods: true\n", ""
        )
    )
    for version, qos, exclusive in (
        ("1.36", "BestEffort", 0),
        ("1.37", "Guaranteed", 2),
        ("", "Guaranteed", 2),
    ):
        reply = would_admit(daemon, EMPTY_POD_LEVEL, version)
        assert reply.admitted, (version, reply.message)
        assert reply.qos_class == qos, version
        (container,) = reply.containers
        assert (len(container.cpu_ids) if container.exclusive_cpus else 0) == exclusive, version
    admitted = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=EMPTY_POD_LEVEL)), timeout=10)
    assert (admitted.admitted, admitted.qos_class) == (True, "Guaranteed")
    listed = daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10)
    assert [(p.name, p.qos_class) for p in listed.pods] == [("e", "Guaranteed")]
