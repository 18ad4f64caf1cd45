"""NUMA nodes: ``sys/devices/system/node``.

Mirrors Documentation/ABI/stable/sysfs-devices-node and drivers/base/node.c.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hostprobe import parse
from hostprobe.memory import NodeMemory, read_node_memory
from hostprobe.paths import HostReader

_NODE_DIR = re.compile(r"^node(\d+)$")
_CPU_LINK = re.compile(r"^cpu(\d+)$")


@dataclass(frozen=True)
class NodeFacts:
    """What ``nodeN/`` says; CPUs are not yet intersected with the online set."""

    id: int
    listed_cpus: tuple[int, ...]  # cpulist, else cpumap, else the cpuM links
    cpus_source: str
    linked_cpus: tuple[int, ...]  # ``nodeN/cpuM`` links: what cadvisor enumerates (offline CPUs included)
    memory: NodeMemory
    distance_row: tuple[int, ...] | None
    distances: dict[int, int]
    online: bool
    possible: bool
    has_normal_memory: bool | None
    initiators: tuple[int, ...]


@dataclass(frozen=True)
class NodeState:
    nodes: tuple[NodeFacts, ...]
    possible_ids: tuple[int, ...]
    present: bool  # False when the tree has no node directory at all (CONFIG_NUMA off, some containers)


def read_nodes(reader: HostReader) -> NodeState:
    root = reader.sys("devices", "system", "node")
    if not os.path.isdir(root):
        reader.note(f"{root} absent: no NUMA information (kernel without CONFIG_NUMA, or a container sysfs)")
        return NodeState(nodes=(), possible_ids=(), present=False)

    def nodelist(name: str) -> tuple[int, ...] | None:
        return reader.cpulist(os.path.join(root, name))

    dir_ids = sorted(int(m.group(1)) for name in reader.listdir(root) if (m := _NODE_DIR.match(name)))
    online_file, possible_file = nodelist("online"), nodelist("possible")
    normal_file = nodelist("has_normal_memory")
    if online_file is None:
        reader.note(f"{root}/online absent: the nodeN directories are taken as the online nodes")
    online_ids = online_file if online_file is not None else tuple(dir_ids)
    for missing in sorted(set(online_ids) - set(dir_ids)):
        reader.note(f"{root}/online lists node {missing} but there is no node{missing} directory")

    nodes = []
    for node_id in dir_ids:
        node_dir = os.path.join(root, f"node{node_id}")
        entries = set(reader.listdir(node_dir))
        listed, source = _node_cpus(reader, node_dir, entries)
        linked = tuple(sorted(int(m.group(1)) for name in entries if (m := _CPU_LINK.match(name))))
        row = (
            reader.parsed(os.path.join(node_dir, "distance"), parse.parse_int_row, "distance row")
            if "distance" in entries
            else None
        )
        distances = _map_distances(reader, node_id, row, online_ids, possible_file)
        online = node_id in online_ids
        if not online:
            reader.note(f"node{node_id}: directory present but not in {root}/online")
        nodes.append(
            NodeFacts(
                id=node_id,
                listed_cpus=listed,
                cpus_source=source,
                linked_cpus=linked,
                memory=read_node_memory(reader, node_dir, entries),
                distance_row=row,
                distances=distances,
                online=online,
                possible=possible_file is None or node_id in possible_file,
                has_normal_memory=None if normal_file is None else node_id in normal_file,
                initiators=_initiators(reader, node_dir, entries),
            )
        )
    possible_ids = (
        possible_file if possible_file is not None else tuple(sorted(set(dir_ids) | set(online_ids)))
    )
    return NodeState(nodes=tuple(nodes), possible_ids=tuple(possible_ids), present=True)


def _node_cpus(reader: HostReader, node_dir: str, entries: set[str]) -> tuple[tuple[int, ...], str]:
    # Old captures (util-linux's EPYC dump) only have the hex cpumap; trimmed ones may have only links.
    if "cpulist" in entries:
        return reader.cpulist(os.path.join(node_dir, "cpulist")) or (), "cpulist"
    if "cpumap" in entries:
        return reader.cpumask(os.path.join(node_dir, "cpumap")) or (), "cpumap"
    linked = tuple(sorted(int(m.group(1)) for name in entries if (m := _CPU_LINK.match(name))))
    if linked:
        return linked, "links"
    return (), "none"


def _map_distances(
    reader: HostReader,
    node_id: int,
    row: tuple[int, ...] | None,
    online_ids: Sequence[int],
    possible_ids: Sequence[int] | None,
) -> dict[int, int]:
    """Key a positional row by node id through the ``online`` list.

    Fallback for a row that does not match ``online`` (hand-edited captures): map it through ``possible``
    when the lengths agree, otherwise drop it; both leave a diagnostic.
    """
    if row is None:
        return {}
    if len(row) == len(online_ids):
        return parse.parse_distance_row(row, online_ids)
    if possible_ids is not None and len(row) == len(possible_ids):
        reader.note(
            f"node{node_id}: distance row has {len(row)} entries for {len(online_ids)} online nodes; "
            f"mapped through 'possible' ({parse.format_cpulist(possible_ids)}) instead"
        )
        return parse.parse_distance_row(row, possible_ids)
    reader.note(
        f"node{node_id}: distance row has {len(row)} entries for {len(online_ids)} online nodes; "
        "distances dropped"
    )
    return {}


def _initiators(reader: HostReader, node_dir: str, entries: set[str]) -> tuple[int, ...]:
    # HMAT: nodeN/access0/initiators/nodeX links name the best-performing initiators of a memory target.
    if "access0" not in entries:
        return ()
    names = reader.listdir(os.path.join(node_dir, "access0", "initiators"))
    return tuple(sorted(int(m.group(1)) for name in names if (m := _NODE_DIR.match(name))))
