"""The ``pfp0v001`` pod-set fingerprint of ``github.com/k8stopologyawareschedwg/podfingerprint``.

Exporters (resource-topology-exporter, nfd-topology-updater) publish it in NodeResourceTopology objects and
the scheduler's NodeResourceTopologyMatch cache recomputes it to tell whether the NRT data is current.
Only the multiset of (namespace, name) pairs is hashed:

* per pod ``h = XXH64(name, seed=XXH64(namespace, seed=0))`` over the UTF-8 bytes (``Fingerprint.addHash``);
* the ``h`` values, duplicates kept, sorted as unsigned 64-bit integers, written as 8 little-endian bytes
  each and hashed once more with XXH64 seed 0 (``Fingerprint.Sum``);
* ``"pfp0" + "v001" + hex`` of that digest, big-endian (``Fingerprint.Sign``).

The tracing half mirrors the library's ``Status`` (what ``--pods-fingerprint-status-file`` dumps) and the
pod-set selection the exporters apply per method (``all``, ``with-exclusive-resources``,
``exclude-terminal``) is :func:`select_pods`.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import xxhash

from kubeletemu.golang import go_quote

__all__ = [
    "ANNOTATION",
    "ATTRIBUTE",
    "ATTRIBUTE_METHOD",
    "METHODS",
    "METHODS_PUBLISHED",
    "METHOD_ALL",
    "METHOD_EXCLUDE_TERMINAL",
    "METHOD_WITH_EXCLUSIVE_RESOURCES",
    "PREFIX",
    "TERMINAL_PHASES",
    "VERSION",
    "Fingerprint",
    "FingerprintError",
    "FingerprintMismatchError",
    "IncompatibleVersionError",
    "InvalidPodError",
    "MalformedFingerprintError",
    "NamespacedName",
    "NullTracer",
    "PodIdentifier",
    "PodInfo",
    "Status",
    "Tracer",
    "TracingFingerprint",
    "UnsupportedMethodError",
    "check",
    "clean_completion_sink",
    "compute",
    "fingerprint_pods",
    "has_exclusive_resources",
    "is_version_compatible",
    "make_status",
    "mark_completed",
    "numa_locality",
    "parse_method",
    "pod_hash",
    "select_pods",
    "set_completion_sink",
]

PREFIX = "pfp0"
VERSION = "v001"
# Legacy object annotation; RTE still sets it next to the attribute.
ANNOTATION = "topology.node.k8s.io/fingerprint"
# NodeResourceTopology top-level attribute names.
ATTRIBUTE = "nodeTopologyPodsFingerprint"
ATTRIBUTE_METHOD = "nodeTopologyPodsFingerprintMethod"

METHOD_ALL = "all"
METHOD_WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"
METHOD_EXCLUDE_TERMINAL = "exclude-terminal"
METHODS = (METHOD_ALL, METHOD_WITH_EXCLUSIVE_RESOURCES, METHOD_EXCLUDE_TERMINAL)
# What an exporter publishes in nodeTopologyPodsFingerprintMethod: RTE accepts only these two for
# --pods-fingerprint-method (nfd-topology-updater publishes no method); ``exclude-terminal`` is a library
# constant no exporter emits.
METHODS_PUBLISHED = (METHOD_WITH_EXCLUSIVE_RESOURCES, METHOD_ALL)

# status.phase values that make a pod terminal (the exporters' field selector).
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

# 4 prefix bytes + 4 version bytes + the shortest sum Check accepts.
_MIN_SIGN_LEN = 4 + 4 + 8

_xxh64 = xxhash.xxh64_intdigest
_xxh64_hex = xxhash.xxh64_hexdigest


class FingerprintError(Exception):
    """Base of every error this module raises."""


class MalformedFingerprintError(FingerprintError, ValueError):
    """``ErrMalformed``: too short, or not starting with ``pfp0``."""

    def __init__(self) -> None:
        super().__init__("malformed fingerprint")


class IncompatibleVersionError(FingerprintError, ValueError):
    """``ErrIncompatibleVersion``: well-formed, but a version other than ``v001``."""

    def __init__(self) -> None:
        super().__init__("incompatible version")


class FingerprintMismatchError(FingerprintError):
    """``ErrSignatureMismatch``, worded like its wrapping: ``fingerprint mismatch got="…" expected="…"``.

    ``got`` is the freshly computed hex sum, ``expected`` everything after the given version.
    """

    def __init__(self, got: str, expected: str) -> None:
        self.got = got
        self.expected = expected
        super().__init__(f"fingerprint mismatch got={go_quote(got)} expected={go_quote(expected)}")


class UnsupportedMethodError(FingerprintError, ValueError):
    """A pod-set selection method that is none of :data:`METHODS`."""

    def __init__(self, method: str) -> None:
        self.method = method
        # RTE's PFPMethodIsSupported wording, double space included.
        super().__init__(f"unsupported method  {go_quote(method)}")


class InvalidPodError(FingerprintError, TypeError):
    """A pod identity that is not a pair of strings encodable as UTF-8."""


def is_version_compatible(version: str) -> bool:
    """``IsVersionCompatible``: only ``v001`` is; a version not 4 bytes long is malformed."""
    if len(version.encode("utf-8", "surrogatepass")) != 4:
        raise MalformedFingerprintError()
    return version == VERSION


def _invalid_pod(pod: object) -> InvalidPodError:
    if not isinstance(pod, tuple | list) or len(pod) != 2:
        return InvalidPodError(f"pod identity must be a (namespace, name) pair, got {pod!r}")
    namespace, name = pod
    if not isinstance(namespace, str) or not isinstance(name, str):
        return InvalidPodError(f"pod identity must be a (namespace, name) pair of str, got {pod!r}")
    return InvalidPodError(f"pod identity {pod!r} is not encodable as UTF-8")


def pod_hash(namespace: str, name: str) -> int:
    """One pod's 64-bit hash: the namespace hash seeds the name hash (no concatenation, no separator)."""
    return _hashes(((namespace, name),))[0]


