"""KubeletConfiguration: a real node's file loads unchanged; defaults and validation are the kubelet's."""

from __future__ import annotations

import pytest

from kubeletemu.config import ConfigError, KubeletConfiguration, parse_config
from kubeletemu.config.kubelet_config import DEFAULT_EVICTION_HARD
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.quantity import Quantity

C = "config.yaml: "
HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

# What kubeadm writes to /var/lib/kubelet/config.yaml, tuned for a NUMA worker.
KUBEADM_NODE = """\
apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: unix:///var/run/containerd/containerd.sock
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
cpuManagerReconcilePeriod: 0s
evictionHard:
  memory.available: 500Mi
  nodefs.available: 10%
evictionPressureTransitionPeriod: 0s
featureGates:
  CPUManagerPolicyAlphaOptions: true
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
kubeReserved:
  cpu: 500m
  memory: 1Gi
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
  verbosity: 0
maxPods: 250
memoryManagerPolicy: Static
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
podPidsLimit: 4096
reservedMemory:
- numaNode: 0
  limits:
    memory: 1124Mi
- numaNode: 1
  limits:
    memory: 1Gi
    hugepages-1Gi: 2Gi
reservedSystemCPUs: 0,1,32,33
resolvConf: /run/systemd/resolve/resolv.conf
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
systemReserved:
  memory: 600Mi
topologyManagerPolicy: single-numa-node
topologyManagerPolicyOptions:
  prefer-closest-numa-nodes: "true"
topologyManagerScope: pod
volumeStatsAggPeriod: 0s
"""


def kubelet(body: str) -> KubeletConfiguration:
    return parse_config(HEADER + body, "config.yaml").kubelet


def test_a_real_node_config_loads_unchanged() -> None:
    config = parse_config(KUBEADM_NODE, "/var/lib/kubelet/config.yaml").kubelet
    assert config.topology_manager_policy == "single-numa-node"
    assert config.topology_manager_scope == "pod"
    assert config.topology_manager_policy_options == {"prefer-closest-numa-nodes": "true"}
    assert config.cpu_manager_policy == "static"
    assert config.cpu_manager_policy_options == {"full-pcpus-only": "true"}
    assert config.reserved_system_cpus == CPUSet.of(0, 1, 32, 33)
    assert config.memory_manager_policy == "Static"
    assert [(r.numa_node, dict(r.limits)) for r in config.reserved_memory] == [
        (0, {"memory": Quantity.parse("1124Mi")}),
        (1, {"memory": Quantity.parse("1Gi"), "hugepages-1Gi": Quantity.parse("2Gi")}),
    ]
    assert config.system_reserved == {"memory": Quantity.parse("600Mi")}
    assert config.kube_reserved == {"cpu": Quantity.parse("500m"), "memory": Quantity.parse("1Gi")}
    assert config.eviction_hard == {"memory.available": "500Mi", "nodefs.available": "10%"}
    assert config.max_pods == 250
    assert config.feature_gates == {"CPUManagerPolicyAlphaOptions": True}


def test_defaults() -> None:
    config = kubelet("")
    assert config == KubeletConfiguration()
    assert config.topology_manager_policy == "none"
    assert config.topology_manager_scope == "container"
    assert config.cpu_manager_policy == "none"
    assert config.memory_manager_policy == "None"
    assert config.max_pods == 110
    assert config.reserved_system_cpus == CPUSet()
    assert config.reserved_memory == ()
    assert dict(config.eviction_hard) == {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
    }


def test_empty_strings_and_zero_take_the_defaults() -> None:
    """``SetDefaults_KubeletConfiguration`` defaults zero values: ``""`` policies, ``maxPods: 0``."""
    config = kubelet('topologyManagerPolicy: ""\ncpuManagerPolicy: ""\nmaxPods: 0\nreservedSystemCPUs: ""\n')
    assert config == KubeletConfiguration()


