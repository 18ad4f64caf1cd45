"""Kubernetes Pod manifests to :class:`kubeletemu.pod.Pod`, and back: the documents
:mod:`kubeletemu.manifest.documents` decoded, read as pods.

Input is YAML or JSON as ``kubectl get pod -o yaml|json`` prints it: one or many documents (``---``),
each a ``Pod``, or a ``List``/``PodList`` with ``items`` (``kubectl get pods -o yaml``). Everything outside
the fields the kubelet's resource managers read is ignored.

Before the kubelet sees a pod, the API server has defaulted and validated it; this module does the same
for what it reads, so hand-written manifests behave like created pods:

- defaulting (``SetDefaults_Pod``, ``SetDefaults_ResourceList``): quantities rounded up to milli units;
  a container limit without a request sets the request to the limit; with pod-level resources
  (``PodLevelResources``, on by default) pod-level hugepage limits and pod-level requests are defaulted
  from the containers (``defaultHugePagePodLimits``, ``defaultPodRequests``);
- validation (``ValidatePodCreate``, the parts about names and resources), with the API server's texts:
  names, unique container names, quantities, requests <= limits, request == limit for hugepages and
  extended resources (which must also be integers), hugepage values in whole pages, init containers'
  ``restartPolicy``, pod-level resources and their consistency with the containers.

A pod without ``metadata.uid`` (a hand-written manifest; created pods always have one) gets a fresh random
UUID4, so the same file admitted twice is two different pods, as with ``kubectl create``.

Errors are :class:`ManifestError`, one line naming the document and the field:
``pod "web" (document 2): spec.containers[0].resources.requests.cpu: invalid quantity "1.2.3"``.
"""

from __future__ import annotations

import math
import os
import re
import reprlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kubeletemu.config import fields, validation
from kubeletemu.golang import go_quote
from kubeletemu.manifest.documents import ManifestError, YAMLSyntaxError, check_values, decode_documents
from kubeletemu.manifest.limits import ECHO_CHARS, FILE, MAX_UID_CHARS, Limits, clip
from kubeletemu.pod import (
    RESTART_POLICY_ALWAYS,
    Container,
    Pod,
    ResourceList,
    ResourceRequirements,
    derived_uid,
)
from kubeletemu.quantity import Quantity, QuantityError, QuantityRangeError

API_VERSION = "v1"
LIST_KINDS = ("List", "PodList")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
# resourcehelper.SupportedPodLevelResources(), sorted as the API server lists them.
POD_LEVEL_RESOURCES = ("cpu", "hugepages-", "memory")
# apimachinery's TotalAnnotationSizeLimitB: keys and values together, in bytes.
ANNOTATIONS_MAX_BYTES = 256 * (1 << 10)
_PATH_CHARS = 160
# What the UID may hold: it names the pod's file in the state directory, so no control characters.
_UID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass
class _Context:
    """Which pod of which document is being read, for error messages."""

    source: str | None
    document: int
    item: int | None = None
    name: str | None = None

    def where(self) -> str:
        place = f"document {self.document}" + (f", items[{self.item}]" if self.item is not None else "")
        pod = f"pod {go_quote(clip(self.name))}" if self.name else "pod"
        return f"{self.source}: {pod} ({place})" if self.source else f"{pod} ({place})"

    def error(self, path: str, problem: str) -> ManifestError:
        # A path can hold a map key the client chose (a resource name): clipped like any echoed input.
        path = clip(path, _PATH_CHARS)
        return ManifestError(f"{self.where()}: {path}: {problem}" if path else f"{self.where()}: {problem}")


def parse_pods(
    text: str, source: str | None = None, *, pod_level_resources: bool = True, limits: Limits = FILE
) -> list[Pod]:
    """Every pod in ``text`` (YAML or JSON, one or more documents), defaulted and validated; the text
    within ``limits`` (a request's are tighter than a file's).

    ``pod_level_resources`` is the ``PodLevelResources`` feature gate of the API server that would have
    created the pods (on by default since 1.34); with it off, ``spec.resources`` is dropped as the API
    server drops it.
    """
    return pods_from_documents(
        _documents(text, source, limits), source, pod_level_resources=pod_level_resources
    )