def _hashes(pods: Iterable[tuple[str, str]]) -> list[int]:
    # Namespaces repeat a lot in a pod list: hashing each one once is most of the speed-up over a naive loop.
    seeds: dict[str, int] = {}
    out: list[int] = []
    append = out.append
    for pod in pods:
        try:
            namespace, name = pod
            seed = seeds.get(namespace)
            if seed is None:
                seed = seeds[namespace] = _xxh64(namespace.encode("utf-8"))
            append(_xxh64(name.encode("utf-8"), seed))
        except (TypeError, ValueError, AttributeError) as err:  # UnicodeEncodeError is a ValueError
            raise _invalid_pod(pod) from err
    return out


def _hex_sum(hashes: list[int]) -> str:
    """``Fingerprint.Sum`` as hex; sorts ``hashes`` in place, as the library does."""
    hashes.sort()
    return _xxh64_hex(struct.pack(f"<{len(hashes)}Q", *hashes))


def compute(pods: Iterable[tuple[str, str]]) -> str:
    """``Sign()`` of the multiset of ``(namespace, name)`` pairs: ``pfp0v001`` + 16 lowercase hex digits.

    Order does not matter, duplicates do (they are not collapsed), and nothing but the two strings is hashed.
    """
    return PREFIX + VERSION + _hex_sum(_hashes(pods))


def _check_hex(sign: str, hex_sum: Callable[[], str]) -> None:
    """``Fingerprint.Check`` on byte lengths, as Go slices strings by byte."""
    raw = sign.encode("utf-8", "surrogatepass")
    if len(raw) < _MIN_SIGN_LEN or raw[:4] != PREFIX.encode():
        raise MalformedFingerprintError()
    # Bytes, not text: a multi-byte character may straddle offset 8 (IsVersionCompatible sees 4 bytes).
    if raw[4:8] != VERSION.encode():
        raise IncompatibleVersionError()
    # Prefix and version are ASCII by now, so the rest decodes whole.
    expected = raw[8:].decode("utf-8", "surrogatepass")
    got = hex_sum()
    if got != expected:
        raise FingerprintMismatchError(got, expected)


