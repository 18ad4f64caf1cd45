"""``Schedule`` and ``nrt --flavour koordlet`` through the real daemon on a node with NVIDIA GPUs: koordlet's
``Device`` object is published next to its NRT, and Koordinator's NodeNUMAResource (with DeviceShare) reads
it and the device-allocated annotations of the pods holding GPUs, so its verdict follows the kubelet's
on which NUMA node holds the free GPU and on a GPU already in use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.daemon_process import REPO, DaemonProcess
from tests.nodes import kubelet_config

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)


def gpu_config(gpus: str) -> str:
    """The sample host (2 NUMA nodes of 8 CPUs; kube-reserved takes CPU 0, on NUMA 0), pod scope, these
    NVIDIA GPUs."""
    return kubelet_config(
        "single-numa-node",
        "pod",
        emulator=f"nodeName: gpu-node\ndevices:\n- resourceName: nvidia.com/gpu\n  devices: [{gpus}]\n",
    )


KOORD = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins: {multiPoint: {enabled: [{name: NodeNUMAResource}]}}
"""
# DeviceShare's own verdict, without NodeResourcesFit's count of the Node's allocatable GPUs before it.
KOORD_ALONE = KOORD.replace("]}}", "], disabled: [{name: '*'}]}}")


def pod(name: str, limits: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns}}\nspec:\n  containers:\n"
        f"  - name: c\n    resources:\n      limits: {{{limits}}}\n"
    )


MakeDaemon = Callable[..., DaemonProcess]
GpuDaemon = Callable[[str], DaemonProcess]
GPU_POD = pod("gpu-pod", 'cpu: "4", memory: 1Gi, nvidia.com/gpu: "1"')


@pytest.fixture
def gpu_daemon(make_daemon: MakeDaemon) -> GpuDaemon:
    """``gpu_daemon(gpus)``: the daemon on :func:`gpu_config`."""
    return lambda gpus: make_daemon(config_text=gpu_config(gpus))


def schedule(daemon: DaemonProcess, manifest: str, config: str = KOORD, flavour: str = "") -> pb.NodeVerdict:
    request = pb.ScheduleRequest(
        pod=pb.PodSource(manifest=manifest), scheduler_config=config, flavour=flavour
    )
    reply = daemon.stub().Schedule(request, timeout=20)
    assert isinstance(reply, pb.ScheduleResponse) and len(reply.nodes) == 1
    return reply.nodes[0]


def admit(daemon: DaemonProcess, manifest: str) -> None:
    assert daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10).admitted