def pods_from_documents(
    documents: Sequence[Any], source: str | None = None, *, pod_level_resources: bool = True
) -> list[Pod]:
    """:func:`parse_pods` on the documents :func:`~kubeletemu.manifest.documents.decode_documents` gave
    (for a reader that keeps them too)."""
    pods: list[Pod] = []
    for index, doc in enumerate(documents, start=1):
        if doc is None:
            continue
        ctx = _Context(source, index)
        obj = _object(ctx, doc)
        kind = obj.get("kind")
        if kind in LIST_KINDS:
            _check_api_version(ctx, obj)
            for item_index, item in enumerate(fields.sequence(ctx, "items", obj.get("items"))):
                item_ctx = _Context(source, index, item_index)
                item_obj = _object(item_ctx, item)
                # PodList items from the API carry no kind; List items from kubectl do.
                if item_obj.get("kind", "Pod") != "Pod":
                    raise item_ctx.error("kind", f"{_echo(item_obj['kind'])} is not supported: expected Pod")
                pods.append(_pod(item_ctx, item_obj, pod_level_resources))
        elif kind == "Pod":
            _check_api_version(ctx, obj)
            pods.append(_pod(ctx, obj, pod_level_resources))
        elif kind is None:
            raise ctx.error("kind", "Required value: expected Pod, PodList or List")
        else:
            raise ctx.error("kind", f"{_echo(kind)} is not supported: expected Pod, PodList or List")
    return pods


# kubectl's -f DIR reads these, not recursively.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def expand_paths(names: Sequence[str]) -> list[str]:
    """Every ``-f`` in order, a directory standing for its manifest files sorted by name (kubectl's way);
    ``-`` (standard input) is kept. Raises ``ManifestError`` for a directory without one."""
    paths: list[str] = []
    for name in names:
        if name != "-" and os.path.isdir(name):
            found = sorted(
                str(p) for p in Path(name).iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file()
            )
            if not found:
                raise ManifestError(f"{name}: no .yaml, .yml or .json file in this directory")
            paths.extend(found)
        else:
            paths.append(name)
    return paths


