"""Unreadable or malformed files: one clear error naming the file, or a documented fallback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hostprobe
from hostprobe import ProbeError
from tests.synthetic_sysfs import SyntheticHost, write_tree


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    return write_tree(tmp_path, SyntheticHost(sockets=1, cores_per_socket=2))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hostprobe", *args], capture_output=True, text=True, check=False, timeout=60
    )


@pytest.mark.parametrize(
    ("relative", "content", "message"),
    [
        ("devices/system/node/online", "zero-one\n", "malformed cpu/node list 'zero-one'"),
        ("devices/system/cpu/cpu1/topology/core_id", "x\n", "malformed integer 'x'"),
        ("devices/system/node/node0/distance", "10 far\n", "malformed distance row '10 far'"),
        ("devices/system/node/node0/meminfo", "Node 0 MemFree: 1 kB\n", "no 'Node N MemTotal: <kB>' line"),
        ("devices/system/cpu/cpu0/cache/index3/size", "huge\n", "malformed cache size 'huge'"),
        ("devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "-\n", "malformed integer '-'"),
    ],
)
def test_malformed_file_is_one_error_naming_it(
    tree: tuple[Path, Path], relative: str, content: str, message: str
) -> None:
    sys_root, proc_root = tree
    (sys_root / relative).write_text(content)
    with pytest.raises(ProbeError) as info:
        hostprobe.probe(sys_root, proc_root)
    assert info.value.path == str(sys_root / relative)
    assert str(info.value).startswith(f"{sys_root / relative}: ")
    assert message in str(info.value)


def test_unreadable_file_names_it(tree: tuple[Path, Path]) -> None:
    sys_root, proc_root = tree
    target = sys_root / "devices" / "system" / "node" / "node0" / "cpulist"
    target.unlink()
    target.mkdir()  # reading a directory fails even as root, unlike chmod 000
    with pytest.raises(ProbeError, match=f"^{target}: "):
        hostprobe.probe(sys_root, proc_root)


def test_cli_prints_one_line_and_exits_2(tree: tuple[Path, Path]) -> None:
    sys_root, proc_root = tree
    (sys_root / "devices" / "system" / "cpu" / "online").write_text("0-x\n")
    result = run_cli("--sysfs-root", str(sys_root), "--procfs-root", str(proc_root))
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith(f"hostprobe: error: {sys_root}/devices/system/cpu/online: malformed")


def test_cli_missing_root(tmp_path: Path) -> None:
    result = run_cli("--sysfs-root", str(tmp_path / "nowhere"), "--json")
    assert result.returncode == 2
    assert result.stderr.strip() == f"hostprobe: error: {tmp_path / 'nowhere'}: sysfs root is not a directory"


def test_not_a_sysfs_tree(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="devices/system/cpu: not found"):
        hostprobe.probe(tmp_path, tmp_path)


def test_documented_fallbacks(tree: tuple[Path, Path]) -> None:
    sys_root, proc_root = tree
    cpu_dir = sys_root / "devices" / "system" / "cpu"
    (cpu_dir / "online").unlink()  # -> cpuN/online, else online
    (cpu_dir / "cpu3" / "online").write_text("0\n")
    node0 = sys_root / "devices" / "system" / "node" / "node0"
    (node0 / "cpulist").unlink()  # -> cpumap
    (sys_root / "devices" / "system" / "node" / "online").unlink()  # -> node directories
    (cpu_dir / "isolated").unlink()
    (proc_root / "cmdline").write_text("ro isolcpus=domain,managed_irq,1-2 nohz_full=1\n")  # -> cmdline
    (sys_root / "class" / "net" / "lo").unlink()
    (sys_root / "class" / "net" / "lo").symlink_to("../../../../outside")  # leaves the root: ignored
    topo = hostprobe.probe(sys_root, proc_root)
    assert topo.online_cpus == (0, 1, 2)
    assert topo.node(0).cpus_source == "cpumap"
    assert topo.node(0).cpus == (0, 1, 2)  # the cpumap was written while CPU 3 was online; ANDed here
    assert (topo.isolated_cpus, topo.isolated_cpus_source, topo.nohz_full_cpus) == ((1, 2), "cmdline", (1,))
    assert topo.net_interfaces == ()
    text = "\n".join(topo.diagnostics)
    assert "cpu/online absent" in text and "node/online absent" in text and "leaves the sysfs root" in text


def test_stray_nul_bytes_and_null_text(tree: tuple[Path, Path]) -> None:
    sys_root, proc_root = tree
    cpu_dir = sys_root / "devices" / "system" / "cpu"
    (cpu_dir / "nohz_full").write_text("(null)\n")
    (cpu_dir / "isolated").write_bytes(b"\0\n")
    (sys_root / "devices" / "system" / "node" / "online").write_bytes(b"0\n\0")
    topo = hostprobe.probe(sys_root, proc_root)
    assert topo.nohz_full_cpus == () and topo.isolated_cpus == () and topo.online_node_ids == (0,)


def test_missing_procfs_root_is_not_an_error(tree: tuple[Path, Path], tmp_path: Path) -> None:
    sys_root, _ = tree
    topo = hostprobe.probe(sys_root, tmp_path / "no-proc")
    assert topo.memory.mem_total_bytes is None and topo.kubelet_view.memory_capacity_bytes is None
    assert any("procfs root" in d for d in topo.diagnostics)


def test_dangling_driver_link_and_missing_attributes(tmp_path: Path) -> None:
    from tests.synthetic_sysfs import SyntheticPciFunction

    sys_root, proc_root = write_tree(
        tmp_path, SyntheticHost(pci_functions=(SyntheticPciFunction("0000:5e:00.0", driver="ice"),))
    )
    device = sys_root / "devices" / "pci0000:5e" / "0000:5e:00.0"
    (sys_root / "bus" / "pci" / "drivers" / "ice").rmdir()  # the link now dangles, as in captures
    for name in ("vendor", "device", "local_cpulist", "local_cpus"):
        (device / name).unlink()
    dev = hostprobe.probe(sys_root, proc_root).pci_device("0000:5e:00.0")
    assert (dev.driver, dev.vendor, dev.device, dev.local_cpus, dev.numa_node) == ("ice", None, None, None, 0)
