"""``python -m hostprobe``: the table and the JSON contract of shared/API.md §1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hostprobe.__main__ import main
from tests.synthetic_sysfs import sriov_virtio_vmd_host, write_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_tree(tmp_path_factory.mktemp("cli"), sriov_virtio_vmd_host())


def test_json_contract(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    sys_root, proc_root = tree
    assert main(["--sysfs-root", str(sys_root), "--procfs-root", str(proc_root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    node0 = doc["numa_nodes"][0]
    assert node0["id"] == 0 and node0["cpus"] == [0, 1, 2, 3, 8, 9, 10, 11]
    assert node0["memory_bytes"] == 32 * 1024**3
    assert node0["hugepages"]["2048"] == {"total": 256, "free": 200}
    assert node0["distances"] == {"0": 10, "1": 21, "2": 28}
    cpu = doc["cpus"][9]
    assert {
        k: cpu[k] for k in ("id", "core_id", "socket_id", "numa_node_id", "uncore_cache_id", "online")
    } == {"id": 9, "core_id": 1, "socket_id": 0, "numa_node_id": 0, "uncore_cache_id": 0, "online": True}
    devices = {d["address"]: d for d in doc["pci_devices"]}
    assert devices["0000:00:03.0"]["numa_node"] == -1  # -1 stays -1
    assert devices["0000:d8:00.0"]["numa_node"] is None  # no numa_node file: null
    assert devices["0000:3b:02.3"]["physfn"] == "0000:3b:00.0"
    assert {i["name"]: i["pci_address"] for i in doc["net_interfaces"]}["eth0"] == "0000:00:03.0"
    assert doc["kubelet_view"]["num_topology_nodes_incl_memory_only"] == 3


def test_table(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    sys_root, proc_root = tree
    assert main(["--sysfs-root", str(sys_root), "--procfs-root", str(proc_root)]) == 0
    out = capsys.readouterr().out
    squeezed = " ".join(out.split())
    assert "NUMA nodes: 3 (0-2), offline (possible) 3; memory-only: 2" in out
    assert "0000:3b:00.0 0x020000 8086:1583 i40e 0 PF 4/64 VFs ens1f0" in squeezed
    assert "10000:01:00.0 0x010802 144d:a824 nvme 1" in squeezed
    assert "eth0 8 device up virtio0 0000:00:03.0 -1" in squeezed
    assert "VF of 0000:3b:00.0" in out
    assert "a kubelet would start with the default topology manager options" in out
    assert "isolated 2-3,10-11 (from sysfs)" in out


def test_usage_error_exits_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hostprobe", "--bogus"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2 and "unrecognized arguments: --bogus" in result.stderr
