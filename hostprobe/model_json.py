"""``HostTopology`` back from the document ``HostTopology.to_json_dict()`` makes (what ``--json`` prints).

The inverse is exact: ``host_from_json_dict(h.to_json_dict()) == h`` for every probed host, through a JSON
text round trip too (keys of int-keyed maps come back as ints, lists as tuples, in the same order). The
derived keys the document carries beside the fields (``offline_node_ids``, ``online_cpus``, ``memory_only``,
the kubelet view's counts and verdicts) are recomputed by the dataclasses and not read. A document that is
not such a dump raises :class:`HostJSONError` naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from hostprobe.model import (
    CacheInfo,
    Cpu,
    HostTopology,
    HugePagePool,
    KubeletCore,
    KubeletCpu,
    KubeletNode,
    KubeletView,
    NetInterface,
    NumaNode,
    PciDevice,
    SystemMemory,
)

T = TypeVar("T")


class HostJSONError(ValueError):
    """A host document that ``HostTopology.to_json_dict`` could not have made: ``path: problem``."""


def _at(doc: Mapping[str, Any], key: str, path: str) -> Any:
    if not isinstance(doc, Mapping):
        raise HostJSONError(f"{path}: expected an object, got {type(doc).__name__}")
    if key not in doc:
        raise HostJSONError(f"{path}.{key}: missing")
    return doc[key]


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise HostJSONError(f"{path}: expected an integer, got {value!r}")
    return value


def _opt_int(value: Any, path: str) -> int | None:
    return None if value is None else _int(value, path)


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise HostJSONError(f"{path}: expected a string, got {value!r}")
    return value


def _opt_str(value: Any, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise HostJSONError(f"{path}: expected true or false, got {value!r}")
    return value


def _opt_bool(value: Any, path: str) -> bool | None:
    return None if value is None else _bool(value, path)


def _list(value: Any, path: str, item: Callable[[Any, str], T]) -> tuple[T, ...]:
    if not isinstance(value, list):
        raise HostJSONError(f"{path}: expected a list, got {type(value).__name__}")
    return tuple(item(v, f"{path}[{i}]") for i, v in enumerate(value))


def _ints(value: Any, path: str) -> tuple[int, ...]:
    # The common case at once (a host has thousands of these): a list of plain ints, no bool among them.
    if isinstance(value, list) and all(type(v) is int for v in value):
        return tuple(value)
    return _list(value, path, _int)


def _opt_ints(value: Any, path: str) -> tuple[int, ...] | None:
    return None if value is None else _ints(value, path)


def _int_keyed(value: Any, path: str, item: Callable[[Any, str], T]) -> dict[int, T]:
    if not isinstance(value, Mapping):
        raise HostJSONError(f"{path}: expected an object, got {type(value).__name__}")
    out: dict[int, T] = {}
    for key, v in value.items():
        try:
            number = int(key)
        except (TypeError, ValueError):
            raise HostJSONError(f"{path}: key {key!r} is not an integer") from None
        out[number] = item(v, f"{path}.{key}")
    return out


def _pool(value: Any, path: str) -> HugePagePool:
    return HugePagePool(
        _int(_at(value, "total", path), f"{path}.total"), _int(_at(value, "free", path), f"{path}.free")
    )


def _cache(doc: Any, path: str) -> CacheInfo:
    return CacheInfo(
        index=_int(_at(doc, "index", path), f"{path}.index"),
        level=_opt_int(_at(doc, "level", path), f"{path}.level"),
        type=_opt_str(_at(doc, "type", path), f"{path}.type"),
        id=_opt_int(_at(doc, "id", path), f"{path}.id"),
        size_kib=_opt_int(_at(doc, "size_kib", path), f"{path}.size_kib"),
        shared_cpus=_opt_ints(_at(doc, "shared_cpus", path), f"{path}.shared_cpus"),
    )


def _cpu(doc: Any, path: str) -> Cpu:
    def opt(key: str) -> int | None:
        return _opt_int(_at(doc, key, path), f"{path}.{key}")

    return Cpu(
        id=_int(_at(doc, "id", path), f"{path}.id"),
        online=_bool(_at(doc, "online", path), f"{path}.online"),
        numa_node_id=opt("numa_node_id"),
        socket_id=opt("socket_id"),
        die_id=opt("die_id"),
        cluster_id=opt("cluster_id"),
        core_id=opt("core_id"),
        thread_siblings=_ints(_at(doc, "thread_siblings", path), f"{path}.thread_siblings"),
        l3_cache_id=opt("l3_cache_id"),
        uncore_cache_id=opt("uncore_cache_id"),
        caches=_list(_at(doc, "caches", path), f"{path}.caches", _cache),
    )


def _numa_node(doc: Any, path: str) -> NumaNode:
    return NumaNode(
        id=_int(_at(doc, "id", path), f"{path}.id"),
        cpus=_ints(_at(doc, "cpus", path), f"{path}.cpus"),
        memory_bytes=_opt_int(_at(doc, "memory_bytes", path), f"{path}.memory_bytes"),
        memory_free_bytes=_opt_int(_at(doc, "memory_free_bytes", path), f"{path}.memory_free_bytes"),
        hugepages=_int_keyed(_at(doc, "hugepages", path), f"{path}.hugepages", _pool),
        distances=_int_keyed(_at(doc, "distances", path), f"{path}.distances", _int),
        distance_row=_opt_ints(_at(doc, "distance_row", path), f"{path}.distance_row"),
        online=_bool(_at(doc, "online", path), f"{path}.online"),
        possible=_bool(_at(doc, "possible", path), f"{path}.possible"),
        has_normal_memory=_opt_bool(_at(doc, "has_normal_memory", path), f"{path}.has_normal_memory"),
        socket_ids=_ints(_at(doc, "socket_ids", path), f"{path}.socket_ids"),
        initiators=_ints(_at(doc, "initiators", path), f"{path}.initiators"),
        cpus_source=_str(_at(doc, "cpus_source", path), f"{path}.cpus_source"),
    )


def _pci(doc: Any, path: str) -> PciDevice:
    def opt(key: str) -> str | None:
        return _opt_str(_at(doc, key, path), f"{path}.{key}")

    return PciDevice(
        address=_str(_at(doc, "address", path), f"{path}.address"),
        class_code=opt("class"),
        vendor=opt("vendor"),
        device=opt("device"),
        subsystem_vendor=opt("subsystem_vendor"),
        subsystem_device=opt("subsystem_device"),
        driver=opt("driver"),
        numa_node=_opt_int(_at(doc, "numa_node", path), f"{path}.numa_node"),
        local_cpus=_opt_ints(_at(doc, "local_cpus", path), f"{path}.local_cpus"),
        physfn=opt("physfn"),
        virtfns=_list(_at(doc, "virtfns", path), f"{path}.virtfns", _str),
        sriov_totalvfs=_opt_int(_at(doc, "sriov_totalvfs", path), f"{path}.sriov_totalvfs"),
        sriov_numvfs=_opt_int(_at(doc, "sriov_numvfs", path), f"{path}.sriov_numvfs"),
        netdevs=_list(_at(doc, "netdevs", path), f"{path}.netdevs", _str),
        parent=opt("parent"),
    )


def _net(doc: Any, path: str) -> NetInterface:
    def opt(key: str) -> str | None:
        return _opt_str(_at(doc, key, path), f"{path}.{key}")

    return NetInterface(
        name=_str(_at(doc, "name", path), f"{path}.name"),
        ifindex=_opt_int(_at(doc, "ifindex", path), f"{path}.ifindex"),
        virtual=_bool(_at(doc, "virtual", path), f"{path}.virtual"),
        kind=opt("kind"),
        mac_address=opt("mac_address"),
        operstate=opt("operstate"),
        mtu=_opt_int(_at(doc, "mtu", path), f"{path}.mtu"),
        parent_device=opt("parent_device"),
        pci_address=opt("pci_address"),
        numa_node=_opt_int(_at(doc, "numa_node", path), f"{path}.numa_node"),
        physfn=opt("physfn"),
        phys_port_name=opt("phys_port_name"),
        source=_str(_at(doc, "source", path), f"{path}.source"),
    )


def _memory(doc: Any, path: str) -> SystemMemory:
    def opt(key: str) -> int | None:
        return _opt_int(_at(doc, key, path), f"{path}.{key}")

    return SystemMemory(
        mem_total_bytes=opt("mem_total_bytes"),
        mem_free_bytes=opt("mem_free_bytes"),
        mem_available_bytes=opt("mem_available_bytes"),
        default_hugepage_size_kib=opt("default_hugepage_size_kib"),
        hugepages=_int_keyed(_at(doc, "hugepages", path), f"{path}.hugepages", _pool),
    )


def _core(doc: Any, path: str) -> KubeletCore:
    return KubeletCore(
        core_id=_int(_at(doc, "core_id", path), f"{path}.core_id"),
        socket_id=_int(_at(doc, "socket_id", path), f"{path}.socket_id"),
        threads=_ints(_at(doc, "threads", path), f"{path}.threads"),
        uncore_cache_ids=_ints(_at(doc, "uncore_cache_ids", path), f"{path}.uncore_cache_ids"),
    )


def _page_count(doc: Any, path: str) -> tuple[int, int]:
    size = _int(_at(doc, "page_size_kib", path), f"{path}.page_size_kib")
    return size, _int(_at(doc, "num_pages", path), f"{path}.num_pages")


def _kubelet_node(doc: Any, path: str) -> KubeletNode:
    return KubeletNode(
        id=_int(_at(doc, "id", path), f"{path}.id"),
        memory_bytes=_int(_at(doc, "memory_bytes", path), f"{path}.memory_bytes"),
        hugepages=_list(_at(doc, "hugepages", path), f"{path}.hugepages", _page_count),
        cores=_list(_at(doc, "cores", path), f"{path}.cores", _core),
        node_level_l3=_bool(_at(doc, "node_level_l3", path), f"{path}.node_level_l3"),
        distances=_opt_ints(_at(doc, "distances", path), f"{path}.distances"),
        caches_readable=_bool(_at(doc, "caches_readable", path), f"{path}.caches_readable"),
    )


def _kubelet_cpu(doc: Any, path: str) -> KubeletCpu:
    def num(key: str) -> int:
        return _int(_at(doc, key, path), f"{path}.{key}")

    return KubeletCpu(
        num("cpu_id"), num("core_id"), num("socket_id"), num("numa_node_id"), num("uncore_cache_id")
    )


def _kubelet_view(doc: Any, path: str) -> KubeletView:
    def num(key: str) -> int:
        return _int(_at(doc, key, path), f"{path}.{key}")

    return KubeletView(
        nodes=_list(_at(doc, "nodes", path), f"{path}.nodes", _kubelet_node),
        cpus=_list(_at(doc, "cpus", path), f"{path}.cpus", _kubelet_cpu),
        num_cpus=num("num_cpus"),
        num_cores=num("num_cores"),
        num_sockets=num("num_sockets"),
        num_physical_cores=num("num_physical_cores"),
        num_numa_nodes=num("num_numa_nodes_with_cpus"),
        num_uncore_caches=num("num_uncore_caches"),
        memory_capacity_bytes=_opt_int(
            _at(doc, "memory_capacity_bytes", path), f"{path}.memory_capacity_bytes"
        ),
        warnings=_list(_at(doc, "warnings", path), f"{path}.warnings", _str),
        cadvisor_errors=_list(_at(doc, "cadvisor_errors", path), f"{path}.cadvisor_errors", _str),
    )


def host_from_json_dict(doc: Mapping[str, Any]) -> HostTopology:
    """The host ``doc`` (a ``HostTopology.to_json_dict()`` result, or its JSON text parsed) describes."""
    path = "host"
    return HostTopology(
        sysfs_root=_str(_at(doc, "sysfs_root", path), f"{path}.sysfs_root"),
        procfs_root=_str(_at(doc, "procfs_root", path), f"{path}.procfs_root"),
        live=_bool(_at(doc, "live", path), f"{path}.live"),
        numa_nodes=_list(_at(doc, "numa_nodes", path), f"{path}.numa_nodes", _numa_node),
        possible_node_ids=_ints(_at(doc, "possible_node_ids", path), f"{path}.possible_node_ids"),
        cpus=_list(_at(doc, "cpus", path), f"{path}.cpus", _cpu),
        isolated_cpus=_ints(_at(doc, "isolated_cpus", path), f"{path}.isolated_cpus"),
        isolated_cpus_source=_opt_str(_at(doc, "isolated_cpus_source", path), f"{path}.isolated_cpus_source"),
        nohz_full_cpus=_ints(_at(doc, "nohz_full_cpus", path), f"{path}.nohz_full_cpus"),
        memory=_memory(_at(doc, "memory", path), f"{path}.memory"),
        pci_devices=_list(_at(doc, "pci_devices", path), f"{path}.pci_devices", _pci),
        net_interfaces=_list(_at(doc, "net_interfaces", path), f"{path}.net_interfaces", _net),
        kubelet_view=_kubelet_view(_at(doc, "kubelet_view", path), f"{path}.kubelet_view"),
        diagnostics=_list(_at(doc, "diagnostics", path), f"{path}.diagnostics", _str),
    )