def would_admit(daemon: DaemonProcess, manifest: str) -> pb.AdmitResponse:
    reply = daemon.stub().WouldAdmit(pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
    assert isinstance(reply, pb.AdmitResponse)
    return reply


def cli(daemon: DaemonProcess, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=60, check=False,
    )  # fmt: skip


def test_the_free_gpus_numa_node_decides_koordinators_fit(gpu_daemon: GpuDaemon, tmp_path: Path) -> None:
    """GPU-0 on NUMA 0, GPU-1 on NUMA 1. A pod pins NUMA 1's 8 CPUs, another takes GPU-0 (and a CPU of
    NUMA 0): the free GPU is on the NUMA node without CPUs. The kubelet refuses a 4-CPU GPU pod, and so
    does Koordinator on koordlet's objects; on RTE's (no Device, no annotations) it lets it through."""
    daemon = gpu_daemon("{id: GPU-0, numaNodes: [0]}, {id: GPU-1, numaNodes: [1]}")
    # Published: the NRT and the Device in one List, which `schedule --nrt` reads back.
    out = cli(daemon, tmp_path, "nrt", "--flavour", "koordlet", "--socket", str(daemon.socket))
    assert out.returncode == 0, out.stderr
    doc = yaml.safe_load(out.stdout)
    assert doc["kind"] == "List"
    assert [i["kind"] for i in doc["items"]] == ["NodeResourceTopology", "Device"]
    device = doc["items"][1]
    assert device["metadata"] == {"name": "gpu-node", "labels": {"node.koordinator.sh/gpu-vendor": "nvidia"}}
    assert [(d["id"], d["minor"], d["topology"]["nodeID"]) for d in device["spec"]["devices"]] == [
        ("GPU-0", 0, 0),
        ("GPU-1", 1, 1),
    ]
    table = cli(
        daemon, tmp_path, "nrt", "--flavour", "koordlet", "-o", "table", "--socket", str(daemon.socket)
    )
    rows = [line.split() for line in table.stdout.splitlines()]
    assert rows[-3][:6] == ["DEVICE", "MINOR", "ID", "HEALTH", "NUMA", "PCIE"]
    assert [r[:6] for r in rows[-2:]] == [
        ["gpu", "0", "GPU-0", "true", "0", "pcie-numa0"],
        ["gpu", "1", "GPU-1", "true", "1", "pcie-numa1"],
    ]
    rte = yaml.safe_load(cli(daemon, tmp_path, "nrt", "--socket", str(daemon.socket)).stdout)
    assert rte["kind"] == "NodeResourceTopology"  # RTE publishes no Device
    (tmp_path / "published.yaml").write_text(out.stdout)
    (tmp_path / "sched.yaml").write_text(KOORD)
    (tmp_path / "alone.yaml").write_text(KOORD_ALONE)
    (tmp_path / "gpu-pod.yaml").write_text(GPU_POD)
    # No Node object in the file (kubectl get nodes gives it): DeviceShare's verdict alone, GPU-0 aligned.
    offline = cli(daemon, tmp_path, "schedule", "-f", "gpu-pod.yaml", "--nrt", "published.yaml",
                  "--scheduler-config", "alone.yaml", "-o", "json")  # fmt: skip
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["chosen"] == "gpu-node"
    assert schedule(daemon, GPU_POD).fits and would_admit(daemon, GPU_POD).admitted

    admit(daemon, pod("hog", 'cpu: "8", memory: 1Gi'))  # only NUMA 1 has 8 free CPUs
    admit(daemon, pod("holder", 'cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"'))  # NUMA 0: GPU-0
    kubelet = would_admit(daemon, GPU_POD)
    assert (kubelet.admitted, kubelet.reason) == (False, "TopologyAffinityError")
    koord = schedule(daemon, GPU_POD)
    assert (koord.fits, koord.reason) == (
        False,
        "Unaligned NUMA Hint cause cpu prefer [01] among [01],gpu prefer [10] among [10 11],"
        "memory prefer [01] among [01 11]",
    )
    assert schedule(daemon, GPU_POD, flavour="rte").fits  # blind to where the free GPU is
    # The CLI asks the same: the profile picks koordlet's objects unless --flavour says otherwise.
    live = cli(daemon, tmp_path, "schedule", "-f", "gpu-pod.yaml", "--scheduler-config", "sched.yaml",
               "--live", "--socket", str(daemon.socket), "-o", "json")  # fmt: skip
    assert live.returncode == 1 and json.loads(live.stdout)["nodes"][0]["reason"] == koord.reason
    blind = cli(daemon, tmp_path, "schedule", "-f", "gpu-pod.yaml", "--scheduler-config", "sched.yaml",
              "--live", "--socket", str(daemon.socket), "--flavour", "rte", "-o", "json")  # fmt: skip
    assert blind.returncode == 0 and json.loads(blind.stdout)["chosen"] == "gpu-node"
    local = cli(
        daemon, tmp_path, "schedule", "-f", "gpu-pod.yaml", "--nrt", "published.yaml", "--flavour", "rte"
    )
    assert local.returncode == 2 and "needs --live" in local.stderr


def test_the_only_gpu_in_use(gpu_daemon: GpuDaemon) -> None:
    """One GPU, held by an admitted pod: Koordinator sees it used through the holder's device-allocated
    annotation (DeviceShare: no device left); RTE's objects do not show it."""
    daemon = gpu_daemon("{id: GPU-0, numaNodes: [1]}")
    assert schedule(daemon, GPU_POD, KOORD_ALONE).fits
    admit(daemon, pod("holder", 'cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"'))
    assert not would_admit(daemon, GPU_POD).admitted
    used = schedule(daemon, GPU_POD, KOORD_ALONE)
    assert (used.fits, used.reason) == (False, "Insufficient GPU Devices")
    assert schedule(daemon, GPU_POD, KOORD_ALONE, flavour="rte").fits
    # With the default resource plugins too, NodeResourcesFit counts the Node's one allocatable GPU first.
    assert schedule(daemon, GPU_POD).reason == "Insufficient nvidia.com/gpu"