def check(fingerprint: str, pods: Iterable[tuple[str, str]]) -> None:
    """``Fingerprint.Check``: return if ``fingerprint`` is the sign of ``pods``, raise otherwise.

    Raises :class:`MalformedFingerprintError` (shorter than 16 bytes or prefix not ``pfp0``),
    :class:`IncompatibleVersionError` (version not ``v001``) or :class:`FingerprintMismatchError`
    (exact, case-sensitive comparison of the sum), in that order of precedence.
    """
    if not isinstance(fingerprint, str):
        raise MalformedFingerprintError()
    hashes = _hashes(pods)  # computed before parsing: invalid pods are reported even for a bad sign
    _check_hex(fingerprint, lambda: _hex_sum(hashes))


class PodIdentifier(Protocol):
    """``PodIdentifier``: anything with a namespace and a name, e.g. a podresources ``v1.PodResources``."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


class Fingerprint:
    """``podfingerprint.Fingerprint``: an incrementally built pod set.

    Adding pods after :meth:`sign` is legal; the next sign reflects the grown set.
    """

    __slots__ = ("_hashes",)

    def __init__(self) -> None:
        self._hashes: list[int] = []

    def reset(self) -> None:
        self._hashes = []

    def add(self, namespace: str, name: str) -> None:
        self._hashes.append(pod_hash(namespace, name))

    def add_pod(self, pod: PodIdentifier) -> None:
        self.add(pod.namespace, pod.name)

    def add_all(self, pods: Iterable[tuple[str, str]]) -> None:
        """Add many ``(namespace, name)`` pairs at once: the same as :meth:`add` in a loop, only faster."""
        self._hashes.extend(_hashes(pods))

    def __len__(self) -> int:
        return len(self._hashes)

    def sum(self) -> bytes:
        """The 8-byte digest, big-endian (Go ``Sum(nil)``)."""
        return bytes.fromhex(_hex_sum(self._hashes))

    def sign(self) -> str:
        return PREFIX + VERSION + _hex_sum(self._hashes)

    def check(self, sign: str) -> None:
        """See :func:`check`."""
        if not isinstance(sign, str):
            raise MalformedFingerprintError()
        _check_hex(sign, lambda: _hex_sum(self._hashes))


# --- tracing --------------------------------------------------------------------------------------------


class NamespacedName(NamedTuple):
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Tracer(Protocol):
    """``Tracer``: told about every step of a :class:`TracingFingerprint`, in call order."""

    def start(self, num_pods: int) -> None: ...

    def add(self, namespace: str, name: str) -> None: ...

    def sign(self, computed: str) -> None: ...

    def check(self, expected: str) -> None: ...


class NullTracer:
    """``NullTracer``: records nothing."""

    def start(self, num_pods: int) -> None:
        pass

    def add(self, namespace: str, name: str) -> None:
        pass

    def sign(self, computed: str) -> None:
        pass

    def check(self, expected: str) -> None:
        pass


@dataclass
class Status:
    """``podfingerprint.Status``: the pods that went into a fingerprint, and what it came out as.

    A :class:`Tracer`. :meth:`to_json` is byte-identical to Go ``json.Marshal(status)`` and :meth:`repr` to
    ``Status.Repr()``.
    """

    fingerprint_expected: str = ""
    fingerprint_computed: str = ""
    pods: list[NamespacedName] = field(default_factory=list)
    node_name: str = ""

    def start(self, num_pods: int) -> None:
        # Like the library, this drops what was recorded; TracingFingerprint never calls it.
        self.pods = []

    def add(self, namespace: str, name: str) -> None:
        self.pods.append(NamespacedName(namespace, name))

    def sign(self, computed: str) -> None:
        self.fingerprint_computed = computed

    def check(self, expected: str) -> None:
        self.fingerprint_expected = expected

    def repr(self) -> str:
        """``Status.Repr()``: the line-oriented text RTE logs at verbosity 6."""
        lines = [f"> processing node {go_quote(self.node_name)}", f"> processing {len(self.pods)} pods"]
        lines.extend(f"+ {pod.namespace}/{pod.name}" for pod in self.pods)
        lines.append(f"= {self.fingerprint_computed}")
        if self.fingerprint_expected:
            lines.append(f"V {self.fingerprint_expected}")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: Go field tags, every field omitempty, pods with the Go field names."""
        out: dict[str, Any] = {}
        if self.fingerprint_expected:
            out["fingerprintExpected"] = self.fingerprint_expected
        if self.fingerprint_computed:
            out["fingerprintComputed"] = self.fingerprint_computed
        if self.pods:
            out["pods"] = [{"Namespace": p.namespace, "Name": p.name} for p in self.pods]
        if self.node_name:
            out["nodeName"] = self.node_name
        return out

    def to_json(self) -> str:
        return _go_json(self.to_dict())

    def clone(self) -> Status:
        return Status(self.fingerprint_expected, self.fingerprint_computed, list(self.pods), self.node_name)