def read_pods(path: str, *, pod_level_resources: bool = True) -> list[Pod]:
    """:func:`parse_pods` on a file; ``-`` reads standard input."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as err:
        raise ManifestError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ManifestError(f"{path}: not UTF-8 text: {err.reason} at byte {err.start}") from None
    return parse_pods(text, "<stdin>" if path == "-" else path, pod_level_resources=pod_level_resources)


def pod_from_manifest(
    obj: Mapping[str, Any], *, source: str | None = None, pod_level_resources: bool = True
) -> Pod:
    """One decoded Pod object (``kind`` and ``apiVersion`` may be omitted here)."""
    ctx = _Context(source, 1)
    # Decoded elsewhere (a pod file, a request's message, a fleet's template): its values checked here.
    check_values(obj, source)
    if obj.get("kind", "Pod") != "Pod":
        raise ctx.error("kind", f"{_echo(obj['kind'])} is not supported: expected Pod")
    return _pod(ctx, fields.mapping(ctx, "", obj), pod_level_resources)


def pod_to_manifest(pod: Pod) -> dict[str, Any]:
    """A ``v1`` Pod manifest of the fields this module reads; :func:`pod_from_manifest` gives ``pod`` back."""
    spec: dict[str, Any] = {}
    if pod.init_containers:
        spec["initContainers"] = [_container_manifest(c) for c in pod.init_containers]
    spec["containers"] = [_container_manifest(c) for c in pod.containers]
    if pod.resources is not None:
        spec["resources"] = _requirements_manifest(pod.resources.requests, pod.resources.limits)
    if pod.overhead:
        spec["overhead"] = _resource_list_manifest(pod.overhead)
    if pod.runtime_class_name is not None:
        spec["runtimeClassName"] = pod.runtime_class_name
    if pod.priority is not None:
        spec["priority"] = pod.priority
    if pod.node_name is not None:
        spec["nodeName"] = pod.node_name
    metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if pod.labels:
        metadata["labels"] = dict(pod.labels)
    if pod.annotations:
        metadata["annotations"] = dict(pod.annotations)
    return {
        "apiVersion": API_VERSION,
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": pod.phase},
    }


# --- reading ---------------------------------------------------------------------------------------------


def _documents(text: str, source: str | None, limits: Limits) -> list[Any]:
    try:
        return decode_documents(text, source, limits)
    except YAMLSyntaxError as err:
        raise ManifestError(f"{source}: invalid YAML: {err}" if source else f"invalid YAML: {err}") from None


def _object(ctx: _Context, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ctx.error("", f"expected a Kubernetes object (a mapping), got {type(value).__name__}")
    return fields.mapping(ctx, "", value)


def _check_api_version(ctx: _Context, obj: Mapping[str, Any]) -> None:
    version = obj.get("apiVersion")
    if version is None:
        raise ctx.error("apiVersion", f"Required value: expected {API_VERSION}")
    if version != API_VERSION:
        raise ctx.error(
            "apiVersion", f"Unsupported value: {go_quote(clip(str(version)))}: expected {API_VERSION}"
        )


def _invalid(value: str, detail: str) -> str:
    return f"Invalid value: {go_quote(clip(value))}: {detail}"


class _BoundedRepr(reprlib.Repr):
    """``repr`` that stops early: two levels, four items, no integer's digits past the first 40 (Python
    refuses to spell more than 4,300)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict = 2, 4, 4
        self.maxstring = self.maxother = ECHO_CHARS

    def repr_int(self, x: int, level: int) -> str:
        return repr(x) if x.bit_length() <= 128 else f"<an integer of {x.bit_length()} bits>"


_ECHO = _BoundedRepr()


def _echo(value: object) -> str:
    """A value of the wrong kind, as a refusal shows it (``repr``, its size bounded before it is built: a
    list's first items, a number's first digits)."""
    return clip(_ECHO.repr(value))


