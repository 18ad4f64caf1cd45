"""Pod manifests: kubectl's output read as the kubelet would see the pod, and written back."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeletemu.manifest import ManifestError, parse_pods, pod_from_manifest, pod_to_manifest, read_pods
from kubeletemu.pod import Container, Pod, QOSClass, ResourceRequirements
from kubeletemu.quantity import Quantity

# `kubectl get pod numa-app -o yaml` of a running guaranteed pod with a sidecar.
KUBECTL_POD = """\
apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","kind":"Pod"}
  creationTimestamp: "2025-03-01T10:00:00Z"
  labels:
    app: numa-app
  name: numa-app
  namespace: telco
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: numa-app-7d9f8
    uid: 0b7e2f1c-0000-4000-8000-000000000001
  resourceVersion: "123456"
  uid: 5f0c7a52-9b1e-4a47-a3b4-3d2d7c9e6a10
spec:
  containers:
  - image: registry.example.com/dpdk:1.0
    imagePullPolicy: IfNotPresent
    name: dpdk
    ports:
    - containerPort: 8080
      protocol: TCP
    resources:
      limits:
        cpu: "4"
        hugepages-1Gi: 2Gi
        intel.com/sriov_vf: "2"
        memory: 4Gi
      requests:
        cpu: "4"
        hugepages-1Gi: 2Gi
        intel.com/sriov_vf: "2"
        memory: 4Gi
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
    volumeMounts:
    - mountPath: /hugepages
      name: hugepages
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  initContainers:
  - image: registry.example.com/proxy:1.0
    name: proxy
    resources:
      limits:
        cpu: 500m
        memory: 256Mi
      requests:
        cpu: 500m
        memory: 256Mi
    restartPolicy: Always
  nodeName: worker-0
  overhead:
    cpu: 250m
    memory: 120Mi
  priority: 0
  restartPolicy: Always
  runtimeClassName: kata
  schedulerName: default-scheduler
  securityContext: {}
  serviceAccountName: default
  terminationGracePeriodSeconds: 30
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
  volumes:
  - emptyDir:
      medium: HugePages
    name: hugepages
status:
  conditions:
  - lastProbeTime: null
    lastTransitionTime: "2025-03-01T10:00:05Z"
    status: "True"
    type: Ready
  containerStatuses:
  - containerID: containerd://abc
    image: registry.example.com/dpdk:1.0
    name: dpdk
    ready: true
    restartCount: 0
    started: true
    state:
      running:
        startedAt: "2025-03-01T10:00:04Z"
  hostIP: 10.0.0.5
  phase: Running
  podIP: 10.244.1.7
  qosClass: Guaranteed
  startTime: "2025-03-01T10:00:00Z"
