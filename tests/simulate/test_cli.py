"""``kubeletemu simulate -f``: table, JSON and a PNG chart from a Simulation file, deterministic; a bad
file, or ``--chart`` without matplotlib, is one readable line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SPEC = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
topology:
  synthetic: {sockets: 2, coresPerSocket: 4, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 8}
config: [kubelet.yaml]
matrix:
  policies: [best-effort, single-numa-node]
  scopes: [container]
stream:
- pod: {metadata: {name: app}, spec: {containers: [{name: c, resources: {limits: {cpu: "3", memory: 1Gi}}}]}}
  repeat: 6
"""
KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0"
"""


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.slow
def test_simulate_outputs(tmp_path: Path) -> None:
    (tmp_path / "sim.yaml").write_text(SPEC)
    (tmp_path / "kubelet.yaml").write_text(KUBELET)
    table = simulate("-f", str(tmp_path / "sim.yaml"), "--chart", str(tmp_path / "chart.png"))
    assert table.returncode == 0, table.stderr
    assert "best-effort" in table.stdout and "single-numa-node" in table.stdout
    png = (tmp_path / "chart.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    again = simulate("-f", str(tmp_path / "sim.yaml"), "--chart", str(tmp_path / "again.png"))
    assert again.returncode == 0 and (tmp_path / "again.png").read_bytes() == png
    first = simulate("-f", str(tmp_path / "sim.yaml"), "-o", "json")
    second = simulate("-f", str(tmp_path / "sim.yaml"), "-o", "json")
    assert first.returncode == 0 and first.stdout == second.stdout  # deterministic
    report = json.loads(first.stdout)
    # 2 sockets x 4 cores x 2 threads, CPU 0 reserved: 7 + 8 free; 3-CPU pods: two per NUMA node fit
    # under single-numa-node (7 -> 1 left, 8 -> 2 left), so 4 of 6 are admitted; best-effort spills a
    # fifth across both nodes (1 + 2 = 3 CPUs) and refuses the sixth.
    admitted = {row["policy"]: row["admitted"] for row in report["configurations"]}
    assert admitted == {"best-effort": 5, "single-numa-node": 4}


def test_chart_without_matplotlib_fails_before_running(tmp_path: Path) -> None:
    """matplotlib is the optional extra [plot]: without it, ``--chart`` is one line and exit status 2,
    before the simulation runs (no table printed, no file written). ``sys.modules[name] = None`` is
    Python's own way to make a package unimportable."""
    (tmp_path / "sim.yaml").write_text(SPEC)
    (tmp_path / "kubelet.yaml").write_text(KUBELET)
    hide = "import sys; sys.modules['matplotlib'] = None; from kubeletemu.cli import main; sys.exit(main())"
    out = subprocess.run(
        [sys.executable, "-c", hide, "simulate", "-f", str(tmp_path / "sim.yaml"), "--chart", "c.png"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        cwd=tmp_path,
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr == "kubeletemu: charts need matplotlib: pip install 'kubeletemu[plot]'\n"
    assert out.stdout == "" and not (tmp_path / "c.png").exists()


def test_simulate_bad_file_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "sim.yaml").write_text(SPEC.replace("repeat: 6", "repeat: -1"))
    (tmp_path / "kubelet.yaml").write_text(KUBELET)
    out = simulate("-f", str(tmp_path / "sim.yaml"))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kubeletemu: ") and "repeat" in lines[0]