def _pod(ctx: _Context, obj: Mapping[str, Any], pod_level_resources: bool) -> Pod:
    metadata = fields.mapping(ctx, "metadata", obj.get("metadata"))
    name = metadata.get("name")
    if name is None or name == "":
        raise ctx.error("metadata.name", "Required value: name or generateName is required")
    ctx.name = fields.scalar_text(ctx, "metadata.name", name)
    if problems := validation.dns1123_subdomain(ctx.name):
        raise ctx.error("metadata.name", _invalid(ctx.name, problems[0]))
    namespace = "default"
    if metadata.get("namespace") not in (None, ""):
        namespace = fields.string(ctx, "metadata.namespace", metadata["namespace"])
        if problems := validation.dns1123_label(namespace):
            raise ctx.error("metadata.namespace", _invalid(namespace, problems[0]))
    uid = metadata.get("uid")
    # Without one, the UID the namespace/name stands for: admitting one manifest twice is one pod.
    uid = (
        derived_uid(namespace, ctx.name)
        if uid in (None, "")
        else fields.scalar_text(ctx, "metadata.uid", uid)
    )
    _check_uid(ctx, uid)

    labels = fields.string_map(ctx, "metadata.labels", metadata.get("labels"))
    _check_labels(ctx, "metadata.labels", labels)
    annotations = fields.string_map(ctx, "metadata.annotations", metadata.get("annotations"))
    _check_annotations(ctx, "metadata.annotations", annotations)

    spec = fields.mapping(ctx, "spec", obj.get("spec"))
    priority = (
        None if spec.get("priority") is None else fields.integer(ctx, "spec.priority", spec["priority"])
    )
    if priority is not None and not _INT32_MIN <= priority <= _INT32_MAX:
        # spec.priority is an int32 (the kubelet's critical test compares it with 2000000000).
        raise ctx.error("spec.priority", f"must be a 32-bit integer, got {priority}")
    node_name = None
    if spec.get("nodeName") not in (None, ""):
        node_name = fields.string(ctx, "spec.nodeName", spec["nodeName"])
    raw_init = fields.sequence(ctx, "spec.initContainers", spec.get("initContainers"))
    raw_app = fields.sequence(ctx, "spec.containers", spec.get("containers"))
    if not raw_app:
        raise ctx.error("spec.containers", "Required value")
    names: set[str] = set()
    init = tuple(
        _container(ctx, f"spec.initContainers[{i}]", c, names, init=True) for i, c in enumerate(raw_init)
    )
    app = tuple(_container(ctx, f"spec.containers[{i}]", c, names, init=False) for i, c in enumerate(raw_app))

    resources = None
    # With the gate off the API server drops spec.resources on create (dropDisabledPodFields).
    if spec.get("resources") is not None and pod_level_resources:
        requests, limits = _requirements(ctx, "spec.resources", spec["resources"])
        requests, limits = _default_pod_level(init, app, requests, limits)
        resources = ResourceRequirements(_frozen(requests), _frozen(limits))
        _validate_pod_level(ctx, "spec.resources", resources, init, app)
    overhead = _resource_list(ctx, "spec.overhead", spec.get("overhead"))
    for key, quantity in overhead.items():
        _check_quantity(ctx, f"spec.overhead.{key}", key, quantity)
    runtime_class = spec.get("runtimeClassName")
    if runtime_class is not None:
        runtime_class = fields.string(ctx, "spec.runtimeClassName", runtime_class)
        if problems := validation.dns1123_subdomain(runtime_class):
            raise ctx.error("spec.runtimeClassName", _invalid(runtime_class, problems[0]))

    status = fields.mapping(ctx, "status", obj.get("status"))
    phase = "Pending"
    if status.get("phase") not in (None, ""):
        phase = fields.string(ctx, "status.phase", status["phase"])
        if phase not in POD_PHASES:
            supported = ", ".join(go_quote(p) for p in POD_PHASES)
            raise ctx.error(
                "status.phase", f"Unsupported value: {go_quote(clip(phase))}: supported values: {supported}"
            )

    return Pod(
        name=ctx.name,
        namespace=namespace,
        uid=uid,
        containers=app,
        init_containers=init,
        resources=resources,
        overhead=_frozen(overhead),
        runtime_class_name=runtime_class,
        phase=phase,
        labels=MappingProxyType(labels),
        annotations=MappingProxyType(annotations),
        priority=priority,
        node_name=node_name,
    )


def _check_uid(ctx: _Context, uid: str) -> None:
    """Not the API server's (it sets the UID on create, a 36-character UUID): the emulator keeps each pod
    in a file named after its UID, so a UID is at most ``MAX_UID_CHARS`` characters without control
    characters, and any such UID names a file that can be written."""
    if len(uid) > MAX_UID_CHARS:
        raise ctx.error("metadata.uid", _invalid(uid, f"must be no more than {MAX_UID_CHARS} characters"))
    if _UID_FORBIDDEN.search(uid):
        raise ctx.error("metadata.uid", _invalid(uid, "must not contain control characters"))


def _check_labels(ctx: _Context, path: str, labels: Mapping[str, str]) -> None:
    """``ValidateLabels``: each key a qualified name, each value a label value (keys in sorted order,
    where Go walks its map at random: the first problem found is reported)."""
    for key in sorted(labels):
        if problems := validation.qualified_name(key):
            raise ctx.error(path, _invalid(key, problems[0]))
        if problems := validation.label_value(labels[key]):
            raise ctx.error(path, _invalid(labels[key], problems[0]))