"""


def q(text: str) -> Quantity:
    return Quantity.parse(text)


def rl(**items: str) -> dict[str, Quantity]:
    return {name.replace("__", "/").replace("_", "-"): q(value) for name, value in items.items()}


def one(text: str, *, pod_level_resources: bool = True) -> Pod:
    [pod] = parse_pods(text, pod_level_resources=pod_level_resources)
    return pod


def minimal(spec: str, name: str = "web") -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, uid: u-1}}\nspec:\n{spec}"


def test_kubectl_get_pod_yaml() -> None:
    pod = one(KUBECTL_POD)
    assert (pod.name, pod.namespace, pod.uid) == ("numa-app", "telco", "5f0c7a52-9b1e-4a47-a3b4-3d2d7c9e6a10")
    assert pod.phase == "Running"
    assert pod.runtime_class_name == "kata"
    assert pod.overhead == {"cpu": q("250m"), "memory": q("120Mi")}
    [proxy] = pod.init_containers
    assert proxy.name == "proxy"
    assert proxy.is_restartable_init
    assert proxy.requests == proxy.limits == {"cpu": q("500m"), "memory": q("256Mi")}
    [dpdk] = pod.containers
    assert dpdk.restart_policy is None
    expected = {"cpu": q("4"), "hugepages-1Gi": q("2Gi"), "intel.com/sriov_vf": q("2"), "memory": q("4Gi")}
    assert dpdk.requests == dpdk.limits == expected
    assert pod.resources is None
    assert pod.qos_class is QOSClass.GUARANTEED


def test_kubectl_get_pod_json() -> None:
    obj = yaml.safe_load(KUBECTL_POD)
    text = json.dumps(obj, indent="\t")  # tabs: not YAML-parseable, must go through the JSON path
    assert one(text) == one(KUBECTL_POD)


def test_kubectl_get_pods_list() -> None:
    items = [yaml.safe_load(KUBECTL_POD), yaml.safe_load(minimal("  containers: [{name: c}]\n"))]
    text = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}
    )
    pods = parse_pods(text)
    assert [p.name for p in pods] == ["numa-app", "web"]


def test_api_pod_list_items_have_no_kind() -> None:
    item = yaml.safe_load(minimal("  containers: [{name: c}]\n"))
    del item["kind"], item["apiVersion"]
    text = json.dumps(
        {"apiVersion": "v1", "kind": "PodList", "items": [item, {**item, "metadata": {"name": "b"}}]}
    )
    assert [p.name for p in parse_pods(text)] == ["web", "b"]


def test_several_documents_and_empty_ones() -> None:
    text = (
        "---\n"
        + minimal("  containers: [{name: c}]\n", "a")
        + "---\n---\n"
        + minimal("  containers: [{name: c}]\n", "b")
    )
    assert [p.name for p in parse_pods(text)] == ["a", "b"]
    assert parse_pods("") == []
    assert parse_pods("apiVersion: v1\nkind: List\nitems: []\n") == []


def test_namespace_defaults_and_uid_is_derived_from_namespace_and_name() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n"
    first, second = one(text), one(text)
    assert first.namespace == "default"
    # The same manifest is the same pod: a UUIDv5 of namespace/name, stable across calls and processes.
    assert uuid.UUID(first.uid).version == 5
    assert first.uid == second.uid == "690293cb-8551-556f-990d-2d37d8d86d1e"
    other_ns = one(text.replace("{name: web}", "{name: web, namespace: prod}"))
    other_name = one(text.replace("{name: web}", "{name: web2}"))
    assert len({first.uid, other_ns.uid, other_name.uid}) == 3
    given = one(text.replace("{name: web}", "{name: web, uid: 1234}"))
    assert given.uid == "1234"


def test_phase_defaults_to_pending() -> None:
    assert one(minimal("  containers: [{name: c}]\n")).phase == "Pending"


@pytest.mark.parametrize(
    ("resources", "requests", "limits"),
    [
        pytest.param(
            "{limits: {cpu: 2, memory: 1Gi}}",
            rl(cpu="2", memory="1Gi"),
            rl(cpu="2", memory="1Gi"),
            id="limits_only",
        ),
        pytest.param(
            "{requests: {cpu: 1}, limits: {cpu: 2, memory: 1Gi}}",
            rl(cpu="1", memory="1Gi"),
            rl(cpu="2", memory="1Gi"),
            id="per_resource",
        ),
        pytest.param("{requests: {cpu: 100m}}", rl(cpu="100m"), {}, id="requests_only"),
        pytest.param(
            "{requests: {cpu: 0.0001, memory: 1.5}}",
            rl(cpu="1m", memory="1500m"),
            {},
            id="rounded_up_to_milli",
        ),
        pytest.param("{requests: {cpu: '1e-3'}}", rl(cpu="1m"), {}, id="exponent"),
        pytest.param("{}", {}, {}, id="empty"),
    ],
)
def test_container_defaulting(
    resources: str, requests: dict[str, Quantity], limits: dict[str, Quantity]
) -> None:
    [container] = one(minimal(f"  containers: [{{name: c, resources: {resources}}}]\n")).containers
    assert dict(container.requests) == requests
    assert dict(container.limits) == limits


def test_init_containers_are_defaulted_too() -> None:
    pod = one(
        minimal(
            "  initContainers: [{name: i, resources: {limits: {memory: 1Gi}}}]\n  containers: [{name: c}]\n"
        )
    )
    assert pod.init_containers[0].requests == {"memory": q("1Gi")}


@pytest.mark.parametrize(
    ("spec", "requests", "limits"),
    [
        pytest.param(
            "  resources: {limits: {cpu: 4, memory: 4Gi}}\n  containers: [{name: c}]\n",
            rl(cpu="4", memory="4Gi"), rl(cpu="4", memory="4Gi"), id="requests_from_limits",
        ),
        pytest.param(
            "  resources: {limits: {cpu: 4, memory: 4Gi}}\n"
            "  containers:\n"
            "  - {name: a, resources: {requests: {cpu: 1}}}\n"
            "  - {name: b, resources: {requests: {cpu: 500m}}}\n",
            rl(cpu="1500m", memory="4Gi"), rl(cpu="4", memory="4Gi"), id="requests_from_containers",
        ),
        pytest.param(
            "  resources: {limits: {cpu: 4}}\n"
            "  initContainers:\n"
            "  - {name: side, restartPolicy: Always, resources: {requests: {cpu: 1}}}\n"
            "  - {name: init, resources: {requests: {cpu: 3}}}\n"
            "  containers: [{name: a, resources: {requests: {cpu: 1}}}]\n",
            rl(cpu="4"), rl(cpu="4"), id="sidecar_and_init_peak",
        ),
        pytest.param(
            "  resources: {requests: {cpu: 2}}\n"
            "  containers: [{name: a, resources: {limits: {cpu: 1, hugepages-2Mi: 4Mi}}}]\n",
            rl(cpu="2", hugepages_2Mi="4Mi"), rl(hugepages_2Mi="4Mi"), id="hugepage_limits_from_containers",
        ),
        pytest.param(
            "  resources: {requests: {cpu: 2, hugepages-2Mi: 8Mi}, limits: {hugepages-2Mi: 8Mi}}\n"
            "  containers: [{name: a, resources: {limits: {cpu: 1, hugepages-2Mi: 4Mi}}}]\n",
            rl(cpu="2", hugepages_2Mi="8Mi"), rl(hugepages_2Mi="8Mi"), id="explicit_values_kept",
        ),
        pytest.param(
            "  resources: {requests: {memory: 1Gi}}\n  containers: [{name: a}]\n",
            rl(memory="1Gi"), {}, id="requests_only",
        ),
    ],
)  # fmt: skip
def test_pod_level_defaulting(spec: str, requests: dict[str, Quantity], limits: dict[str, Quantity]) -> None:
    resources = one(minimal(spec)).resources
    assert resources is not None
    assert dict(resources.requests) == requests
    assert dict(resources.limits) == limits


def test_pod_level_resources_follow_the_feature_gate() -> None:
    text = minimal("  resources: {limits: {cpu: 4}}\n  containers: [{name: c}]\n")
    assert one(text).resources == ResourceRequirements({"cpu": q("4")}, {"cpu": q("4")})
    assert one(text, pod_level_resources=False).resources is None


LONG = "x" * 64
WEB = 'pod "web" (document 1): '


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            minimal("  containers: [{name: c, resources: {requests: {cpu: 1.2.3}}}]\n"),
            WEB + 'spec.containers[0].resources.requests.cpu: invalid quantity "1.2.3"',
            id="quantity_syntax",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {limits: {memory: [1]}}}]\n"),
            WEB + "spec.containers[0].resources.limits.memory: invalid quantity [1]: expected a "
            "string or a number",
            id="quantity_type",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {requests: {cpu: -1}}}]\n"),
            WEB + 'spec.containers[0].resources.requests.cpu: Invalid value: "-1": must be '
            "greater than or equal to 0",
            id="negative",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]\n"),
            WEB + 'spec.containers[0].resources.requests: Invalid value: "2": must be less '
            "than or equal to cpu limit of 1",
            id="request_above_limit",
        ),
        pytest.param(
            minimal(
                "  containers: [{name: c, resources: {requests: {cpu: 1, hugepages-2Mi: 2Mi}, "
                "limits: {hugepages-2Mi: 4Mi}}}]\n"
            ),
            WEB + 'spec.containers[0].resources.requests: Invalid value: "2Mi": must be '
            "equal to hugepages-2Mi limit of 4Mi",
            id="hugepages_request_not_limit",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {limits: {hugepages-2Mi: 2Mi}}}]\n"),
            WEB + "spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
            id="hugepages_alone",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {limits: {cpu: 1, hugepages-2Mi: 3Mi}}}]\n"),
            WEB + 'spec.containers[0].resources.limits.hugepages-2Mi: Invalid value: "3Mi": '
            "3Mi is not positive integer multiple of hugepages-2Mi",
            id="hugepages_partial_page",
        ),
        pytest.param(
            minimal(
                "  containers: [{name: c, resources: {requests: {example.com/dev: 1}, "
                "limits: {example.com/dev: 2}}}]\n"
            ),
            WEB + 'spec.containers[0].resources.requests: Invalid value: "1": must be equal '
            "to example.com/dev limit of 2",
            id="extended_request_not_limit",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {requests: {example.com/dev: 1}}}]\n"),
            WEB + "spec.containers[0].resources.limits: Required value: Limit must be set for "
            "non overcommitable resources",
            id="extended_without_limit",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {limits: {example.com/dev: 500m}}}]\n"),
            WEB + 'spec.containers[0].resources.limits.example.com/dev: Invalid value: "500m": '
            "must be an integer",
            id="extended_fraction",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {limits: {gpu: 1}}}]\n"),
            WEB + 'spec.containers[0].resources.limits.gpu: Invalid value: "gpu": must be a '
            "standard resource for containers",
            id="resource_name_standard",
        ),
        pytest.param(
            minimal("  containers: [{name: c, resources: {limits: {example.com/-dev: 1}}}]\n"),
            WEB + "spec.containers[0].resources.limits.example.com/-dev: Invalid value: "
            '"example.com/-dev": name part must consist of alphanumeric characters',
            id="resource_name_syntax",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\nspec: {containers: [{name: c}]}\n",
            "pod (document 1): metadata.name: Required value: name or generateName is required",
            id="name_missing",
        ),
        pytest.param(
            minimal("  containers: [{name: c}]\n", name="Web_1"),
            'pod "Web_1" (document 1): metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain '
            "must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="name_syntax",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: a.b}\n"
            "spec: {containers: [{name: c}]}\n",
            WEB + 'metadata.namespace: Invalid value: "a.b": a lowercase RFC 1123 label must '
            "consist of lower case alphanumeric characters or '-'",
            id="namespace_syntax",
        ),
        pytest.param(
            minimal(f"  containers: [{{name: {LONG}}}]\n"),
            f'pod "web" (document 1): spec.containers[0].name: Invalid value: "{LONG}": must be no more than '
            "63 characters",
            id="container_name_length",
        ),
        pytest.param(
            minimal("  containers: [{image: nginx}]\n"),
            WEB + "spec.containers[0].name: Required value",
            id="container_name_missing",
        ),
        pytest.param(
            minimal("  initContainers: [{name: app}]\n  containers: [{name: app}]\n"),
            WEB + 'spec.containers[0].name: Duplicate value: "app"',
            id="duplicate_across_init_and_app",
        ),
        pytest.param(
            minimal("  containers: []\n"),
            WEB + "spec.containers: Required value",
            id="no_containers",
        ),
        pytest.param(
            minimal("  initContainers: [{name: i, restartPolicy: OnFailure}]\n  containers: [{name: c}]\n"),
            WEB + 'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": '
            'supported values: "Always"',
            id="init_restart_policy",
        ),
        pytest.param(
            minimal("  containers: [{name: c, restartPolicy: Always}]\n"),
            WEB + "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            id="app_restart_policy",
        ),
        pytest.param(
            minimal("  resources: {limits: {example.com/dev: 1}}\n  containers: [{name: c}]\n"),
            WEB + 'spec.resources.limits.example.com/dev: Unsupported value: "example.com/dev": '
            'supported values: "cpu", "hugepages-", "memory"',
            id="pod_level_unsupported",
        ),
        pytest.param(
            minimal(
                "  resources: {requests: {cpu: 1}}\n"
                "  containers: [{name: c, resources: {requests: {cpu: 2}}}]\n"
            ),
            WEB + 'spec.resources.requests.cpu: Invalid value: "1": must be greater than or '
            "equal to aggregate container requests of 2",
            id="pod_level_below_containers",
        ),
        pytest.param(
            minimal(
                "  resources: {limits: {cpu: 1}}\n  containers: [{name: c, resources: {limits: {cpu: 2}}}]\n"
            ),
            # The pod-level request defaults to the containers' 2, above the pod-level limit.
            WEB + 'spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
            id="pod_level_limit_below_container_request",
        ),
        pytest.param(
            minimal(
                "  resources: {requests: {cpu: 3}, limits: {cpu: 3}}\n"
                "  containers: [{name: c, resources: {requests: {cpu: 1}, limits: {cpu: 4}}}]\n"
            ),
            WEB + 'spec.containers[0].resources.limits.cpu: Invalid value: "4": must be less '
            "than or equal to pod limits of 3",
            id="container_limit_above_pod_limit",
        ),
        pytest.param(
            minimal("  containers: [{name: c}]\n  runtimeClassName: Kata\n"),
            WEB + 'spec.runtimeClassName: Invalid value: "Kata": a lowercase RFC 1123 subdomain',
            id="runtime_class",
        ),
        pytest.param(
            minimal("  containers: [{name: c}]\n  overhead: {cpu: -1}\n"),
            WEB + 'spec.overhead.cpu: Invalid value: "-1": must be greater than or equal to 0',
            id="overhead_negative",
        ),
        pytest.param(
            minimal("  containers: [{name: c}]\n") + "status: {phase: Sleeping}\n",
            WEB + 'status.phase: Unsupported value: "Sleeping": supported values: "Pending", '
            '"Running", "Succeeded", "Failed", "Unknown"',
            id="phase",
        ),
        pytest.param(
            minimal("  containers: {name: c}\n"),
            WEB + "spec.containers: expected a list, got a mapping",
            id="containers_type",
        ),
        pytest.param(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
            "pod (document 1): kind: 'Deployment' is not supported: expected Pod, PodList or List",
            id="deployment",
        ),
        pytest.param(
            "metadata: {name: d}\nspec: {containers: [{name: c}]}\n",
            "pod (document 1): kind: Required value: expected Pod, PodList or List",
            id="kind_missing",
        ),
        pytest.param(
            "kind: Pod\nmetadata: {name: d}\nspec: {containers: [{name: c}]}\n",
            "pod (document 1): apiVersion: Required value: expected v1",
            id="api_version_missing",
        ),
        pytest.param(
            "apiVersion: v2\nkind: Pod\nmetadata: {name: d}\nspec: {containers: [{name: c}]}\n",
            'pod (document 1): apiVersion: Unsupported value: "v2": expected v1',
            id="api_version_wrong",
        ),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: s}}\n",
            "pod (document 1, items[0]): kind: 'Service' is not supported: expected Pod",
            id="list_with_service",
        ),
        pytest.param(
            "- a\n- b\n",
            "pod (document 1): expected a Kubernetes object (a mapping), got list",
            id="not_an_object",
        ),
    ],
)
def test_validation(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_pods(text)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_yaml_syntax_error_names_line_and_column() -> None:
    # The problem text is the parser's (libyaml's or PyYAML's); the position is ours.
    with pytest.raises(ManifestError, match=r"^pods\.yaml: invalid YAML: .*']'.* \(line 4, column 1\)$"):
        parse_pods("apiVersion: v1\nkind: Pod\nmetadata: {name: [web\n", "pods.yaml")


def test_error_names_the_document_and_item() -> None:
    good = minimal("  containers: [{name: c}]\n", "a")
    bad_item = yaml.safe_load(minimal("  containers: [{name: c, resources: {requests: {cpu: x}}}]\n", "b"))
    text = good + "---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [bad_item]})
    with pytest.raises(ManifestError) as err:
        parse_pods(text, "pods.yaml")
    assert str(err.value) == (
        'pods.yaml: pod "b" (document 2, items[0]): '
        'spec.containers[0].resources.requests.cpu: invalid quantity "x"'
    )


def test_brief_example_error() -> None:
    text = (
        minimal("  containers: [{name: c}]\n", "a")
        + "---\n"
        + minimal("  containers: [{name: c, resources: {requests: {cpu: 1.2.3}}}]\n")
    )
    with pytest.raises(ManifestError) as err:
        parse_pods(text)
    assert str(err.value) == (
        'pod "web" (document 2): spec.containers[0].resources.requests.cpu: invalid quantity "1.2.3"'
    )


# --- writing and round trips -----------------------------------------------------------------------------


def test_round_trip_of_the_kubectl_pod() -> None:
    pod = one(KUBECTL_POD)
    manifest = pod_to_manifest(pod)
    assert manifest["apiVersion"] == "v1"
    assert manifest["kind"] == "Pod"
    assert manifest["spec"]["containers"][0]["resources"]["limits"]["intel.com/sriov_vf"] == "2"
    assert manifest["spec"]["initContainers"][0]["restartPolicy"] == "Always"
    assert pod_from_manifest(manifest) == pod
    assert one(yaml.safe_dump(manifest)) == pod
    assert one(json.dumps(manifest)) == pod


def test_round_trip_keeps_pod_level_resources_and_minimal_fields() -> None:
    pod = Pod(
        name="p",
        namespace="ns",
        uid="u",
        containers=(Container("c", {"cpu": q("1")}, {}),),
        resources=ResourceRequirements(
            {"cpu": q("2"), "memory": q("1Gi")}, {"cpu": q("2"), "memory": q("1Gi")}
        ),
    )
    manifest = pod_to_manifest(pod)
    assert manifest["spec"] == {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
    }
    assert manifest["status"] == {"phase": "Pending"}
    assert pod_from_manifest(manifest) == pod


_NAMES = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)


@st.composite
def _containers(draw: st.DrawFn, restartable: bool = False) -> Container:
    limits: dict[str, Quantity] = {}
    requests: dict[str, Quantity] = {}
    # Requests at or below the limits (equal for the device, as validation wants), or requests alone.
    if draw(st.booleans()):
        milli = draw(st.integers(min_value=1, max_value=64_000))
        limits["cpu"] = Quantity.parse(f"{milli}m")
        requests["cpu"] = Quantity.parse(f"{draw(st.integers(min_value=0, max_value=milli))}m")
    elif draw(st.booleans()):
        requests["cpu"] = Quantity.parse(str(draw(st.integers(min_value=1, max_value=64))))
    if draw(st.booleans()):
        gib = draw(st.integers(min_value=1, max_value=64))
        limits["memory"] = requests["memory"] = Quantity.parse(f"{gib}Gi")
    if bool(limits) and draw(st.booleans()):
        limits["example.com/dev"] = requests["example.com/dev"] = Quantity(draw(st.integers(1, 8)))
    return Container(draw(_NAMES), requests, limits, "Always" if restartable else None)


_OVERHEADS: st.SearchStrategy[dict[str, Quantity]] = st.sampled_from([{}, {"cpu": Quantity.parse("100m")}])


@st.composite
def _pods(draw: st.DrawFn) -> Pod:
    init = draw(st.lists(_containers(restartable=draw(st.booleans())), max_size=2))
    app = draw(st.lists(_containers(), min_size=1, max_size=3))
    names = [c.name for c in (*init, *app)]
    if len(set(names)) != len(names):
        app = [Container(f"{c.name}-{i}", c.requests, c.limits) for i, c in enumerate(app)]
        init = [
            Container(f"i{i}-{c.name}", c.requests, c.limits, c.restart_policy) for i, c in enumerate(init)
        ]
    return Pod(
        name=draw(_NAMES),
        namespace=draw(_NAMES),
        uid=str(uuid.UUID(int=draw(st.integers(min_value=0, max_value=2**128 - 1)))),
        containers=tuple(app),
        init_containers=tuple(init),
        overhead=draw(_OVERHEADS),
        runtime_class_name=draw(st.sampled_from([None, "kata"])),
        phase=draw(st.sampled_from(["Pending", "Running", "Succeeded"])),
    )


@settings(max_examples=60, deadline=None)
@given(_pods())
def test_round_trip_property(pod: Pod) -> None:
    assert one(yaml.safe_dump(pod_to_manifest(pod))) == pod


# --- files -----------------------------------------------------------------------------------------------


def test_read_pods_from_file_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(KUBECTL_POD)
    assert read_pods(str(path)) == [one(KUBECTL_POD)]
    monkeypatch.setattr("sys.stdin", io.StringIO(KUBECTL_POD))
    assert read_pods("-") == [one(KUBECTL_POD)]


def test_read_pods_errors_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ManifestError, match=r"absent\.yaml: cannot read: No such file or directory$"):
        read_pods(str(tmp_path / "absent.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(minimal("  containers: [{name: c, resources: {limits: {cpu: lots}}}]\n"))
    with pytest.raises(ManifestError, match=rf'^{bad}: pod "web" \(document 1\): spec\.containers\[0\]'):
        read_pods(str(bad))
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: Pod\n"))
    with pytest.raises(ManifestError, match=r"^<stdin>: pod \(document 1\): apiVersion: Required value"):
        read_pods("-")


def test_scheduler_metadata_is_read_and_written_back() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {koordinator.sh/qosClass: LSR}\n"
        "  annotations: {a: 1}\nspec:\n  priority: 9000\n  nodeName: node-a\n  containers: [{name: c}]\n"
    )
    parsed = one(text)
    assert dict(parsed.labels) == {"koordinator.sh/qosClass": "LSR"}
    assert dict(parsed.annotations) == {"a": "1"}  # a YAML number is the string Go would read
    assert (parsed.priority, parsed.node_name) == (9000, "node-a")
    assert pod_from_manifest(pod_to_manifest(parsed)) == parsed
    with pytest.raises(ManifestError, match=r"spec.priority: expected an integer, got a string"):
        one(text.replace("priority: 9000", "priority: high"))
    with pytest.raises(ManifestError, match=r"spec.priority: must be a 32-bit integer, got 2147483648"):
        one(text.replace("priority: 9000", "priority: 2147483648"))
    assert one(text.replace("priority: 9000", "priority: 2147483647")).priority == 2147483647
    with pytest.raises(ManifestError, match=r"metadata.labels: expected a mapping"):
        one(text.replace("labels: {koordinator.sh/qosClass: LSR}", "labels: [x]"))
