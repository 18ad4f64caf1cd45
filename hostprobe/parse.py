"""Pure parsers for the value encodings of sysfs and procfs.

Every function takes text and returns plain Python values; it raises ``ValueError`` on malformed input and
the reader (``paths.HostReader``) turns that into a ``ProbeError`` naming the file.
Encodings follow the kernel's ``Documentation/ABI`` (cpulist, cpumask, node meminfo, distance) and
``lib/bitmap.c`` (``bitmap_parselist`` for the command-line forms).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_NODE_MEMINFO_LINE = re.compile(r"^Node\s+(\d+)\s+([A-Za-z0-9_()]+):\s+(\d+)(?:\s*kB)?\s*$")
_MEMINFO_LINE = re.compile(r"^([A-Za-z0-9_()]+):\s+(\d+)(?:\s*kB)?\s*$")
_HUGEPAGE_DIR = re.compile(r"^hugepages-(\d+)kB$")
# Domain is at least 4 hex digits; Intel VMD and hwloc's test trees use 5 (``10000:00:04.0``).
_PCI_ADDRESS = re.compile(r"^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")
_CACHE_SIZE = re.compile(r"^(\d+)\s*([KMG]?)$")
_SIZE_FACTOR_KIB = {"": 1, "K": 1, "M": 1024, "G": 1024 * 1024}


def is_empty_list_text(text: str) -> bool:
    """True for an empty cpulist/nodelist; the kernel prints ``(null)`` for an unset ``nohz_full``."""
    stripped = text.strip()
    return stripped in ("", "(null)")


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Parse the kernel "list format" (``0-3,8-11``) strictly; returns sorted unique ids.

    An empty line or ``(null)`` is the empty set.
    """
    if is_empty_list_text(text):
        return ()
    ids: set[int] = set()
    for chunk in text.strip().split(","):
        part = chunk.strip()
        if not part:
            raise ValueError(f"empty element in list {text.strip()!r}")
        if "-" in part:
            lo_text, _, hi_text = part.partition("-")
            lo, hi = int(lo_text), int(hi_text)
            if lo < 0 or hi < lo:
                raise ValueError(f"bad range {part!r}")
            ids.update(range(lo, hi + 1))
        else:
            value = int(part)
            if value < 0:
                raise ValueError(f"negative id {part!r}")
            ids.add(value)
    return tuple(sorted(ids))


def parse_cmdline_cpulist(value: str) -> tuple[int, ...]:
    """Parse a boot-parameter CPU list such as ``managed_irq,domain,0-4,11-79`` tolerantly.

    Skips non-numeric tokens (the isolcpus flags, the ``N`` alias) and expands the ``a-b:used/group``
    stride form of ``bitmap_parselist``: in each group of ``group`` CPUs starting at ``a``, the first
    ``used`` are taken.
    """
    ids: set[int] = set()
    for token in value.split(","):
        part = token.strip()
        range_part, _, stride = part.partition(":")
        lo_text, dash, hi_text = range_part.partition("-")
        if not lo_text.isdigit() or (dash and not hi_text.isdigit()):
            continue
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
        used, group = 1, 1
        if stride:
            used_text, _, group_text = stride.partition("/")
            if not (used_text.isdigit() and group_text.isdigit()) or int(group_text) == 0:
                continue
            used, group = int(used_text), int(group_text)
        for cpu in range(lo, hi + 1):
            if not stride or (cpu - lo) % group < used:
                ids.add(cpu)
    return tuple(sorted(ids))


def parse_cpumask(text: str) -> tuple[int, ...]:
    """Parse a hex cpumask (``00000000,003f0000,0000003f``: 32-bit words, most significant first)."""
    stripped = text.strip()
    if not stripped:
        return ()
    words = stripped.split(",")
    for word in words:
        if not word or any(c not in "0123456789abcdefABCDEF" for c in word):
            raise ValueError(f"bad cpumask word {word!r}")
    value = int("".join(words), 16)
    ids = []
    bit = 0
    while value:
        if value & 1:
            ids.append(bit)
        value >>= 1
        bit += 1
    return tuple(ids)