def _check_annotations(ctx: _Context, path: str, annotations: Mapping[str, str]) -> None:
    """``ValidateAnnotations``: each key a qualified name (case aside), then the total size of keys and
    values at most 256 KiB (``TotalAnnotationSizeLimitB``; ``field.TooLong`` omits the value)."""
    for key in sorted(annotations):
        if problems := validation.qualified_name(key.lower()):
            raise ctx.error(path, _invalid(key, problems[0]))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        raise ctx.error(path, f"Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes")


def _container(ctx: _Context, path: str, raw: Any, names: set[str], *, init: bool) -> Container:
    obj = fields.mapping(ctx, path, raw)
    name = obj.get("name")
    if name is None or name == "":
        raise ctx.error(f"{path}.name", "Required value")
    name = fields.scalar_text(ctx, f"{path}.name", name)
    if problems := validation.dns1123_label(name):
        raise ctx.error(f"{path}.name", _invalid(name, problems[0]))
    if name in names:
        raise ctx.error(f"{path}.name", f"Duplicate value: {go_quote(clip(name))}")
    names.add(name)

    restart_policy = obj.get("restartPolicy")
    if restart_policy is not None:
        restart_policy = fields.string(ctx, f"{path}.restartPolicy", restart_policy)
        if not init:
            raise ctx.error(f"{path}.restartPolicy", "Forbidden: may not be set for non-init containers")
        if restart_policy != RESTART_POLICY_ALWAYS:
            raise ctx.error(
                f"{path}.restartPolicy",
                f"Unsupported value: {go_quote(clip(restart_policy))}: "
                f'supported values: "{RESTART_POLICY_ALWAYS}"',
            )

    requests, limits = _requirements(ctx, f"{path}.resources", obj.get("resources"))
    # SetDefaults_Pod: a limit without a request makes the request equal to the limit.
    requests = {**limits, **requests} if limits else requests
    _validate_container_resources(ctx, f"{path}.resources", requests, limits)
    return Container(name, _frozen(requests), _frozen(limits), restart_policy)


def _requirements(ctx: _Context, path: str, raw: Any) -> tuple[dict[str, Quantity], dict[str, Quantity]]:
    obj = fields.mapping(ctx, path, raw)
    return (
        _resource_list(ctx, f"{path}.requests", obj.get("requests")),
        _resource_list(ctx, f"{path}.limits", obj.get("limits")),
    )


def _resource_list(ctx: _Context, path: str, raw: Any) -> dict[str, Quantity]:
    """A ``ResourceList`` with ``SetDefaults_ResourceList``'s rounding up to milli units."""
    result: dict[str, Quantity] = {}
    for key, value in fields.mapping(ctx, path, raw).items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ctx.error(
                f"{path}.{clip(key)}", f"invalid quantity {_echo(value)}: expected a string or a number"
            )
        try:
            quantity = Quantity.parse(value)
        except QuantityError as err:
            text = go_quote(clip(value if isinstance(value, str) else _echo(value)))
            why = f": {err}" if isinstance(err, QuantityRangeError) else ""
            raise ctx.error(f"{path}.{clip(key)}", f"invalid quantity {text}{why}") from None
        milli = quantity.amount * 1000
        if milli.denominator != 1:
            quantity = Quantity(Fraction(math.ceil(milli), 1000))
        result[key] = quantity
    return result


def _check_resource_name(ctx: _Context, path: str, name: str, *, pod_level: bool) -> None:
    """``validateContainerResourceName`` / ``validatePodResourceName``."""
    if problems := validation.qualified_name(name):
        raise ctx.error(path, _invalid(name, problems[0]))
    if pod_level:
        if name not in ("cpu", "memory") and not validation.is_hugepages_resource(name):
            supported = ", ".join(go_quote(r) for r in POD_LEVEL_RESOURCES)
            raise ctx.error(path, f"Unsupported value: {go_quote(clip(name))}: supported values: {supported}")
    elif "/" not in name:
        if name not in validation.STANDARD_CONTAINER_RESOURCES and not validation.is_hugepages_resource(name):
            raise ctx.error(path, _invalid(name, "must be a standard resource for containers"))
    elif not validation.is_native_resource(name) and not validation.is_extended_resource_name(name):
        raise ctx.error(path, _invalid(name, "doesn't follow extended resource name standard"))