def test_eviction_hard_replaces_the_defaults_unless_merged() -> None:
    assert dict(kubelet("evictionHard: {memory.available: 1Gi}\n").eviction_hard) == {
        "memory.available": "1Gi"
    }
    assert dict(kubelet("evictionHard: {}\n").eviction_hard) == {}
    merged = kubelet("evictionHard: {memory.available: 1Gi}\nmergeDefaultEvictionSettings: true\n")
    assert dict(merged.eviction_hard) == {**DEFAULT_EVICTION_HARD, "memory.available": "1Gi"}
    assert merged.merge_default_eviction_settings is True


def test_yaml_scalars_become_strings_like_sigs_yaml() -> None:
    config = kubelet(
        "systemReserved: {cpu: 1, memory: 1.5}\n"
        "cpuManagerPolicyOptions: {full-pcpus-only: true}\n"
        "reservedSystemCPUs: 3\n"
    )
    assert config.system_reserved == {"cpu": Quantity.parse("1"), "memory": Quantity.parse("1.5")}
    assert config.cpu_manager_policy_options == {"full-pcpus-only": "true"}
    assert config.reserved_system_cpus == CPUSet.of(3)


def test_reserved_system_cpus_take_over_the_cpu_reservation() -> None:
    config = kubelet(
        "reservedSystemCPUs: 0-3\n"
        "systemReserved: {cpu: 500m, memory: 1Gi}\n"
        "kubeReserved: {cpu: 1, memory: 2Gi}\n"
    )
    assert config.effective_system_reserved == {"cpu": Quantity.parse("4"), "memory": Quantity.parse("1Gi")}
    assert config.effective_kube_reserved == {"memory": Quantity.parse("2Gi")}
    plain = kubelet("systemReserved: {cpu: 500m}\n")
    assert plain.effective_system_reserved == plain.system_reserved


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            "topologyManagerPolicy: strict\n",
            C + "topologyManagerPolicy: invalid configuration: topologyManagerPolicy "
            '(--topology-manager-policy) "strict" must be one of: ["none" "best-effort" "restricted" '
            '"single-numa-node"]',
            id="topology_policy",
        ),
        pytest.param(
            "topologyManagerScope: node\n",
            C + "topologyManagerScope: invalid configuration: topologyManagerScope "
            '(--topology-manager-scope) "node" must be one of: "container", or "pod"',
            id="topology_scope",
        ),
        pytest.param(
            "cpuManagerPolicy: Static\n",
            C + 'cpuManagerPolicy: unknown policy: "Static"',
            id="cpu_policy",
        ),
        pytest.param(
            "memoryManagerPolicy: static\n",
            C + 'memoryManagerPolicy: unknown policy: "static"',
            id="memory_policy",
        ),
        pytest.param(
            "maxPods: -1\n",
            C + "maxPods: invalid configuration: maxPods (--max-pods) -1 must not be a negative number",
            id="max_pods_negative",
        ),
        pytest.param(
            "maxPods: many\n", "config.yaml: maxPods: expected an integer, got a string", id="max_pods_type"
        ),
        pytest.param(
            "reservedSystemCPUs: 3-1\n",
            C + "reservedSystemCPUs: invalid configuration: unable to parse reservedSystemCPUs "
            '(--reserved-cpus) 3-1, error: invalid range "3-1" (3 > 1)',
            id="reserved_cpus_range",
        ),
        pytest.param(
            "reservedSystemCPUs: 0,x\n",
            C + "reservedSystemCPUs: invalid configuration: unable to parse reservedSystemCPUs "
            '(--reserved-cpus) 0,x, error: strconv.Atoi: parsing "x": invalid syntax',
            id="reserved_cpus_syntax",
        ),
        pytest.param(
            "reservedSystemCPUs: 0-1\nkubeReservedCgroup: /kube\n",
            C + "reservedSystemCPUs: invalid configuration: can't use reservedSystemCPUs "
            "(--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup "
            "(--kube-reserved-cgroup)",
            id="reserved_cpus_with_cgroup",
        ),
        pytest.param(
            "systemReserved: {hugepages-2Mi: 2Mi}\n",
            C + 'systemReserved[hugepages-2Mi]: cannot reserve "hugepages-2Mi" resource',
            id="reserve_unsupported",
        ),
        pytest.param(
            "kubeReserved: {memory: -1Gi}\n",
            C + 'kubeReserved[memory]: resource quantity for "memory" cannot be negative: -1Gi',
            id="reserve_negative",
        ),
        pytest.param(
            "kubeReserved: {memory: lots}\n",
            C + 'kubeReserved[memory]: failed to parse quantity "lots" for "memory" resource: '
            "quantities must match the regular expression",
            id="reserve_quantity",
        ),
        pytest.param(
            "reservedMemory: [{numaNode: 0, limits: {cpu: 1}}]\n",
            C + 'reservedMemory[0].limits[cpu]: invalid configuration: the limit type "cpu" for NUMA '
            "node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted",
            id="reserved_memory_type",
        ),
        pytest.param(
            "reservedMemory: [{numaNode: 1, limits: {memory: 0}}]\n",
            C + "reservedMemory[0].limits[memory]: invalid configuration: reserved memory may not be "
            'zero for NUMA node 1 and resource "memory"',
            id="reserved_memory_zero",
        ),
        pytest.param(
            "reservedMemory:\n- {numaNode: 0, limits: {memory: 1Gi}}\n"
            "- {numaNode: 0, limits: {memory: 1Gi}}\n",
            C + "reservedMemory[1].limits[memory]: invalid configuration: the reserved memory has a "
            'duplicate value for NUMA node 0 and resource "memory"',
            id="reserved_memory_duplicate",
        ),
        pytest.param(
            "reservedMemory: [{limits: {memory: 1Gi}}]\n",
            C + "reservedMemory[0].numaNode: required",
            id="reserved_memory_node_missing",
        ),
        pytest.param(
            "reservedMemory: {numaNode: 0}\n",
            C + "reservedMemory: expected a list, got a mapping",
            id="reserved_memory_type_error",
        ),
        pytest.param(
            "evictionHard: {memory.free: 1Gi}\n",
            C + "evictionHard[memory.free]: unsupported eviction signal memory.free",
            id="eviction_signal",
        ),
        pytest.param(
            "evictionHard: {memory.available: 0}\n",
            C + "evictionHard[memory.available]: eviction threshold memory.available must be positive: 0",
            id="eviction_zero",
        ),
        pytest.param(
            "evictionHard: {nodefs.available: 120%}\n",
            C + "evictionHard[nodefs.available]: eviction percentage threshold nodefs.available must "
            "be <= 100%: 120%",
            id="eviction_percent_high",
        ),
        pytest.param(
            "evictionHard: {nodefs.available: -5%}\n",
            C + "evictionHard[nodefs.available]: eviction percentage threshold nodefs.available must "
            "be >= 0%: -5%",
            id="eviction_percent_negative",
        ),
        pytest.param(
            "evictionHard: {nodefs.available: ten%}\n",
            C + 'evictionHard[nodefs.available]: strconv.ParseFloat: parsing "ten": invalid syntax',
            id="eviction_percent_syntax",
        ),
        pytest.param(
            "featureGates: {CPUManagerPolicyAlphaOptions: yes please}\n",
            C + "featureGates[CPUManagerPolicyAlphaOptions]: expected true or false, got a string",
            id="feature_gate_value",
        ),
        pytest.param(
            "mergeDefaultEvictionSettings: 1\n",
            C + "mergeDefaultEvictionSettings: expected true or false, got an integer",
            id="merge_flag_type",
        ),
        pytest.param(
            "topologyManagerPolicyOptions: [prefer-closest-numa-nodes]\n",
            C + "topologyManagerPolicyOptions: expected a mapping, got a list",
            id="options_type",
        ),
    ],
)
def test_validation(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        kubelet(body)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("value", ["0%", "100%", "5.5%", "1Gi", "500Mi"])
def test_eviction_values_the_kubelet_accepts(value: str) -> None:
    assert kubelet(f"evictionHard: {{memory.available: {value!r}}}\n").eviction_hard == {
        "memory.available": value
    }