def format_cpulist(ids: Iterable[int]) -> str:
    """Format ids in the kernel list format (``0-3,8``)."""
    ordered = sorted(set(ids))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def format_cpumask(ids: Iterable[int], nr_bits: int) -> str:
    """Format ids as a cpumask: ``ceil(nr_bits/32)`` comma-separated 32-bit words (the kernel's ``%*pb``)."""
    value = 0
    for cpu in ids:
        value |= 1 << cpu
    nwords = max(1, (nr_bits + 31) // 32)
    words = [f"{(value >> (32 * k)) & 0xFFFFFFFF:08x}" for k in reversed(range(nwords))]
    return ",".join(words)


def parse_node_meminfo(text: str) -> dict[str, int]:
    """Parse ``nodeN/meminfo`` (``Node 0 MemTotal:  97557100 kB``) into key -> value.

    Values are kB, except ``HugePages_*`` which are page counts of the default huge page size only.
    Lines that do not match are ignored (the kernel adds keys over time).
    """
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _NODE_MEMINFO_LINE.match(line.strip())
        if match:
            values[match.group(2)] = int(match.group(3))
    return values


def parse_meminfo(text: str) -> dict[str, int]:
    """Parse ``/proc/meminfo`` (``MemTotal:  196633688 kB``) into key -> value (kB or a count)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO_LINE.match(line.strip())
        if match:
            values[match.group(1)] = int(match.group(2))
    return values


def parse_int_row(text: str) -> tuple[int, ...]:
    """Parse a whitespace-separated row of integers (``nodeN/distance``)."""
    return tuple(int(tok) for tok in text.split())


def parse_distance_row(row: Sequence[int], column_node_ids: Sequence[int]) -> dict[int, int]:
    """Map a positional distance row to node ids.

    ``drivers/base/node.c`` prints the distance to every *online* node in ascending id order, so column k
    belongs to the k-th online id, not to node k.
    """
    if len(row) != len(column_node_ids):
        raise ValueError(f"row has {len(row)} entries for {len(column_node_ids)} node ids")
    return dict(zip(column_node_ids, row, strict=True))


def hugepage_size_from_dirname(name: str) -> int | None:
    """``hugepages-2048kB`` -> 2048 (KiB); ``None`` for other names."""
    match = _HUGEPAGE_DIR.match(name)
    return int(match.group(1)) if match else None


def parse_pci_address(address: str) -> tuple[int, int, int, int] | None:
    """``0000:3b:00.1`` -> (domain, bus, device, function); ``None`` if it is not a PCI function name."""
    match = _PCI_ADDRESS.match(address)
    if not match:
        return None
    dom, bus, dev, fn = match.groups()
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn)


def is_pci_address(name: str) -> bool:
    return _PCI_ADDRESS.match(name) is not None


def parse_cache_size_kib(text: str) -> int:
    """Cache ``size`` (``28160K``) in KiB."""
    match = _CACHE_SIZE.match(text.strip())
    if not match:
        raise ValueError(f"bad cache size {text.strip()!r}")
    return int(match.group(1)) * _SIZE_FACTOR_KIB[match.group(2)]


def parse_cmdline(text: str) -> dict[str, str]:
    """Split ``/proc/cmdline`` into key -> value (the last occurrence wins, as for most kernel params).

    Stops at ``--`` (what follows belongs to init).
    """
    params: dict[str, str] = {}
    for token in text.split():
        if token == "--":
            break
        key, _, value = token.partition("=")
        params[key] = value
    return params


def count_cpuinfo_distinct(text: str, key: str) -> int:
    """Distinct values of a ``key\\t: value`` field in ``/proc/cpuinfo`` (cadvisor's ``core id`` count)."""
    values = set()
    pattern = re.compile(rf"^{re.escape(key)}\s*:\s*(\S+)\s*$")
    for line in text.splitlines():
        match = pattern.match(line)
        if match:
            values.add(match.group(1))
    return len(values)