def _overcommit_allowed(name: str) -> bool:
    """``IsOvercommitAllowed``: native resources other than hugepages."""
    return validation.is_native_resource(name) and not validation.is_hugepages_resource(name)


def _check_quantity(ctx: _Context, path: str, name: str, quantity: Quantity) -> None:
    """``ValidateResourceQuantityValue`` plus the hugepage divisibility rule."""
    if quantity.amount < 0:
        raise ctx.error(path, _invalid(str(quantity), "must be greater than or equal to 0"))
    if validation.is_extended_resource_name(name) and quantity.amount.denominator != 1:
        raise ctx.error(path, _invalid(str(quantity), "must be an integer"))
    if validation.is_hugepages_resource(name):
        page = _hugepage_size(name)
        if page is None or quantity.value() % page != 0:
            raise ctx.error(
                path, _invalid(str(quantity), f"{quantity} is not positive integer multiple of {name}")
            )


def _hugepage_size(name: str) -> int | None:
    try:
        size = Quantity.parse(name[len(validation.HUGEPAGES_PREFIX) :])
    except QuantityError:
        return None
    return int(size.amount) if size.amount > 0 and size.amount.denominator == 1 else None


def _validate_requirements(
    ctx: _Context,
    path: str,
    requests: Mapping[str, Quantity],
    limits: Mapping[str, Quantity],
    *,
    pod_level: bool,
) -> None:
    """``validateResourceRequirements``: limits first, then each request against its limit."""
    for name, quantity in limits.items():
        _check_resource_name(ctx, f"{path}.limits.{name}", name, pod_level=pod_level)
        _check_quantity(ctx, f"{path}.limits.{name}", name, quantity)
    for name, quantity in requests.items():
        _check_resource_name(ctx, f"{path}.requests.{name}", name, pod_level=pod_level)
        _check_quantity(ctx, f"{path}.requests.{name}", name, quantity)
        limit = limits.get(name)
        if limit is not None:
            if quantity.amount != limit.amount and not _overcommit_allowed(name):
                raise ctx.error(
                    f"{path}.requests", _invalid(str(quantity), f"must be equal to {name} limit of {limit}")
                )
            if quantity.amount > limit.amount:
                raise ctx.error(
                    f"{path}.requests",
                    _invalid(str(quantity), f"must be less than or equal to {name} limit of {limit}"),
                )
        elif not _overcommit_allowed(name):
            raise ctx.error(
                f"{path}.limits", "Required value: Limit must be set for non overcommitable resources"
            )


def _validate_container_resources(
    ctx: _Context, path: str, requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]
) -> None:
    _validate_requirements(ctx, path, requests, limits, pod_level=False)
    names = set(requests) | set(limits)
    if any(map(validation.is_hugepages_resource, names)) and not names & {"cpu", "memory"}:
        raise ctx.error(path, "Forbidden: HugePages require cpu or memory")


# --- pod-level resources -----------------------------------------------------------------------------------


def _aggregate(init: Iterable[Container], app: Iterable[Container], which: str) -> dict[str, Quantity]:
    """``AggregateContainerRequests`` / ``AggregateContainerLimits`` over the spec (no status): the sum of
    app containers and sidecars, or the largest init-time footprint (an init container plus the sidecars
    started before it) if bigger."""
    total: dict[str, Quantity] = {}
    for container in app:
        _add(total, getattr(container, which))
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for container in init:
        resources: Mapping[str, Quantity] = getattr(container, which)
        if container.is_restartable_init:
            _add(total, resources)
            _add(sidecars, resources)
            current = dict(sidecars)
        else:
            current = dict(sidecars)
            _add(current, resources)
        _max(init_peak, current)
    _max(total, init_peak)
    return total


