"""The daemon imports everything it serves at start-up: a package replaced under it (``pip install`` of a
new version before ``systemctl restart``) changes nothing it answers until it restarts.

The daemon runs from a copy of the package; once it serves, the copy is moved away, so that any module,
or data file, the daemon would read only when a call needs it is gone. Then every method of every service
is called, each flavour and each scheduler model included: every answer must be what a daemon with its
package in place gives.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc as pb_grpc
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2_grpc as v1alpha1_grpc
from tests.daemon.conftest import sample_config
from tests.daemon.daemon_process import REPO, DaemonProcess
from tests.daemon.test_daemon_admission import pod_yaml
from tests.daemon.test_simulate_daemon import SIMULATION

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

PACKAGES = ("kubeletemu", "hostprobe")
# The venv installs the working tree in editable mode: its import hook would find a module the copy no
# longer has in the working tree. The daemon runs without it, as an installed (non-editable) package does.
PRELUDE = (
    "import sys\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '')]\n"
    "from kubeletemu.cli import main\n"
    "sys.exit(main())\n"
)

OTHER_NODE = """\
apiVersion: v1
kind: Node
metadata: {name: other}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "10"}
"""


def scheduler_config(plugin: str) -> str:
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        f"- plugins: {{multiPoint: {{enabled: [{{name: {plugin}}}]}}}}\n"
    )


@dataclass
class CopiedDaemon(DaemonProcess):
    """The real daemon, importing the packages from ``root`` only (``-P``: not the working directory)."""

    root: Path | None = None

    def argv(self) -> list[str]:
        return [sys.executable, "-P", "-c", PRELUDE, *super().argv()[3:]]

    def env(self) -> dict[str, str]:
        env = super().env()
        env["PYTHONPATH"] = str(self.root)
        return env


def calls(daemon: DaemonProcess) -> dict[str, Callable[[], object]]:
    """Every method the daemon serves, with a request that reaches its work (not a refusal)."""
    admission = pb_grpc.AdmissionStub(daemon.channel())
    pods_channel = daemon.podresources_channel()
    lister = v1_grpc.PodResourcesListerStub(pods_channel)
    legacy = v1alpha1_grpc.PodResourcesListerStub(pods_channel)
    pod = pb.PodSource(manifest=pod_yaml("probe", "2", dev=1))
    out: dict[str, Callable[[], object]] = {
        "WouldAdmit": lambda: admission.WouldAdmit(pb.WouldAdmitRequest(pod=pod), timeout=30),
        "GetAffinity": lambda: admission.GetAffinity(
            pb.GetAffinityRequest(pod_uid="uid-resident", container_name="app"), timeout=30
        ),
        "ListPods": lambda: admission.ListPods(pb.ListPodsRequest(), timeout=30),
        "GetNodeTopology": lambda: admission.GetNodeTopology(pb.GetNodeTopologyRequest(), timeout=30),
        "LeastNUMANodes": lambda: admission.LeastNUMANodes(pb.LeastNUMANodesRequest(pod=pod), timeout=30),
        "Simulate": lambda: admission.Simulate(pb.SimulateRequest(simulation=SIMULATION), timeout=60),
        "podresources.v1/List": lambda: lister.List(v1.ListPodResourcesRequest(), timeout=30),
        "podresources.v1/GetAllocatableResources": lambda: lister.GetAllocatableResources(
            v1.AllocatableResourcesRequest(), timeout=30
        ),
        "podresources.v1/Get": lambda: lister.Get(
            v1.GetPodResourcesRequest(pod_name="resident", pod_namespace="default"), timeout=30
        ),
        "podresources.v1alpha1/List": lambda: legacy.List(v1alpha1.ListPodResourcesRequest(), timeout=30),
        "health": lambda: health_pb2_grpc.HealthStub(daemon.channel()).Check(
            health_pb2.HealthCheckRequest(), timeout=30
        ),
    }
    for method in ("", "all", "exclude-terminal"):
        out[f"GetFingerprint/{method or 'default'}"] = lambda m=method: admission.GetFingerprint(  # type: ignore[misc]
            pb.GetFingerprintRequest(method=m), timeout=30
        )
    for flavour in ("rte", "koordlet"):
        for trigger in ("periodic", "reactive"):
            out[f"GetNodeResourceTopology/{flavour}/{trigger}"] = lambda f=flavour, t=trigger: (  # type: ignore[misc]
                admission.GetNodeResourceTopology(
                    pb.GetNodeResourceTopologyRequest(flavour=f, update_trigger=t, fingerprint_method="all"),
                    timeout=30,
                )
            )
    plugins = ("", "NodeResourceTopologyMatch", "NodeNUMAResource", "NodeNUMAResourceDesign")
    for plugin in plugins:
        for flavour in ("", "rte", "koordlet"):
            config = scheduler_config(plugin) if plugin else ""
            request = pb.ScheduleRequest(
                pod=pod, objects=OTHER_NODE, scheduler_config=config, flavour=flavour
            )
            out[f"Schedule/{plugin or 'default'}/{flavour or 'auto'}"] = lambda r=request: admission.Schedule(  # type: ignore[misc]
                r, timeout=60
            )
    return out


def answers(daemon: DaemonProcess) -> dict[str, object]:
    """Each call's answer, or its status and message when it fails."""
    out: dict[str, object] = {}
    for name, call in calls(daemon).items():
        try:
            out[name] = call()
        except grpc.RpcError as err:
            out[name] = (err.code(), err.details())
    return out


@pytest.fixture
def copied(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[CopiedDaemon]:
    root = tmp_path / "site"
    for package in PACKAGES:
        shutil.copytree(REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "c").mkdir()
    base = DaemonProcess.in_dir(tmp_path / "c", sample_config(), sample_tree)
    daemon = CopiedDaemon(**{**base.__dict__, "root": root})
    yield daemon
    daemon.stop()


def test_a_package_moved_away_under_the_daemon_changes_no_answer(
    copied: CopiedDaemon, make_daemon: Callable[..., DaemonProcess]
) -> None:
    daemon = copied.start(timeout=60)
    assert copied.root is not None
    for package in PACKAGES:  # what a new version's install does to the old files, at its worst
        (copied.root / package).rename(copied.root / f"{package}.old")
    resident = pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml("resident", "2", dev=1)))
    assert pb_grpc.AdmissionStub(daemon.channel()).Admit(resident, timeout=30).admitted
    after = answers(daemon)
    failed = {k: v for k, v in after.items() if isinstance(v, tuple)}
    assert failed == {}, "\n".join(f"{k}: {v[1]}" for k, v in sorted(failed.items()))
    # The same answers as a daemon with its package in place, on the same node.
    reference = make_daemon()
    assert reference.stub().Admit(resident, timeout=30).admitted
    expected = answers(reference)
    assert {k: v for k, v in after.items() if v != expected[k]} == {}
    # The calls that change the node, last: they work too, and the daemon still stops cleanly.
    admission = pb_grpc.AdmissionStub(daemon.channel())
    assert admission.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml("late"))), timeout=30).admitted
    admission.RemovePod(pb.RemovePodRequest(uid="uid-late"), timeout=30)
    with pytest.raises(grpc.RpcError) as shadow:
        admission.GetShadowReport(pb.GetShadowReportRequest(), timeout=30)
    assert shadow.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert daemon.stop() == 0
    assert "Traceback" not in daemon.log.read_text()