def make_status(node_name: str) -> Status:
    """``MakeStatus``."""
    return Status(node_name=node_name)


class TracingFingerprint(Fingerprint):
    """``TracingFingerprint``: forwards each add/sign/check to ``tracer`` before doing it."""

    __slots__ = ("tracer",)

    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self.tracer = tracer

    def add(self, namespace: str, name: str) -> None:
        self.tracer.add(namespace, name)
        super().add(namespace, name)

    def add_all(self, pods: Iterable[tuple[str, str]]) -> None:
        pods = list(pods)
        hashes = _hashes(pods)  # validate all before tracing any
        for namespace, name in pods:
            self.tracer.add(namespace, name)
        self._hashes.extend(hashes)

    def sign(self) -> str:
        sign = super().sign()
        self.tracer.sign(sign)
        return sign

    def check(self, sign: str) -> None:
        self.tracer.check(sign)
        super().check(sign)


_completion_sink: Callable[[Status], None] | None = None


def set_completion_sink(sink: Callable[[Status], None] | None) -> None:
    """``SetCompletionSink``: the process-wide receiver of completed statuses (RTE's status-file dumper)."""
    global _completion_sink
    _completion_sink = sink


def clean_completion_sink() -> None:
    set_completion_sink(None)


def mark_completed(status: Status) -> None:
    """``MarkCompleted``: hand a clone of ``status`` to the sink; a no-op without one."""
    sink = _completion_sink
    if sink is not None:
        sink(status.clone())


# --- which pods an exporter fingerprints ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodInfo:
    """What the exporters know about a listed pod when they pick the fingerprinted set.

    ``exclusive`` is RTE's ``numalocality.Verify`` verdict on the pod's podresources entry (see
    :func:`has_exclusive_resources`); ``phase`` is ``status.phase`` ("" when unknown, i.e. not terminal).
    """

    namespace: str
    name: str
    phase: str = ""
    exclusive: bool = False

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


def parse_method(value: str) -> str:
    """Validate a method name, case-insensitively like RTE's ``PFPMethodIsSupported``."""
    if not isinstance(value, str) or value.lower() not in METHODS:
        raise UnsupportedMethodError(str(value))
    return value.lower()


def select_pods(
    pods: Iterable[PodInfo],
    method: str = METHOD_WITH_EXCLUSIVE_RESOURCES,
    *,
    exclude_terminal_pods: bool = False,
) -> list[NamespacedName]:
    """The pods a producer feeds to the fingerprint, in list order.

    * ``all``: every listed pod (nfd-topology-updater always, RTE with ``--pods-fingerprint-method=all``);
    * ``with-exclusive-resources`` (RTE's default): pods with an exclusive, NUMA-located resource;
    * ``exclude-terminal``: pods not in phase Succeeded/Failed.

    ``exclude_terminal_pods`` is RTE's ``--exclude-terminal-pods`` client middleware: it drops terminal
    pods from the List answer before any method looks at it.
    """
    method = parse_method(method)
    selected: list[NamespacedName] = []
    for pod in pods:
        if exclude_terminal_pods and pod.is_terminal:
            continue
        if method == METHOD_WITH_EXCLUSIVE_RESOURCES and not pod.exclusive:
            continue
        if method == METHOD_EXCLUDE_TERMINAL and pod.is_terminal:
            continue
        selected.append(NamespacedName(pod.namespace, pod.name))
    return selected