def _add(total: dict[str, Quantity], resources: Mapping[str, Quantity]) -> None:
    """``addResourceList``: a sum keeps the format of its first term (``Quantity.Add``)."""
    for name, quantity in resources.items():
        total[name] = _like(total[name].amount + quantity.amount, total[name]) if name in total else quantity


def _max(total: dict[str, Quantity], resources: Mapping[str, Quantity]) -> None:
    """``maxResourceList``: the bigger quantity, as written."""
    for name, quantity in resources.items():
        if name not in total or quantity.amount > total[name].amount:
            total[name] = quantity


_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _like(amount: Fraction, model: Quantity) -> Quantity:
    """``amount`` written in ``model``'s binary-SI format where it has one (``1Gi + 512Mi`` is ``1536Mi``,
    as the API server would print it); decimal otherwise."""
    if amount.denominator == 1 and amount > 0 and model.text.endswith(tuple(s for s, _ in _BINARY_SUFFIXES)):
        for suffix, base in _BINARY_SUFFIXES:
            if amount % base == 0:
                return Quantity(amount, f"{amount // base}{suffix}")
    return Quantity(amount)


def _default_pod_level(
    init: tuple[Container, ...],
    app: tuple[Container, ...],
    requests: dict[str, Quantity],
    limits: dict[str, Quantity],
) -> tuple[dict[str, Quantity], dict[str, Quantity]]:
    """``defaultHugePagePodLimits`` then ``defaultPodRequests``; returns the new requests and limits."""
    requests, limits = dict(requests), dict(limits)
    if not limits and not requests:
        return requests, limits
    for name, quantity in _aggregate(init, app, "limits").items():
        if validation.is_hugepages_resource(name) and name not in requests and name not in limits:
            limits[name] = quantity
    if not limits:
        return requests, limits
    for name, quantity in _aggregate(init, app, "requests").items():
        if name not in requests and _pod_level_supported(name) and _overcommit_allowed(name):
            requests[name] = quantity
    for name, limit in limits.items():
        if name not in requests and _pod_level_supported(name):
            requests[name] = limit
    return requests, limits


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or validation.is_hugepages_resource(name)


def _validate_pod_level(
    ctx: _Context,
    path: str,
    resources: ResourceRequirements,
    init: tuple[Container, ...],
    app: tuple[Container, ...],
) -> None:
    """``validatePodResources``: the requirements themselves, then ``validatePodResourceConsistency``."""
    _validate_requirements(ctx, path, resources.requests, resources.limits, pod_level=True)
    for name, aggregate in _aggregate(init, app, "requests").items():
        pod_request = resources.requests.get(name)
        if pod_request is not None and not pod_request.is_zero() and aggregate.amount > pod_request.amount:
            raise ctx.error(
                f"{path}.requests.{name}",
                _invalid(
                    str(pod_request),
                    f"must be greater than or equal to aggregate container requests of {aggregate}",
                ),
            )
    for index, container in enumerate(app):
        for name, limit in container.limits.items():
            pod_limit = resources.limits.get(name)
            if pod_limit is not None and limit.amount > pod_limit.amount:
                raise ctx.error(
                    f"spec.containers[{index}].resources.limits.{name}",
                    _invalid(str(limit), f"must be less than or equal to pod limits of {pod_limit}"),
                )


# --- writing ------------------------------------------------------------------------------------------------


def _frozen(items: Mapping[str, Quantity]) -> ResourceList:
    return MappingProxyType(dict(items))


def _resource_list_manifest(resources: Mapping[str, Quantity]) -> dict[str, str]:
    return {name: str(quantity) for name, quantity in resources.items()}


def _requirements_manifest(requests: ResourceList, limits: ResourceList) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = _resource_list_manifest(requests)
    if limits:
        out["limits"] = _resource_list_manifest(limits)
    return out


def _container_manifest(container: Container) -> dict[str, Any]:
    out: dict[str, Any] = {"name": container.name}
    resources = _requirements_manifest(container.requests, container.limits)
    if resources:
        out["resources"] = resources
    if container.restart_policy is not None:
        out["restartPolicy"] = container.restart_policy
    return out