def fingerprint_pods(
    pods: Iterable[PodInfo],
    method: str = METHOD_WITH_EXCLUSIVE_RESOURCES,
    *,
    node_name: str = "",
    exclude_terminal_pods: bool = False,
) -> tuple[str, Status]:
    """RTE's per-scan fingerprint: select by ``method``, sign through a traced fingerprint.

    Returns the sign and the :class:`Status` holding the selected pods in list order.
    """
    status = make_status(node_name)
    fp = TracingFingerprint(status)
    fp.add_all(select_pods(pods, method, exclude_terminal_pods=exclude_terminal_pods))
    return fp.sign(), status


# Duck types for the podresources v1 messages numa_locality reads (the generated classes satisfy them).
class _NUMANode(Protocol):
    @property
    def ID(self) -> int: ...  # the proto field really is upper-case


class _TopologyInfo(Protocol):
    @property
    def nodes(self) -> Sequence[_NUMANode]: ...


class _Memory(Protocol):
    @property
    def topology(self) -> _TopologyInfo | None: ...


class _Devices(Protocol):
    @property
    def device_ids(self) -> Sequence[str]: ...

    @property
    def topology(self) -> _TopologyInfo | None: ...


class _Container(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def cpu_ids(self) -> Sequence[int]: ...

    @property
    def memory(self) -> Sequence[_Memory]: ...

    @property
    def devices(self) -> Sequence[_Devices]: ...


class _PodResources(Protocol):
    @property
    def containers(self) -> Sequence[_Container]: ...


def _numa_located(topology: _TopologyInfo | None) -> bool:
    # No topology, no nodes, or only node -1 all mean "don't care about locality".
    return topology is not None and any(node.ID >= 0 for node in topology.nodes)


def numa_locality(pod_resources: _PodResources | None) -> tuple[str, str] | None:
    """RTE ``numalocality.Verify``: the first container with an exclusive NUMA-located resource.

    Returns ``(container name, "cpu" | "memory" | "device")`` or ``None``. Per container it tries
    non-empty ``cpu_ids``, then a memory block with a node ID >= 0, then a device entry with ids and a
    node ID >= 0. Pod-level ``cpu_ids``/``memory`` are not consulted, as in RTE.
    """
    if pod_resources is None:
        return None
    for container in pod_resources.containers:
        if len(container.cpu_ids) > 0:
            return container.name, "cpu"
        if any(_numa_located(mem.topology) for mem in container.memory):
            return container.name, "memory"
        if any(len(dev.device_ids) > 0 and _numa_located(dev.topology) for dev in container.devices):
            return container.name, "device"
    return None


def has_exclusive_resources(pod_resources: _PodResources | None) -> bool:
    """What the ``with-exclusive-resources`` method asks of a podresources entry."""
    return numa_locality(pod_resources) is not None


# --- Go rendering helpers -------------------------------------------------------------------------------

# encoding/json escapes these even with ensure_ascii off (HTML safety, JS line terminators).
_GO_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _go_json(obj: Any) -> str:
    """Go ``json.Marshal`` text for a tree of dicts, lists and strings."""
    # Keys here are fixed ASCII names, so translating the whole text only touches string values.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).translate(_GO_JSON_ESCAPES)
    # Go replaces each byte of invalid UTF-8 (a lone surrogate is 3 of them) with an escaped U+FFFD.
    return _SURROGATE.sub(lambda _: "\\ufffd" * 3, text)
